package api

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/internal/notification"
	"github.com/pixbank/pix/internal/pix"
)

// IdempotentReplayHeader marks an answer replayed from the key.
const IdempotentReplayHeader = "X-Idempotent-Replay"

// releaseKey frees the key after a failure that committed nothing, on a
// context of its own (the request's may be what failed). If even that
// fails, the reservation lapses after IDEMPOTENCY_LOCK_TIMEOUT.
func (h *handlers) releaseKey(ctx context.Context, log *slog.Logger, keys KeyStore, res db.Reservation) {
	releaseCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := keys.ReleaseKey(releaseCtx, res); err != nil {
		log.ErrorContext(ctx, "could not release idempotency key; it lapses with its lock", "idempotency_key", res.Key.String(), "error", err)
	}
}

// idempotencyKey parses the Idempotency-Key header: a UUID.
func idempotencyKey(header string) (uuid.UUID, error) {
	if header == "" {
		return uuid.UUID{}, errIdempotencyKeyRequired
	}
	key, err := uuid.Parse(header)
	if err != nil || len(header) != 36 {
		return uuid.UUID{}, errInvalidIdempotencyKey
	}
	return key, nil
}

// requestHash is the hex SHA-256 of the body's canonical JSON (members
// sorted, no insignificant whitespace: key order and spacing don't make
// another request); a body that isn't JSON is hashed as it is.
func requestHash(body []byte) string {
	canonical := body
	if notification.CheckJSON(body) == nil {
		var v any
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.UseNumber() // numbers keep their text: 15000 stays 15000
		if dec.Decode(&v) == nil {
			if b, err := json.Marshal(v); err == nil {
				canonical = b
			}
		}
	}
	sum := sha256.Sum256(canonical)
	return hex.EncodeToString(sum[:])
}

// DecodeRequest decodes a customer request's body: a JSON object of the
// members fields (what names the request in the refusal of another
// member), each still to be validated.
func DecodeRequest(body []byte, what string, fields ...string) (map[string]json.RawMessage, error) {
	if err := notification.CheckJSON(body); err != nil {
		return nil, err
	}
	m, err := notification.DecodeObject(body, "body")
	if err != nil {
		return nil, err
	}
	for k := range m {
		if !slices.Contains(fields, k) {
			return nil, pix.Invalid(k, "is not a field of a %s (%s)", what, strings.Join(fields, ", "))
		}
	}
	return m, nil
}

// retryAfterSeconds renders a wait for the Retry-After header: whole
// seconds, at least 1.
func retryAfterSeconds(d time.Duration) string {
	return strconv.Itoa(max(1, int(math.Ceil(d.Seconds()))))
}
