package api_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/api"
	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/db/dbtest"
	"github.com/pixbank/pix/internal/auth"
)

type pixResponse struct {
	status int
	replay bool
	retry  string
	body   map[string]any
}

func postPix(t *testing.T, url, key, body string) pixResponse {
	t.Helper()
	h := http.Header{"Content-Type": {"application/json"}}
	if key != "" {
		h.Set("Idempotency-Key", key)
	}
	req, err := http.NewRequest(http.MethodPost, url+"/pix", strings.NewReader(body))
	require.NoError(t, err)
	req.Header = h
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	var m map[string]any
	require.NoError(t, json.NewDecoder(res.Body).Decode(&m))
	return pixResponse{res.StatusCode, res.Header.Get(api.IdempotentReplayHeader) == "true", res.Header.Get("Retry-After"), m}
}

func transferBody(t *testing.T, account string, amount int64) string {
	t.Helper()
	b, err := json.Marshal(map[string]any{"account_id": account, "amount_cents": amount, "pix_key": "maria@example.com", "description": "aluguel"})
	require.NoError(t, err)
	return string(b)
}

func TestTransferIsDebitedOnceAndReplayed(t *testing.T) {
	store := dbtest.New(t)
	srv := newServer(t, store)
	dbtest.OpenAccount(t, store, "acc-1", 100_000)
	key := uuid.NewString()
	body := transferBody(t, "acc-1", 15_000)

	first := postPix(t, srv.URL, key, body)
	require.Equal(t, http.StatusCreated, first.status, "%v", first.body)
	require.False(t, first.replay)
	require.Equal(t, "debited", first.body["status"])
	require.EqualValues(t, 85_000, first.body["balance_after_cents"])
	require.Regexp(t, `^E12345678\d{12}[A-Za-z0-9]{11}$`, first.body["end_to_end_id"])
	id := first.body["id"].(string)
	require.Equal(t, "pix-transfer:"+id, first.body["workflow_id"])

	// The lost response's retry, with the members in another order and
	// other spacing: the same request.
	reordered := `{ "pix_key": "maria@example.com", "description": "aluguel",
		"amount_cents": 15000, "account_id": "acc-1" }`
	for _, b := range []string{body, reordered} {
		again := postPix(t, srv.URL, key, b)
		require.Equal(t, http.StatusCreated, again.status)
		require.True(t, again.replay)
		require.Equal(t, first.body, again.body, "the answer of the first execution")
	}
	require.EqualValues(t, 85_000, dbtest.Balance(t, store, "acc-1"), "debited once")

	reused := postPix(t, srv.URL, key, transferBody(t, "acc-1", 15_001))
	require.Equal(t, http.StatusUnprocessableEntity, reused.status)
	require.Equal(t, api.CodeIdempotencyKeyReused, reused.body["error"].(map[string]any)["code"])

	r := do(t, http.MethodGet, srv.URL+"/pix/transfers/"+id, "", "")
	require.Equal(t, http.StatusOK, r.status)
	require.Equal(t, first.body["end_to_end_id"], r.body["end_to_end_id"])
	require.Contains(t, r.body["temporal_ui_url"], "pix-transfer%3A"+id)
	require.Equal(t, http.StatusNotFound, do(t, http.MethodGet, srv.URL+"/pix/transfers/"+uuid.NewString(), "", "").status)
	require.Equal(t, http.StatusBadRequest, do(t, http.MethodGet, srv.URL+"/pix/transfers/42", "", "").status)
}

// invalidTransferBodies are POST /pix bodies refused as invalid_request
// (422, recorded on the key): shared by the PostgreSQL test below and the
// unit tests.
var invalidTransferBodies = []struct{ name, body string }{
	{"amount with a fraction", `{"account_id":"acc-1","amount_cents":1.5,"pix_key":"k"}`},
	{"missing pix_key", `{"account_id":"acc-1","amount_cents":100}`},
	{"unknown member", `{"account_id":"acc-1","amount_cents":100,"pix_key":"k","amount":1}`},
	{"duplicate member", `{"account_id":"acc-1","amount_cents":1,"amount_cents":100,"pix_key":"k"}`},
	{"not json", `account=acc-1`},
}

// badIdempotencyKeys are Idempotency-Key headers POST /pix refuses (400)
// before reading the body, with the code each gets.
var badIdempotencyKeys = []struct{ name, key, code string }{
	{"missing", "", api.CodeIdempotencyKeyNeeded},
	{"not a uuid", "abc", api.CodeInvalidIdempotency},
	{"uuid without dashes", "4f0c2a7e8d5b4c1e9a3f2b6d8e0f1a2c", api.CodeInvalidIdempotency},
}

// requireRefusalReplayed posts body under a new key, asserts the 422 with
// code, and that a retry with the key replays the recorded refusal.
func requireRefusalReplayed(t *testing.T, url, body, code string) {
	t.Helper()
	key := uuid.NewString()
	first := postPix(t, url, key, body)
	require.Equal(t, http.StatusUnprocessableEntity, first.status, "%v", first.body)
	require.Equal(t, code, first.body["error"].(map[string]any)["code"])
	again := postPix(t, url, key, body)
	require.Equal(t, http.StatusUnprocessableEntity, again.status)
	require.True(t, again.replay, "the refusal was recorded on the key")
	require.Equal(t, first.body, again.body)
}

