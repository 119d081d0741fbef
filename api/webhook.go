package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"regexp"
	"strconv"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/pixbank/pix/internal/pix"
)

// MaxWebhookBytes is the largest native webhook body accepted.
const MaxWebhookBytes = 64 << 10

var (
	integerPattern = regexp.MustCompile(`^-?[0-9]+$`)
)

// readBody reads a request body of at most limit bytes (413 beyond).
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	body, err := readAll(http.MaxBytesReader(w, r.Body, limit), r.ContentLength, limit)
	if err == nil {
		return body, nil
	}
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return nil, &requestError{http.StatusRequestEntityTooLarge, CodePayloadTooLarge, fmt.Sprintf("body is larger than %d bytes", limit)}
	}
	// The cause (a timeout, a reset) names our own socket: kept for
	// errors.Is, never told.
	return nil, fmt.Errorf("%w: %w", errBodyUnreadable, err)
}

// readAll is io.ReadAll with a first buffer of the size the request
// declares (Content-Length, when it is within limit): a body is read into
// one allocation instead of io.ReadAll's growing from 512 bytes. The
// buffer is the body's own (it becomes the stored payload), never reused.
// A declared length is not taken on trust beyond maxPresizedBody: a caller
// not yet authenticated could otherwise make us hold limit bytes per
// connection for a few sent.
func readAll(r io.Reader, contentLength, limit int64) ([]byte, error) {
	size := int64(512)
	if contentLength >= 0 && contentLength <= min(limit, maxPresizedBody) {
		// One byte more, for the read that finds the end.
		size = contentLength + 1
	}
	b := make([]byte, 0, size)
	for {
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err != nil {
			if err == io.EOF {
				err = nil
			}
			return b, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)] // grow, as io.ReadAll does
		}
	}
}

// maxPresizedBody bounds readAll's first buffer: as much as the server's
// own buffers of a connection, and more than a webhook of a few PIX needs.
const maxPresizedBody = 4 << 10

// errBodyUnreadable: the connection failed or timed out before the whole
// body arrived.
var errBodyUnreadable = &requestError{http.StatusBadRequest, CodeInvalidRequest, "body: could not be read completely (timed out or cut off); nothing was stored"}

// requireJSON refuses a content type other than application/json (415).
func requireJSON(r *http.Request) error {
	contentType := r.Header["Content-Type"]
	if len(contentType) > 0 && contentType[0] == "application/json" {
		return nil // what mime.ParseMediaType would find, without its map
	}
	mediaType, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mediaType != "application/json" {
		return &requestError{http.StatusUnsupportedMediaType, CodeUnsupportedMediaType, "Content-Type must be application/json"}
	}
	return nil
}

// decodeNotification validates a native webhook body. Members are read by
// exact key; members we don't know are tolerated and kept in the stored
// payload. A body the fast path takes is decoded in one pass; any other
// is decided, and refused with its reason, by decodeNotificationSlow.
func decodeNotification(body []byte) (pix.Notification, error) {
	if n, ok := decodeNotificationFast(body); ok {
		return n, nil
	}
	return decodeNotificationSlow(body)
}

// decodeNotificationFast is decodeNotification in one pass over the body
// (jsonscan.go), for a body that holds every rule; ok is false for any
// other, which decodeNotificationSlow then judges.
func decodeNotificationFast(body []byte) (n pix.Notification, ok bool) {
	var m jsonMembers
	if !scanBody(body, &m) {
		return pix.Notification{}, false
	}
	n = pix.Notification{Source: pix.SourceNative, Payload: body}
	if n.EndToEndID, ok = fastString(m.get("end_to_end_id")); !ok || !pix.ValidEndToEndID(n.EndToEndID) {
		return pix.Notification{}, false
	}
	if n.AccountID, ok = fastString(m.get("account_id")); !ok {
		return pix.Notification{}, false
	}
	if l := utf8.RuneCountInString(n.AccountID); l < 1 || l > pix.MaxAccountIDLength || hasControl(n.AccountID) {
		return pix.Notification{}, false
	}
	if n.AmountCents, ok = fastAmountCents(m.get("amount_cents")); !ok {
		return pix.Notification{}, false
	}
	if payer := m.get("payer"); !isNull(payer) {
		var pm jsonMembers
		if payer[0] != '{' {
			return pix.Notification{}, false
		}
		if _, ok := scanObject(payer, 0, 2, &pm); !ok {
			return pix.Notification{}, false
		}
		for _, field := range [...]string{"name", "document"} {
			if v := pm.get(field); !isNull(v) && v[0] != '"' {
				return pix.Notification{}, false
			}
		}
		if v := pm.get("ispb"); !isNull(v) {
			if s, ok := fastString(v); !ok || !pix.ValidISPB(s) {
				return pix.Notification{}, false
			}
		}
	}
	if v := m.get("occurred_at"); !isNull(v) {
		s, ok := fastString(v)
		if !ok {
			return pix.Notification{}, false
		}
		if _, err := time.Parse(time.RFC3339, s); err != nil {
			return pix.Notification{}, false
		}
	}
	return n, true
}

