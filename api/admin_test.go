package api_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/db/dbtest"
)

func TestAdminFailedListRetryAndReconcile(t *testing.T) {
	ctx := context.Background()
	store := dbtest.New(t)
	srv := newServer(t, store)
	dbtest.OpenAccount(t, store, "acc-1", 1_000)
	for i, id := range []string{"E1234567820261129120000000000011", "E1234567820261129120000000000012", "E1234567820261129120000000000013"} {
		account := "acc-late"
		if i == 2 {
			account = "acc-other"
		}
		body := `{"end_to_end_id":"` + id + `","account_id":"` + account + `","amount_cents":100}`
		require.Equal(t, http.StatusAccepted, do(t, http.MethodPost, srv.URL+"/webhooks/pix", "application/json", body).status)
		_, err := store.MarkFailed(ctx, id, 1, 5, "AccountNotFound: account not found: "+account)
		require.NoError(t, err)
	}

	r := do(t, http.MethodGet, srv.URL+"/admin/pix/credits?status=failed&account_id=acc-late", "", "")
	require.Equal(t, http.StatusOK, r.status, "%v", r.body)
	failed := r.body["pix"].([]any)
	require.Len(t, failed, 2)
	require.Equal(t, "AccountNotFound: account not found: acc-late", failed[0].(map[string]any)["last_error"])
	require.Len(t, do(t, http.MethodGet, srv.URL+"/admin/pix/credits?status=failed", "", "").body["pix"].([]any), 3)
	require.Equal(t, http.StatusBadRequest, do(t, http.MethodGet, srv.URL+"/admin/pix/credits?status=done", "", "").status)

	r = do(t, http.MethodPost, srv.URL+"/admin/accounts/acc-late/pix/credits/retry", "", "")
	require.Equal(t, http.StatusAccepted, r.status)
	require.Len(t, r.body["redriven"].([]any), 2)
	require.Len(t, do(t, http.MethodGet, srv.URL+"/admin/pix/credits?status=failed", "", "").body["pix"].([]any), 1)

	r = do(t, http.MethodGet, srv.URL+"/admin/reconcile", "", "")
	require.Equal(t, http.StatusOK, r.status)
	require.Equal(t, true, r.body["balanced"], "%v", r.body)

	// A deliberately corrupted balance is reported, not fixed.
	_, err := store.Pool().Exec(ctx, `UPDATE accounts SET balance_cents = balance_cents + 1 WHERE id = 'acc-1'`)
	require.NoError(t, err)
	r = do(t, http.MethodGet, srv.URL+"/admin/reconcile", "", "")
	require.Equal(t, false, r.body["balanced"])
	require.Equal(t, []any{"acc-1"}, r.body["report"].(map[string]any)["unbalanced_accounts"])
	require.EqualValues(t, 1_001, dbtest.Balance(t, store, "acc-1"), "reconcile never fixes money")

	require.Equal(t, http.StatusUnauthorized, doWith(t, http.DefaultClient, http.MethodGet, srv.URL+"/admin/reconcile", http.Header{}, "").status)
}
