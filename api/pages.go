package api

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/pixbank/pix/internal/pix"
)

// Every list route pages the same way (docs/http-api.md, "Lists"), by
// keyset: the request asks for at most limit rows after a cursor, the
// answer carries its rows and next_cursor, the cursor of the page after,
// null on the last page. A cursor holds only the sort key of the last row
// of its page; the route's own filters (the caller's accounts above all)
// apply to every page, so a cursor names a position, never rows: one made
// by another caller, or for other filters, gives nothing the request would
// not give from the start. Stores read Fetch rows, one more than the page,
// so that the last page says it is the last without a page more.
const (
	// DefaultPageLimit is the page size when the request names none.
	DefaultPageLimit = 100
	// MaxPageLimit is the largest page a request may ask for: a limit
	// above it is refused (400 invalid_request), never clamped, so that a
	// client never takes a short page for the last one.
	MaxPageLimit = 1000
	// maxCursorLength bounds the cursor parameter: a cursor is a sort key
	// of a few dozen bytes.
	maxCursorLength = 512
)

// SortKey is what a list's cursor holds: its sort key, with a unique
// tiebreaker last, as JSON. Valid says whether a decoded key is one the
// list could have made (the cursor is the client's to send, not to make).
type SortKey interface {
	Valid() bool
}

// Page is the page a list request asks for: at most Limit rows, those
// after the row whose sort key is After (nil: from the first).
type Page[K SortKey] struct {
	Limit int
	After *K
}

// Fetch is how many rows the store reads for the page: one more than
// Limit, which tells whether another page follows.
func (p Page[K]) Fetch() int { return p.Limit + 1 }

// PageOf reads the page a list request asks for, from its query: limit (1
// to MaxPageLimit, DefaultPageLimit when absent) and cursor (the
// next_cursor of an earlier answer of the same list). A malformed one is a
// validation error (400 invalid_request) naming the parameter.
func PageOf[K SortKey](c *gin.Context) (Page[K], error) {
	p := Page[K]{Limit: DefaultPageLimit}
	if v, ok := c.GetQuery("limit"); ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > MaxPageLimit {
			return p, pix.Invalid("limit", "must be a whole number from 1 to %d", MaxPageLimit)
		}
		p.Limit = n
	}
	if v, ok := c.GetQuery("cursor"); ok {
		after, err := decodeCursor[K](v)
		if err != nil {
			return p, err
		}
		p.After = &after
	}
	return p, nil
}

// errBadCursor is the answer to a cursor this list did not make.
var errBadCursor = pix.Invalid("cursor", "is not a cursor of this list: send the next_cursor of its last answer as it came, or none for the first page")

// decodeCursor is the sort key a cursor holds. It is refused unless it is
// exactly what encodeCursor makes of a valid key: another list's cursor
// (other members), a cursor edited or cut, or a key the list can't hold.
func decodeCursor[K SortKey](cursor string) (K, error) {
	var key K
	if cursor == "" || len(cursor) > maxCursorLength {
		return key, errBadCursor
	}
	raw, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil {
		return key, errBadCursor
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.DisallowUnknownFields()
	if err := d.Decode(&key); err != nil || d.More() {
		return key, errBadCursor
	}
	// Every member present, in its one form: a cursor is the key's own
	// encoding or nothing.
	again, err := json.Marshal(key)
	if err != nil || !bytes.Equal(again, raw) || !key.Valid() {
		return key, errBadCursor
	}
	return key, nil
}

// encodeCursor is the cursor of the rows after key.
func encodeCursor[K SortKey](key K) (string, error) {
	raw, err := json.Marshal(key)
	if err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(raw), nil
}

// AnswerPage answers a list request: 200 with rows (as read, up to
// p.Fetch()) cut to the page under their member name, and next_cursor,
// the cursor after the page's last row when more rows followed it, else
// null. key is a row's sort key.
func AnswerPage[T any, K SortKey](k Kit, c *gin.Context, member string, p Page[K], rows []T, key func(T) K) {
	var next *string
	if len(rows) > p.Limit {
		rows = rows[:p.Limit]
		cursor, err := encodeCursor(key(rows[len(rows)-1]))
		if err != nil {
			k.Fail(c, fmt.Errorf("encode the next page's cursor: %w", err))
			return
		}
		next = &cursor
	}
	if rows == nil {
		rows = []T{}
	}
	c.JSON(http.StatusOK, gin.H{member: rows, "next_cursor": next})
}
