package api_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/pixbank/pix/api"
	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/db/dbtest"
	"github.com/pixbank/pix/internal/auth"
	"github.com/pixbank/pix/saga/refund"
)

const reattackAdminToken = "reattack-admin-token-0123456789abcdef"

func reattackGet(t *testing.T, url, tok string) (int, map[string]any, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+tok)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(raw, &m), "%s", raw)
	return res.StatusCode, m, string(raw)
}

// A PIX credited to acc-a through its Pix key, whose txid names a charge of
// another account (acc-b): acc-a must not learn that the txid is someone
// else's charge (it reads "unknown_charge"); the operator sees the truth.
func TestReattackOtherAccountChargeOutcomeHidden(t *testing.T) {
	ctx := context.Background()
	pool, err := db.Open(ctx, dbtest.URL(t), 4)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	store := db.NewStore(pool)

	const e2e = "E1234567820261201000000000REATK1" // E + 31 letters or digits
	require.Len(t, e2e, 32)
	const txid = "cobOfAccountB0000000000000001"
	for _, q := range []string{
		`INSERT INTO accounts (id, owner_name, balance_cents) VALUES ('acc-a', 'A', 1500), ('acc-b', 'B', 0)`,
		`INSERT INTO pix_charges (txid, account_id, amount_expected_cents) VALUES ('` + txid + `', 'acc-b', 500)`,
		`INSERT INTO inbox_messages (end_to_end_id, account_id, amount_cents, payload, status, attempts, processed_at,
		                            dispatch_due_at, source, pix_key, txid)
		 VALUES ('` + e2e + `', 'acc-a', 500, '{}', 'done', 1, now(), NULL, 'api_pix', 'maria@example.com', '` + txid + `')`,
		`INSERT INTO pix_credits (end_to_end_id, account_id, amount_cents, balance_after_cents, charge_txid, charge_outcome)
		 VALUES ('` + e2e + `', 'acc-a', 500, 1500, '` + txid + `', 'other_account')`,
	} {
		_, err := pool.Exec(ctx, q)
		require.NoError(t, err, q)
	}

	tc, err := client.NewLazyClient(client.Options{HostPort: "127.0.0.1:1"})
	require.NoError(t, err)
	t.Cleanup(tc.Close)
	router, err := api.NewRouter(api.Deps{
		Stores: api.StoresOf(store), Temporal: tc, TemporalNamespace: "default", TemporalUIURL: "http://ui",
		RequestTimeout: 5 * time.Second, Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)),
		AdminToken: reattackAdminToken,
		// One customer token, for acc-a, read scope only.
		Tokens: fakeTokens{"tok-acc-a": {Subject: "s", Scopes: []string{auth.ScopeRead}, Accounts: []string{"acc-a"}}},
		Keys:   db.KeyPolicy{LockFor: 30 * time.Second, KeepFor: 24 * time.Hour},
		Sagas:  sagasOf(nil, refund.NewStore(store), nil),
	}, api.AllRoutes)
	require.NoError(t, err)
	srv := httptest.NewServer(router)
	t.Cleanup(srv.Close)

	// The customer: its own credit, the charge's outcome masked.
	status, body, raw := reattackGet(t, srv.URL+"/pix/credits/"+e2e, "tok-acc-a")
	require.Equal(t, http.StatusOK, status, raw)
	charge, ok := body["charge"].(map[string]any)
	require.True(t, ok, "charge missing: %s", raw)
	require.Equal(t, "unknown_charge", charge["outcome"], raw)
	require.NotContains(t, raw, "other_account")
	require.NotContains(t, raw, "acc-b")
	require.Nil(t, body["last_error"], raw)

	// The operator: the real outcome.
	status, body, raw = reattackGet(t, srv.URL+"/admin/pix/credits/"+e2e, reattackAdminToken)
	require.Equal(t, http.StatusOK, status, raw)
	charge, ok = body["charge"].(map[string]any)
	require.True(t, ok, "charge missing: %s", raw)
	require.Equal(t, "other_account", charge["outcome"], raw)

	// The customer's token is no operator's.
	status, _, raw = reattackGet(t, srv.URL+"/admin/pix/credits/"+e2e, "tok-acc-a")
	require.Equal(t, http.StatusForbidden, status, raw)
}
