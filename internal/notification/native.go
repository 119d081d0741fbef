package notification

import (
	"encoding/json"
	"regexp"
	"strconv"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/pixbank/pix/internal/pix"
)

var integerPattern = regexp.MustCompile(`^-?[0-9]+$`)

// DecodeNative validates a native webhook body. Members are read by
// exact key; members we don't know are tolerated and kept in the stored
// payload. A body the fast path takes is decoded in one pass; any other
// is decided, and refused with its reason, by decodeNotificationSlow.
func DecodeNative(body []byte) (pix.Notification, error) {
	if n, ok := decodeNotificationFast(body); ok {
		return n, nil
	}
	return decodeNotificationSlow(body)
}

// decodeNotificationFast is DecodeNative in one pass over the body
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
	if l := utf8.RuneCountInString(n.AccountID); l < 1 || l > pix.MaxAccountIDLength || HasControlOrInvalid(n.AccountID) {
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

// fastAmountCents is AmountCents for a value it accepts: a JSON integer
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
	if err := CheckJSON(body); err != nil {
		return pix.Notification{}, err
	}
	m, err := DecodeObject(body, "body")
	if err != nil {
		return pix.Notification{}, err
	}
	n := pix.Notification{Source: pix.SourceNative, Payload: body}
	if n.EndToEndID, err = RequiredString(m["end_to_end_id"], "end_to_end_id"); err != nil {
		return pix.Notification{}, err
	}
	if !pix.ValidEndToEndID(n.EndToEndID) {
		return pix.Notification{}, pix.Invalid("end_to_end_id", "must be 32 letters or digits starting with E")
	}
	if n.AccountID, err = RequiredString(m["account_id"], "account_id"); err != nil {
		return pix.Notification{}, err
	}
	if l := utf8.RuneCountInString(n.AccountID); l < 1 || l > pix.MaxAccountIDLength || HasControlOrInvalid(n.AccountID) {
		return pix.Notification{}, pix.Invalid("account_id", "must be 1 to %d characters, none of them a control character or an invalid byte", pix.MaxAccountIDLength)
	}
	if n.AmountCents, err = AmountCents(m["amount_cents"]); err != nil {
		return pix.Notification{}, err
	}
	if err := checkPayer(m["payer"]); err != nil {
		return pix.Notification{}, err
	}
	if Present(m["occurred_at"]) {
		if _, err := Timestamp(m["occurred_at"], "occurred_at"); err != nil {
			return pix.Notification{}, err
		}
	}
	return n, nil
}

// Present reports whether a raw field was sent with a non-null value.
func Present(raw json.RawMessage) bool {
	return len(raw) > 0 && string(raw) != "null"
}

func RequiredString(raw json.RawMessage, field string) (string, error) {
	if !Present(raw) {
		return "", pix.Invalid(field, "is required")
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", pix.Invalid(field, "must be a string")
	}
	return s, nil
}

// HasControlOrInvalid reports whether s holds a control character or
// U+FFFD, which is what the JSON decoder makes of an invalid UTF-8 byte or a
// lone surrogate escape: a money field (an account, a key) must be exactly
// what the PSP sent, never a sanitised stand-in.
func HasControlOrInvalid(s string) bool {
	for _, r := range s {
		if unicode.IsControl(r) || r == utf8.RuneError {
			return true
		}
	}
	return false
}

// Timestamp reads an RFC 3339 timestamp string.
func Timestamp(raw json.RawMessage, field string) (time.Time, error) {
	s, err := RequiredString(raw, field)
	if err != nil {
		return time.Time{}, err
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, pix.Invalid(field, "must be an RFC 3339 timestamp such as 2026-11-29T12:00:00.000Z")
	}
	return t, nil
}

// AmountCents accepts only a JSON integer: no fraction, no exponent, no string.
func AmountCents(raw json.RawMessage) (int64, error) {
	if !Present(raw) {
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
	if !Present(raw) {
		return nil
	}
	m, err := DecodeObject(raw, "payer")
	if err != nil {
		return err
	}
	for _, field := range []string{"name", "document", "ispb"} {
		if Present(m[field]) {
			if _, err := RequiredString(m[field], "payer."+field); err != nil {
				return err
			}
		}
	}
	if Present(m["ispb"]) {
		if s, _ := RequiredString(m["ispb"], "payer.ispb"); !pix.ValidISPB(s) {
			return pix.Invalid("payer.ispb", "must be 8 digits")
		}
	}
	return nil
}
