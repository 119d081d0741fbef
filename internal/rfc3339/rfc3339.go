package rfc3339

import (
	"fmt"
	"regexp"
	"strings"
	"time"
)

// dateTimePattern is RFC 3339's date-time (section 5.6), OpenAPI's format
// date-time: "T" and "Z" in either case (its note), the fraction after a
// point, the offset as ±hh:mm.
var dateTimePattern = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-](\d{2}):(\d{2}))$`)

// Parse reads v as RFC 3339's date-time, the specification's
// format date-time (ModifiedAfter, ModifiedBefore, every instant of an
// answer or a notice).
// It is stricter than time.Parse's RFC3339, which also takes a comma
// before the fraction and an offset of 24 hours or more, neither of them
// RFC 3339's; and it takes the lower case "t" and "z" RFC 3339 allows,
// which time.Parse does not. A leap second (:60) is refused: Go's time
// cannot hold it (see doc.go).
func Parse(v string) (time.Time, error) {
	m := dateTimePattern.FindStringSubmatch(v)
	if m == nil || m[3] != "" && (m[3] > "23" || m[4] > "59") {
		return time.Time{}, fmt.Errorf("%q is not a date-time (RFC 3339)", v)
	}
	t, err := time.Parse(time.RFC3339Nano, strings.ToUpper(v))
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is not a date-time (RFC 3339): %w", v, err)
	}
	return t, nil
}
