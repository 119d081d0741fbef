package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"regexp"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/gin-gonic/gin"

	"github.com/pixbank/pix/internal/pix"
)

// MaxWebhookBytes is the largest webhook body accepted.
const MaxWebhookBytes = 64 << 10

// webhookBody is the native webhook as sent. Fields are raw so that each can
// be checked for its JSON type and named in the error; fields we don't know
// are tolerated and kept in the stored payload.
type webhookBody struct {
	EndToEndID  json.RawMessage `json:"end_to_end_id"`
	AccountID   json.RawMessage `json:"account_id"`
	AmountCents json.RawMessage `json:"amount_cents"`
	Payer       json.RawMessage `json:"payer"`
	OccurredAt  json.RawMessage `json:"occurred_at"`
}

type payer struct {
	Name     *string `json:"name"`
	Document *string `json:"document"`
	ISPB     *string `json:"ispb"`
}

var (
	integerPattern = regexp.MustCompile(`^-?[0-9]+$`)
	ispbPattern    = regexp.MustCompile(`^[0-9]{8}$`)
)

// readJSONBody reads a JSON request body of at most limit bytes, refusing
// another content type (415) and a larger body (413).
func readJSONBody(c *gin.Context, limit int64) ([]byte, error) {
	mediaType, _, err := mime.ParseMediaType(c.GetHeader("Content-Type"))
	if err != nil || mediaType != "application/json" {
		return nil, &requestError{http.StatusUnsupportedMediaType, CodeUnsupportedMediaType, "Content-Type must be application/json"}
	}
	body, err := io.ReadAll(http.MaxBytesReader(c.Writer, c.Request.Body, limit))
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return nil, &requestError{http.StatusRequestEntityTooLarge, CodePayloadTooLarge, fmt.Sprintf("body is larger than %d bytes", limit)}
	}
	if err != nil {
		return nil, pix.Invalid("body", "could not be read: %v", err)
	}
	return body, nil
}

// decodeNotification validates a native webhook body.
func decodeNotification(body []byte) (pix.Notification, error) {
	var b webhookBody
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&b); err != nil {
		return pix.Notification{}, pix.Invalid("body", "must be a JSON object: %v", err)
	}
	if dec.More() {
		return pix.Notification{}, pix.Invalid("body", "must hold exactly one JSON object")
	}
	// PostgreSQL's jsonb can't hold a NUL character; refuse it here rather
	// than fail on insert.
	if bytes.Contains(body, []byte(`\u0000`)) {
		return pix.Notification{}, pix.Invalid("body", "must not contain the NUL character (\\u0000)")
	}
	var n pix.Notification
	var err error
	if n.EndToEndID, err = requiredString(b.EndToEndID, "end_to_end_id"); err != nil {
		return pix.Notification{}, err
	}
	if !pix.ValidEndToEndID(n.EndToEndID) {
		return pix.Notification{}, pix.Invalid("end_to_end_id", "must be 32 letters or digits starting with E")
	}
	if n.AccountID, err = requiredString(b.AccountID, "account_id"); err != nil {
		return pix.Notification{}, err
	}
	if l := utf8.RuneCountInString(n.AccountID); l < 1 || l > pix.MaxAccountIDLength {
		return pix.Notification{}, pix.Invalid("account_id", "must be 1 to %d characters", pix.MaxAccountIDLength)
	}
	if n.AmountCents, err = amountCents(b.AmountCents); err != nil {
		return pix.Notification{}, err
	}
	if err := checkPayer(b.Payer); err != nil {
		return pix.Notification{}, err
	}
	if present(b.OccurredAt) {
		var s string
		if json.Unmarshal(b.OccurredAt, &s) != nil {
			return pix.Notification{}, pix.Invalid("occurred_at", "must be an RFC 3339 timestamp string")
		}
		if _, err := time.Parse(time.RFC3339, s); err != nil {
			return pix.Notification{}, pix.Invalid("occurred_at", "must be an RFC 3339 timestamp such as 2026-11-29T12:00:00Z")
		}
	}
	n.Payload = body
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
	var p payer
	if err := json.Unmarshal(raw, &p); err != nil {
		return pix.Invalid("payer", "must be an object with string fields name, document and ispb")
	}
	if p.ISPB != nil && !ispbPattern.MatchString(*p.ISPB) {
		return pix.Invalid("payer.ispb", "must be 8 digits")
	}
	return nil
}