// fastAmountCents is amountCents for a value it accepts: a JSON integer
// from 1 to pix.MaxAmountCents.
func fastAmountCents(raw []byte) (int64, bool) {
	// MaxAmountCents has 12 digits; JSON has no leading zeros.
	if len(raw) == 0 || len(raw) > 12 {
		return 0, false
	}
	return digitsCents(raw, -1)
}

// digitsCents reads digits, all but the byte at skip (a decimal point; -1:
// none), as an amount of centavos, accepted from 1 to pix.MaxAmountCents.
// Its callers bound the length, so that it can't overflow.
func digitsCents[T string | []byte](digits T, skip int) (int64, bool) {
	var v int64
	for i := 0; i < len(digits); i++ {
		if i == skip {
			continue
		}
		c := digits[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int64(c-'0')
	}
	if v < 1 || v > pix.MaxAmountCents {
		return 0, false
	}
	return v, true
}

// decodeNotificationSlow is the authority on a native webhook body: it
// decides what the fast path left, and says why it refuses.
func decodeNotificationSlow(body []byte) (pix.Notification, error) {
	if err := checkJSON(body); err != nil {
		return pix.Notification{}, err
	}
	m, err := decodeObject(body, "body")
	if err != nil {
		return pix.Notification{}, err
	}
	n := pix.Notification{Source: pix.SourceNative, Payload: body}
	if n.EndToEndID, err = requiredString(m["end_to_end_id"], "end_to_end_id"); err != nil {
		return pix.Notification{}, err
	}
	if !pix.ValidEndToEndID(n.EndToEndID) {
		return pix.Notification{}, pix.Invalid("end_to_end_id", "must be 32 letters or digits starting with E")
	}
	if n.AccountID, err = requiredString(m["account_id"], "account_id"); err != nil {
		return pix.Notification{}, err
	}
	if l := utf8.RuneCountInString(n.AccountID); l < 1 || l > pix.MaxAccountIDLength || hasControl(n.AccountID) {
		return pix.Notification{}, pix.Invalid("account_id", "must be 1 to %d characters, none of them a control character", pix.MaxAccountIDLength)
	}
	if n.AmountCents, err = amountCents(m["amount_cents"]); err != nil {
		return pix.Notification{}, err
	}
	if err := checkPayer(m["payer"]); err != nil {
		return pix.Notification{}, err
	}
	if present(m["occurred_at"]) {
		if _, err := timestamp(m["occurred_at"], "occurred_at"); err != nil {
			return pix.Notification{}, err
		}
	}
	return n, nil
}

// present reports whether a raw field was sent with a non-null value.
func present(raw json.RawMessage) bool {
	return len(raw) > 0 && string(raw) != "null"
}

func requiredString(raw json.RawMessage, field string) (string, error) {
	if !present(raw) {
		return "", pix.Invalid(field, "is required")
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", pix.Invalid(field, "must be a string")
	}
	return s, nil
}

func hasControl(s string) bool {
	for _, r := range s {
		if unicode.IsControl(r) {
			return true
		}
	}
	return false
}

// timestamp reads an RFC 3339 timestamp string.
func timestamp(raw json.RawMessage, field string) (time.Time, error) {
	s, err := requiredString(raw, field)
	if err != nil {
		return time.Time{}, err
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, pix.Invalid(field, "must be an RFC 3339 timestamp such as 2026-11-29T12:00:00.000Z")
	}
	return t, nil
}

// amountCents accepts only a JSON integer: no fraction, no exponent, no string.
func amountCents(raw json.RawMessage) (int64, error) {
	if !present(raw) {
		return 0, pix.Invalid("amount_cents", "is required")
	}
	if !integerPattern.Match(raw) {
		return 0, pix.Invalid("amount_cents", "must be an integer number of centavos")
	}
	v, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil || v < 1 || v > pix.MaxAmountCents {
		return 0, pix.Invalid("amount_cents", "must be from 1 to %d", pix.MaxAmountCents)
	}
	return v, nil
}

func checkPayer(raw json.RawMessage) error {
	if !present(raw) {
		return nil
	}
	m, err := decodeObject(raw, "payer")
	if err != nil {
		return err
	}
	for _, field := range []string{"name", "document", "ispb"} {
		if present(m[field]) {
			if _, err := requiredString(m[field], "payer."+field); err != nil {
				return err
			}
		}
	}
	if present(m["ispb"]) {
		if s, _ := requiredString(m["ispb"], "payer.ispb"); !pix.ValidISPB(s) {
			return pix.Invalid("payer.ispb", "must be 8 digits")
		}
	}
	return nil
}
