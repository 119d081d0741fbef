package load

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// fakeTransferAPI answers POST /pix: the first answer for a key is taken
// from script (then 201), and a key that got its 201 is replayed.
type fakeTransferAPI struct {
	mu      sync.Mutex
	script  []int
	calls   map[string]int
	bodies  map[string]string
	created map[string]string
	// lie: answer a replay with another transfer.
	lie bool
}

func (f *fakeTransferAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	key := r.Header.Get("Idempotency-Key")
	b, _ := io.ReadAll(r.Body)
	if prev, ok := f.bodies[key]; ok && prev != string(b) {
		w.WriteHeader(http.StatusUnprocessableEntity)
		_, _ = w.Write([]byte(`{"error":{"code":"idempotency_key_reused"}}`))
		return
	}
	f.bodies[key] = string(b)
	n := f.calls[key]
	f.calls[key]++
	if id, ok := f.created[key]; ok {
		if f.lie {
			id = "another"
		}
		w.Header().Set("X-Idempotent-Replay", "true")
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(map[string]string{"id": id, "end_to_end_id": "E" + id})
		return
	}
	if n < len(f.script) {
		switch f.script[n] {
		case http.StatusConflict:
			w.WriteHeader(http.StatusConflict)
			_, _ = w.Write([]byte(`{"error":{"code":"request_in_progress"}}`))
		case http.StatusUnprocessableEntity:
			w.WriteHeader(http.StatusUnprocessableEntity)
			_, _ = w.Write([]byte(`{"error":{"code":"insufficient_funds"}}`))
		default:
			w.WriteHeader(f.script[n])
		}
		return
	}
	f.created[key] = "t-" + key
	w.WriteHeader(http.StatusCreated)
	_ = json.NewEncoder(w).Encode(map[string]string{"id": "t-" + key, "end_to_end_id": "E" + key})
}

func newFake(script ...int) *fakeTransferAPI {
	return &fakeTransferAPI{script: script, calls: map[string]int{}, bodies: map[string]string{}, created: map[string]string{}}
}

func transfersAgainst(t *testing.T, h http.Handler, replay float64) *Transfers {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	tr, err := NewTransfers(TransferOptions{APIURL: srv.URL, RunID: "RUNID00001", Accounts: 3, Keys: []string{"a", "b"},
		RetryFor: 5 * time.Second, ReplayRatio: replay, Seed: 1})
	require.NoError(t, err)
	t.Cleanup(tr.Close)
	return tr
}

func TestTransfersRetryTheSameKeyUntilAFinalAnswer(t *testing.T) {
	t.Parallel()
	f := newFake(http.StatusServiceUnavailable, http.StatusConflict, http.StatusBadGateway)
	tr := transfersAgainst(t, f, 0)
	s := tr.Send(t.Context(), "k")
	require.Equal(t, http.StatusCreated, s.Status)
	require.Equal(t, "t-"+s.IdempotencyKey, s.TransferID)
	require.Equal(t, 4, f.calls[s.IdempotencyKey], "three non-final answers, then the 201, under one key")
	require.Len(t, f.calls, 1)
	require.Equal(t, map[string]SentTransfer{s.TransferID: s}, tr.CreatedTransfers())
}

func TestTransfersTakeARefusalAsFinal(t *testing.T) {
	t.Parallel()
	f := newFake(http.StatusUnprocessableEntity)
	tr := transfersAgainst(t, f, 0)
	s := tr.Send(t.Context(), "k")
	require.Equal(t, http.StatusUnprocessableEntity, s.Status)
	require.Equal(t, "insufficient_funds", s.Code)
	require.Equal(t, 1, f.calls[s.IdempotencyKey])
	require.Empty(t, tr.CreatedTransfers())
}

func TestTransfersRunTakesKeysInTurnAndChecksReplays(t *testing.T) {
	t.Parallel()
	f := newFake()
	tr := transfersAgainst(t, f, 1)
	step, err := tr.Run(t.Context(), 100, 100*time.Millisecond)
	require.NoError(t, err)
	require.EqualValues(t, 10, step.Arrivals)
	require.EqualValues(t, 10, step.Created)
	require.EqualValues(t, 10, step.Replays)
	require.Zero(t, step.ReplayMismatches)
	require.EqualValues(t, 20, step.Requests)
	perKey := map[string]int{}
	for _, s := range tr.Sent() {
		perKey[s.PixKey]++
		require.LessOrEqual(t, s.AmountCents, int64(2000))
		require.Positive(t, s.AmountCents)
	}
	require.Equal(t, map[string]int{"a": 5, "b": 5}, perKey)

	f.lie = true
	step, err = tr.Run(t.Context(), 100, 50*time.Millisecond)
	require.NoError(t, err)
	require.EqualValues(t, 5, step.ReplayMismatches, "a replay that answers another transfer is caught")
}

func TestTransfersSendTheBearerTokenOfEachRequest(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var seen []string
	f := newFake(http.StatusServiceUnavailable)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Get("Authorization"))
		mu.Unlock()
		f.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	n := 0
	tr, err := NewTransfers(TransferOptions{APIURL: srv.URL, RunID: "RUNID00001", Accounts: 1, Keys: []string{"a"},
		RetryFor: 5 * time.Second, Seed: 1, Bearer: func() (string, error) {
			mu.Lock()
			defer mu.Unlock()
			n++
			return fmt.Sprintf("token-%d", n), nil
		}})
	require.NoError(t, err)
	t.Cleanup(tr.Close)
	s := tr.Send(t.Context(), "k")
	require.Equal(t, http.StatusCreated, s.Status)
	require.Equal(t, []string{"Bearer token-1", "Bearer token-2"}, seen, "the retry asks for the token again: a long load outlives one")

	failing, err := NewTransfers(TransferOptions{APIURL: srv.URL, RunID: "RUNID00001", Accounts: 1, Keys: []string{"a"},
		Seed: 1, Bearer: func() (string, error) { return "", errors.New("no key") }})
	require.NoError(t, err)
	t.Cleanup(failing.Close)
	require.Zero(t, failing.Send(t.Context(), "k").Status, "no request leaves without its token")
	require.Len(t, seen, 2)
}

func TestTransfersSendFromTheAccountAndAmountAsked(t *testing.T) {
	t.Parallel()
	f := newFake()
	tr := transfersAgainst(t, f, 0)
	s := tr.SendFrom(t.Context(), AccountID("RUNID00001", 2), "k", 123_456)
	require.Equal(t, http.StatusCreated, s.Status)
	var body transferBody
	require.NoError(t, json.Unmarshal([]byte(f.bodies[s.IdempotencyKey]), &body))
	require.Equal(t, transferBody{AccountID: AccountID("RUNID00001", 2), AmountCents: 123_456, PixKey: "k"}, body,
		"the account and the amount asked, not drawn (the amount past MaxAmountCents)")
	require.Equal(t, map[string]SentTransfer{s.TransferID: s}, tr.CreatedTransfers())
}
