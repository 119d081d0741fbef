package payload

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"
)

// Duration is a time.Duration in a Temporal payload. Every duration a
// workflow, activity, signal, memo, heartbeat or Schedule carries is one:
// encoding/json writes a time.Duration as integer nanoseconds
// (1000000000), which the Temporal UI shows as it is.
//
// It is written as WriteDurations says: Go's duration text ("1s",
// time.Duration.String, which time.ParseDuration reads back exactly), or
// integer nanoseconds, as releases before it wrote and the only form they
// read. It reads both, whichever is written: histories recorded with
// integers replay, and runs begun by either form go on.
type Duration time.Duration

// String is d as Go writes a duration ("1m30s").
func (d Duration) String() string { return time.Duration(d).String() }

// MarshalJSON writes d in the process's DurationFormat: "1s" (text), or
// 1000000000 (nanoseconds).
func (d Duration) MarshalJSON() ([]byte, error) {
	if WrittenDurations() == DurationsText {
		return json.Marshal(time.Duration(d).String())
	}
	return strconv.AppendInt(nil, int64(d), 10), nil
}

// UnmarshalJSON reads a duration's text ("1s", as time.ParseDuration
// reads it) or integer nanoseconds (1000000000, what a time.Duration was
// written as). null leaves d as it is, as for any JSON value. A fraction
// of a nanosecond, a number out of int64's range, or text that is no
// duration is an error.
func (d *Duration) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case bytes.Equal(b, []byte("null")):
		return nil
	case len(b) > 0 && b[0] == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return fmt.Errorf("duration: %w", err)
		}
		v, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("duration: %w", err)
		}
		*d = Duration(v)
		return nil
	default:
		n, err := strconv.ParseInt(string(b), 10, 64)
		if err != nil {
			return fmt.Errorf("duration: %s is neither a duration's text (\"1s\") nor integer nanoseconds", b)
		}
		*d = Duration(n)
		return nil
	}
}

// DurationFormat is how Durations are written into payloads
// (TEMPORAL_DURATION_WRITE_FORMAT); both are always read.
type DurationFormat string

const (
	// DurationsNanoseconds: integer nanoseconds, as releases before
	// Duration wrote, and the only form they read: the default of the
	// release that learned to read the text, so that a release before it
	// beside it (an upgrade's step 2, a rollback) can read everything it
	// writes.
	DurationsNanoseconds DurationFormat = "nanoseconds"
	// DurationsText: Go's duration text, "1s": once no release before
	// Duration may read the payloads.
	DurationsText DurationFormat = "text"
)

// ParseDurationFormat reads a TEMPORAL_DURATION_WRITE_FORMAT value.
func ParseDurationFormat(s string) (DurationFormat, error) {
	switch f := DurationFormat(s); f {
	case DurationsNanoseconds, DurationsText:
		return f, nil
	}
	return "", fmt.Errorf("%q is not a duration format: nanoseconds (the default: what releases before the text form read) or text (\"1s\")", s)
}

// writesText is the process's format: false is DurationsNanoseconds.
var writesText atomic.Bool

// WriteDurations makes every Duration this process writes from now on
// take format f, and returns the format it replaces. It is process-wide
// because encoding/json gives MarshalJSON no context: pixd sets it once
// at start, before its Temporal client writes anything; a test that
// changes it puts the previous one back.
func WriteDurations(f DurationFormat) (previous DurationFormat) {
	if writesText.Swap(f == DurationsText) {
		return DurationsText
	}
	return DurationsNanoseconds
}

// WrittenDurations is the format Durations are written in now.
func WrittenDurations() DurationFormat {
	if writesText.Load() {
		return DurationsText
	}
	return DurationsNanoseconds
}