func TestTransferRefusalsAreRecordedAndReplayed(t *testing.T) {
	store := dbtest.New(t)
	srv := newServer(t, store)
	dbtest.OpenAccount(t, store, "acc-1", 1_000)
	cases := []struct {
		name, body, code string
	}{
		{"insufficient funds", transferBody(t, "acc-1", 1_001), api.CodeInsufficientFunds},
		{"unknown account", transferBody(t, "acc-none", 1), api.CodeAccountNotFound},
	}
	for _, b := range invalidTransferBodies {
		cases = append(cases, struct{ name, body, code string }{b.name, b.body, api.CodeInvalidRequest})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { requireRefusalReplayed(t, srv.URL, tc.body, tc.code) })
	}
	// Funds arrive; the refused key still answers its refusal, a new key
	// runs the transfer.
	dbtest.CreditPIX(t, store, dbtest.PIX{AccountID: "acc-1", AmountCents: 4_000})
	require.EqualValues(t, 5_000, dbtest.Balance(t, store, "acc-1"))

	for _, k := range badIdempotencyKeys {
		r := postPix(t, srv.URL, k.key, transferBody(t, "acc-1", 1))
		require.Equal(t, http.StatusBadRequest, r.status, k.name)
		require.Equal(t, k.code, r.body["error"].(map[string]any)["code"], k.name)
	}
	require.EqualValues(t, 5_000, dbtest.Balance(t, store, "acc-1"))
}

func TestConcurrentCopiesDebitOnce(t *testing.T) {
	store := dbtest.New(t)
	srv := newServer(t, store)
	dbtest.OpenAccount(t, store, "acc-1", 1_000_000)
	key := uuid.NewString()
	body := transferBody(t, "acc-1", 15_000)

	var wg sync.WaitGroup
	results := make(chan pixResponse, 50)
	start := make(chan struct{})
	for range 50 {
		wg.Go(func() {
			<-start
			results <- postPix(t, srv.URL, key, body)
		})
	}
	close(start)
	wg.Wait()
	close(results)
	var created, replays, inProgress int
	ids := map[any]bool{}
	for r := range results {
		switch {
		case r.status == http.StatusCreated && !r.replay:
			created++
			ids[r.body["id"]] = true
		case r.status == http.StatusCreated && r.replay:
			replays++
			ids[r.body["id"]] = true
		case r.status == http.StatusConflict:
			inProgress++
			require.Equal(t, api.CodeRequestInProgress, r.body["error"].(map[string]any)["code"])
			require.NotEmpty(t, r.retry, "409 says when to retry")
		default:
			t.Fatalf("unexpected answer %d %v", r.status, r.body)
		}
	}
	require.Equal(t, 1, created, "one execution")
	require.Equal(t, 50, created+replays+inProgress)
	require.Len(t, ids, 1, "every replay names the same transfer")
	require.EqualValues(t, 1_000_000-15_000, dbtest.Balance(t, store, "acc-1"), "one debit")
	t.Logf("50 copies: 1 created, %d replays, %d in progress", replays, inProgress)
}

func TestTechnicalFailureFreesTheKey(t *testing.T) {
	ctx := context.Background()
	store := dbtest.New(t)
	srv := newServer(t, store)
	dbtest.OpenAccount(t, store, "acc-1", 100_000)
	// A fault in the middle of the transfer's transaction.
	_, err := store.Pool().Exec(ctx, `
		CREATE FUNCTION fail_insert() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN RAISE EXCEPTION 'injected disk failure'; END $$;
		CREATE TRIGGER fail_insert BEFORE INSERT ON pix_transfers FOR EACH ROW EXECUTE FUNCTION fail_insert();`)
	require.NoError(t, err)
	key := uuid.NewString()
	body := transferBody(t, "acc-1", 15_000)

	r := postPix(t, srv.URL, key, body)
	require.Equal(t, http.StatusInternalServerError, r.status, "%v", r.body)
	require.EqualValues(t, 100_000, dbtest.Balance(t, store, "acc-1"), "nothing committed")
	var keys int
	require.NoError(t, store.Pool().QueryRow(ctx, `SELECT count(*) FROM idempotency_keys`).Scan(&keys))
	require.Zero(t, keys, "the key was freed")

	_, err = store.Pool().Exec(ctx, `DROP TRIGGER fail_insert ON pix_transfers`)
	require.NoError(t, err)
	r = postPix(t, srv.URL, key, body)
	require.Equal(t, http.StatusCreated, r.status, "the retry runs afresh")
	require.False(t, r.replay)
	require.EqualValues(t, 85_000, dbtest.Balance(t, store, "acc-1"))
}

func TestStaleReservationIsTakenOver(t *testing.T) {
	ctx := context.Background()
	store := dbtest.New(t)
	srv := newServer(t, store)
	dbtest.OpenAccount(t, store, "acc-1", 100_000)
	key := uuid.New()
	body := transferBody(t, "acc-1", 15_000)
	// A holder that reserved the key and died: its lock lapses. The lapse
	// is written, not waited for: a lock of 50 ms lapsed before the first
	// request reached the database at a full run's load (201, not 409).
	sum := sha256.Sum256([]byte(body)) // json.Marshal of a map is canonical already
	_, _, err := store.ReserveKey(ctx, auth.Unauthenticated.Subject, key, hex.EncodeToString(sum[:]), db.KeyPolicy{LockFor: time.Hour, KeepFor: time.Hour})
	require.NoError(t, err)

	r := postPix(t, srv.URL, key.String(), body)
	require.Equal(t, http.StatusConflict, r.status, "still held")
	_, err = store.Pool().Exec(ctx, `UPDATE idempotency_keys SET locked_until = now() - interval '1 second' WHERE key = $1`, key)
	require.NoError(t, err)
	r = postPix(t, srv.URL, key.String(), body)
	require.Equal(t, http.StatusCreated, r.status, "%v", r.body)
	require.EqualValues(t, 85_000, dbtest.Balance(t, store, "acc-1"))
}
