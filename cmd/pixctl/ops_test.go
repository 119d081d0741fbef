package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"

	"github.com/pixbank/pix/cmd/pixd/app"
	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/db/dbtest"
	"github.com/pixbank/pix/internal/config"
	"github.com/pixbank/pix/internal/logging"
	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/internal/tooling/devauth"
	"github.com/pixbank/pix/internal/tooling/temporaltest"
)

// runService runs the API and the worker on a Temporal dev server of the
// test's own and a database of its own, until the test ends; it returns
// the API's base URL and the service's store. The customer routes require
// tokens of the development issuer issuer.
func runService(t *testing.T, adminToken string, issuer devauth.Settings) (string, *db.Store) {
	t.Helper()
	return runServiceWithPSP(t, adminToken, issuer, "")
}

// runServiceWithPSP is runService whose worker calls the PSP at pspURL
// ("": the default, PSP_URL's).
func runServiceWithPSP(t *testing.T, adminToken string, issuer devauth.Settings, pspURL string) (string, *db.Store) {
	t.Helper()
	cfg := config.Default()
	if pspURL != "" {
		cfg.PSPURL = pspURL
	}
	cfg.DatabaseURL = dbtest.URL(t)
	cfg.TemporalAddress = temporaltest.StartT(t).Address
	cfg.AdminToken = adminToken
	cfg.AuthIssuer, cfg.AuthAudience, cfg.AuthJWKSFile = issuer.Issuer, issuer.Audience, issuer.JWKSFile()
	cfg.WebhookSignaturesRequired = false // the test stores its PIX through the store
	cfg.InboxAttemptsMax = 1
	cfg.DispatchPollInterval = 100 * time.Millisecond
	cfg.ShutdownReadyzDelay = 0
	cfg.OutboxRelayEnabled = false
	a, err := app.New(context.Background(), cfg, logging.New(io.Discard, "error"))
	require.NoError(t, err)
	require.NoError(t, a.Migrate(context.Background()))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	var g errgroup.Group
	g.Go(func() error { return a.ServeAPI(ctx, ln) })
	g.Go(func() error { return a.RunWorker(ctx) })
	t.Cleanup(func() {
		cancel()
		require.NoError(t, g.Wait())
		a.Close()
	})
	return "http://" + ln.Addr().String(), a.Store
}

// waitStatus waits until the PIX's inbox row reaches want.
func waitStatus(t *testing.T, store *db.Store, id, want string) {
	t.Helper()
	require.Eventually(t, func() bool {
		c, err := store.GetCredit(context.Background(), id)
		require.NoError(t, err)
		return c.Status == want
	}, 30*time.Second, 50*time.Millisecond, "PIX %s never became %s", id, want)
}

// The operator's commands against a running service: the API and the
// worker on a real Temporal server and a real database.
func TestOperatorCommands(t *testing.T) {
	ctx := context.Background()
	const token = "pixctl-test-admin-token"
	base, store := runService(t, token, newDevIssuer(t))
	c := &apiClient{base: base, adminToken: token}

	_, err := store.CreateAccount(ctx, db.NewAccount{ID: "acc-1", OwnerName: "Maria", OpeningBalanceCents: 100})
	require.NoError(t, err)
	ok := pix.Notification{EndToEndID: "E1234567820261129120000000000001", AccountID: "acc-1", AmountCents: 250, Payload: []byte(`{}`)}
	lost := pix.Notification{EndToEndID: "E1234567820261129120000000000002", AccountID: "acc-late", AmountCents: 990, Payload: []byte(`{}`)}
	for _, n := range []pix.Notification{ok, lost} {
		_, err := store.Receive(ctx, n)
		require.NoError(t, err)
	}
	waitStatus(t, store, ok.EndToEndID, pix.StatusDone)
	waitStatus(t, store, lost.EndToEndID, pix.StatusFailed)

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
	// The row is failed just before its run closes.
	showsWorkflow := func(id, status string) {
		require.Eventually(t, func() bool {
			out.Reset()
			require.NoError(t, show(ctx, c, []string{id}, &out))
			return regexp.MustCompile(`workflow_status\s+` + status).Match(out.Bytes())
		}, 10*time.Second, 100*time.Millisecond, "show never reported the run %s", status)
	}
	showsWorkflow(lost.EndToEndID, "Failed")

	// The account is opened; the operator re-drives; the worker credits.
	_, err = store.CreateAccount(ctx, db.NewAccount{ID: "acc-late", OwnerName: "João"})
	require.NoError(t, err)
	out.Reset()
	require.NoError(t, retry(ctx, c, []string{"-all-failed", "-account", "acc-late"}, &out))
	require.Contains(t, out.String(), "re-driven: "+lost.EndToEndID)
	waitStatus(t, store, lost.EndToEndID, pix.StatusDone)
	require.ErrorContains(t, retry(ctx, c, []string{lost.EndToEndID}, &out), "pix_credit_not_failed")
	showsWorkflow(lost.EndToEndID, "Completed")

	out.Reset()
	require.NoError(t, reconcile(ctx, c, &out))
	require.Contains(t, out.String(), "the books balance")
	_, err = store.Pool().Exec(ctx, `UPDATE accounts SET balance_cents = 1 WHERE id = 'acc-1'`)
	require.NoError(t, err)
	out.Reset()
	require.ErrorContains(t, reconcile(ctx, c, &out), "do not balance")
	require.Contains(t, out.String(), "UNBALANCED accounts: [acc-1]")

	wrong := &apiClient{base: base, adminToken: "wrong-token-wrong-token"}
	require.ErrorContains(t, reconcile(ctx, wrong, &out), "unauthorized")
}
