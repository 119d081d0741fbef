package load

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// This file holds what the drivers of money-moving POSTs (Transfers,
// Refunds) share: requests under an Idempotency-Key, resent until a final
// answer, some replayed once after a 201.

// newClient is the HTTP client of a load: at most maxConns connections.
func newClient(maxConns int) *http.Client {
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		MaxConnsPerHost: maxConns, MaxIdleConnsPerHost: maxConns, IdleConnTimeout: 30 * time.Second,
	}}
}

// copySent returns a copy of every request of sent, by Idempotency-Key.
func copySent[T any](sent map[string]*T) map[string]T {
	out := make(map[string]T, len(sent))
	for k, s := range sent {
		out[k] = *s
	}
	return out
}

// failureKey names an answer that was not final: its HTTP status, or the
// class of its transport error.
func failureKey(status int, err error) string {
	if err != nil {
		return "transport: " + errorClass(err)
	}
	return fmt.Sprintf("http %d", status)
}

// backoffWait waits *backoff (then doubles it, up to 1 s); false when ctx
// ended first.
func backoffWait(ctx context.Context, backoff *time.Duration) bool {
	select {
	case <-ctx.Done():
		return false
	case <-time.After(*backoff):
	}
	*backoff = min(2**backoff, time.Second)
	return true
}

// keyedStep is the bookkeeping of one step of keyed requests.
type keyedStep struct {
	mu         sync.Mutex
	refused    map[string]int64
	errors     map[string]int64
	keys       []string
	retryUntil time.Time

	skipped, requests, created, resent, replays, mismatches atomic.Int64
}

// newKeyedStep starts the bookkeeping of a step whose requests without a
// final answer are resent until retryUntil.
func newKeyedStep(retryUntil time.Time) *keyedStep {
	return &keyedStep{refused: map[string]int64{}, errors: map[string]int64{}, retryUntil: retryUntil}
}

func (st *keyedStep) count(m map[string]int64, key string) {
	st.mu.Lock()
	m[key]++
	st.mu.Unlock()
}

// add notes a request of the step, by Idempotency-Key.
func (st *keyedStep) add(key string) {
	st.mu.Lock()
	st.keys = append(st.keys, key)
	st.mu.Unlock()
}

// tally counts the step's requests with no final answer (status 0, read
// under mu) and copies its refusals and errors.
func (st *keyedStep) tally(mu *sync.Mutex, status func(key string) int) (unanswered int, refused, errors map[string]int64) {
	mu.Lock()
	for _, k := range st.keys {
		if status(k) == 0 {
			unanswered++
		}
	}
	mu.Unlock()
	st.mu.Lock()
	defer st.mu.Unlock()
	return unanswered, maps.Clone(st.refused), maps.Clone(st.errors)
}

// keyedAnswer is what the load reads of every answer of a keyed POST: the
// created resource's id and a refusal's error code.
type keyedAnswer interface {
	answerID() string
	errorCode() string
}

// deliverKeyed posts body with post until it gets a final answer (201 or a
// 4xx other than 409 request_in_progress) or retrying is over; onFinal
// records the final answer. Then, when replay and the answer was a 201, it
// posts body once more: the answer must be the same resource, marked
// X-Idempotent-Replay.
func deliverKeyed[A keyedAnswer](ctx context.Context, st *keyedStep, body []byte, replay bool,
	post func(ctx context.Context, body []byte) (status int, answer A, replayed bool, err error),
	onFinal func(status int, answer A),
) {
	backoff := 100 * time.Millisecond
	var createdID string
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			st.resent.Add(1)
		}
		status, answer, _, err := post(ctx, body)
		st.requests.Add(1)
		final := err == nil && (status == http.StatusCreated ||
			(status/100 == 4 && !(status == http.StatusConflict && answer.errorCode() == "request_in_progress")))
		if final {
			onFinal(status, answer)
			if status != http.StatusCreated {
				st.count(st.refused, fmt.Sprintf("%d %s", status, answer.errorCode()))
				return
			}
			st.created.Add(1)
			createdID = answer.answerID()
			break
		}
		st.count(st.errors, failureKey(status, err))
		if ctx.Err() != nil || time.Now().After(st.retryUntil) || !backoffWait(ctx, &backoff) {
			return
		}
	}
	if !replay {
		return
	}
	st.replays.Add(1)
	status, answer, replayed, err := post(ctx, body)
	st.requests.Add(1)
	if err != nil || status != http.StatusCreated || !replayed || answer.answerID() != createdID {
		st.mismatches.Add(1)
	}
}

// postKeyed posts body to u under the Idempotency-Key key (and bearer's
// token, when not nil), and reads the answer of a 2xx or 4xx into an A.
func postKeyed[A any](ctx context.Context, client *http.Client, u, key string, bearer func() (string, error), body []byte) (status int, answer A, replayed bool, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return 0, answer, false, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	if bearer != nil {
		token, err := bearer()
		if err != nil {
			return 0, answer, false, fmt.Errorf("bearer token: %w", err)
		}
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := client.Do(req)
	if err != nil {
		return 0, answer, false, err
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		return res.StatusCode, answer, false, err
	}
	if res.StatusCode/100 == 2 || res.StatusCode/100 == 4 {
		if err := json.Unmarshal(raw, &answer); err != nil {
			return res.StatusCode, answer, false, fmt.Errorf("decode answer: %w", err)
		}
	}
	return res.StatusCode, answer, res.Header.Get("X-Idempotent-Replay") == "true", nil
}
