package main

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"

	"github.com/pixbank/pix/cmd/pixd/app"
	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/db/dbtest"
	"github.com/pixbank/pix/internal/cli"
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
	a, err := app.New(context.Background(), cfg, logging.New(io.Discard, "error"), app.WithSettings(map[string]string{"MED_DICT_DISABLED": "true"}))
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
	t.Parallel()
	ctx := context.Background()
	const token = "pixctl-test-admin-token"
	base, store := runService(t, token, newDevIssuer(t))
	getenv := envOf(devauth.Settings{KeyDir: filepath.Join(t.TempDir(), "no-issuer")}, "PIX_API_URL", base, "ADMIN_TOKEN", token)

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

	r := pixctl(t, getenv, "show", ok.EndToEndID)
	r.requireStatus(t, cli.ExitOK)
	require.Contains(t, r.stdout, "done")
	require.Contains(t, r.stdout, "R$ 2,50")
	require.Contains(t, r.stdout, "pix-credit:"+ok.EndToEndID)
	r = pixctl(t, getenv, "show", "E9999999920261129120000000000009")
	r.requireStatus(t, cli.ExitProblem)
	require.Contains(t, r.stderr, "pix_credit_not_found")

	// -o json: the API's answer, fields and all.
	r = pixctl(t, getenv, "show", ok.EndToEndID, "-o", "json")
	r.requireStatus(t, cli.ExitOK)
	var shown map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &shown))
	require.Equal(t, ok.EndToEndID, shown["end_to_end_id"])
	require.Equal(t, "done", shown["status"])
	require.EqualValues(t, 250, shown["amount_cents"])
	require.Equal(t, "pix-credit:"+ok.EndToEndID, shown["workflow_id"])

	r = pixctl(t, getenv, "failed", "-account", "acc-late")
	r.requireStatus(t, cli.ExitOK)
	require.Contains(t, r.stdout, lost.EndToEndID)
	require.Contains(t, r.stdout, "AccountNotFound: account not found: acc-late")
	r = pixctl(t, getenv, "failed", "-account", "acc-late", "-o", "json")
	r.requireStatus(t, cli.ExitOK)
	var list struct {
		Pix []map[string]any `json:"pix"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &list))
	require.Len(t, list.Pix, 1)
	require.Equal(t, lost.EndToEndID, list.Pix[0]["end_to_end_id"])
	require.Equal(t, "AccountNotFound: account not found: acc-late", list.Pix[0]["last_error"])
	// The row is failed just before its run closes.
	showsWorkflow := func(id, status string) {
		require.Eventually(t, func() bool {
			r := pixctl(t, getenv, "show", id)
			r.requireStatus(t, cli.ExitOK)
			return regexp.MustCompile(`workflow_status\s+` + status).MatchString(r.stdout)
		}, 10*time.Second, 100*time.Millisecond, "show never reported the run %s", status)
	}
	showsWorkflow(lost.EndToEndID, "Failed")

	// The account is opened; the operator re-drives; the worker credits.
	_, err = store.CreateAccount(ctx, db.NewAccount{ID: "acc-late", OwnerName: "João"})
	require.NoError(t, err)
	r = pixctl(t, getenv, "retry", "-all-failed", "-account", "acc-late")
	r.requireStatus(t, cli.ExitOK)
	require.Contains(t, r.stdout, "re-driven: "+lost.EndToEndID)
	waitStatus(t, store, lost.EndToEndID, pix.StatusDone)
	r = pixctl(t, getenv, "retry", lost.EndToEndID)
	r.requireStatus(t, cli.ExitProblem)
	require.Contains(t, r.stderr, "pix_credit_not_failed")
	showsWorkflow(lost.EndToEndID, "Completed")

	r = pixctl(t, getenv, "reconcile")
	r.requireStatus(t, cli.ExitOK)
	require.Contains(t, r.stdout, "the books balance")
	var report struct {
		Balanced bool `json:"balanced"`
		Report   struct {
			UnbalancedAccounts []string `json:"unbalanced_accounts"`
		} `json:"report"`
	}
	r = pixctl(t, getenv, "reconcile", "-o", "json")
	r.requireStatus(t, cli.ExitOK)
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &report))
	require.True(t, report.Balanced)
	// A fence of the books down is said beside books that balance.
	_, err = store.Pool().Exec(ctx, `ALTER TABLE pix_credits DISABLE TRIGGER pix_credits_append_only`)
	require.NoError(t, err)
	r = pixctl(t, getenv, "reconcile")
	r.requireStatus(t, cli.ExitOK)
	require.Contains(t, r.stdout, "FENCES OF THE BOOKS DOWN: [pix_credits_append_only: disabled")
	require.Contains(t, r.stdout, "the books balance")
	_, err = store.Pool().Exec(ctx, `ALTER TABLE pix_credits ENABLE TRIGGER pix_credits_append_only`)
	require.NoError(t, err)
	_, err = store.Pool().Exec(ctx, `UPDATE accounts SET balance_cents = 1 WHERE id = 'acc-1'`)
	require.NoError(t, err)
	r = pixctl(t, getenv, "reconcile")
	r.requireStatus(t, cli.ExitProblem)
	require.Contains(t, r.stderr, "do not balance")
	require.Contains(t, r.stdout, "UNBALANCED accounts: [acc-1]")
	r = pixctl(t, getenv, "reconcile", "-o", "json")
	r.requireStatus(t, cli.ExitProblem)
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &report))
	require.False(t, report.Balanced)
	require.Equal(t, []string{"acc-1"}, report.Report.UnbalancedAccounts)

	// A token the API refuses: it could not ask (3), not a finding (1).
	r = pixctl(t, getenv, "reconcile", "-admin-token", "wrong-token-wrong-token")
	r.requireStatus(t, cli.ExitUnavailable)
	require.Contains(t, r.stderr, "unauthorized")
}
