package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/pixbank/pix/api"
	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/db/dbtest"
	"github.com/pixbank/pix/internal/pix"
)

// The operator's commands against the real API over a real database.
func TestOperatorCommands(t *testing.T) {
	ctx := context.Background()
	store := dbtest.New(t)
	tc, err := client.NewLazyClient(client.Options{HostPort: "127.0.0.1:1"})
	require.NoError(t, err)
	t.Cleanup(tc.Close)
	const token = "pixctl-test-admin-token"
	srv := httptest.NewServer(api.NewRouter(api.Deps{Store: store, Temporal: tc, TemporalNamespace: "default", TemporalUIURL: "http://ui",
		RequestTimeout: 5 * time.Second, Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)), AdminToken: token}))
	t.Cleanup(srv.Close)
	c := &apiClient{base: srv.URL, adminToken: token}

	_, err = store.CreateAccount(ctx, db.NewAccount{ID: "acc-1", OwnerName: "Maria", OpeningBalanceCents: 100})
	require.NoError(t, err)
	ok := pix.Notification{EndToEndID: "E1234567820261129120000000000001", AccountID: "acc-1", AmountCents: 250, Payload: []byte(`{}`)}
	lost := pix.Notification{EndToEndID: "E1234567820261129120000000000002", AccountID: "acc-late", AmountCents: 990, Payload: []byte(`{}`)}
	for _, n := range []pix.Notification{ok, lost} {
		_, err := store.Receive(ctx, n)
		require.NoError(t, err)
	}
	_, err = store.Credit(ctx, ok.EndToEndID, 1)
	require.NoError(t, err)
	_, err = store.MarkFailed(ctx, lost.EndToEndID, 5, "AccountNotFound: account not found: acc-late")
	require.NoError(t, err)

	var out bytes.Buffer
	require.NoError(t, show(ctx, c, []string{ok.EndToEndID}, &out))
	require.Contains(t, out.String(), "done")
	require.Contains(t, out.String(), "R$ 2,50")
	require.Contains(t, out.String(), "pix-credit:"+ok.EndToEndID)
	require.ErrorContains(t, show(ctx, c, []string{"E9999999920261129120000000000009"}, &out), "pix_credit_not_found")

	out.Reset()
	require.NoError(t, failed(ctx, c, []string{"-account", "acc-late"}, &out))
	require.Contains(t, out.String(), lost.EndToEndID)
	require.Contains(t, out.String(), "AccountNotFound: account not found: acc-late")

	out.Reset()
	require.NoError(t, retry(ctx, c, []string{"-all-failed", "-account", "acc-late"}, &out))
	require.Contains(t, out.String(), "re-driven: "+lost.EndToEndID)
	cr, err := store.GetCredit(ctx, lost.EndToEndID)
	require.NoError(t, err)
	require.Equal(t, pix.StatusPending, cr.Status)
	require.ErrorContains(t, retry(ctx, c, []string{lost.EndToEndID}, &out), "pix_credit_not_failed")

	out.Reset()
	require.NoError(t, reconcile(ctx, c, &out))
	require.Contains(t, out.String(), "the books balance")
	_, err = store.Pool().Exec(ctx, `UPDATE accounts SET balance_cents = 1 WHERE id = 'acc-1'`)
	require.NoError(t, err)
	out.Reset()
	require.ErrorContains(t, reconcile(ctx, c, &out), "do not balance")
	require.Contains(t, out.String(), "UNBALANCED accounts: [acc-1]")

	wrong := &apiClient{base: srv.URL, adminToken: "wrong-token-wrong-token"}
	require.ErrorContains(t, reconcile(ctx, wrong, &out), "unauthorized")
}
