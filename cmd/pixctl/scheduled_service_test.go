package main

import (
	"context"
	"net/http"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/internal/cli"
	reconcilesaga "github.com/pixbank/pix/saga/reconcile"
)

// A scheduled PIX against the running service (the API and the worker on
// a real Temporal server and a real database, the simulator as the PSP):
// one for today runs at once, debits once and hands its transfer to the
// transfer saga, which the PSP settles; one for tomorrow is cancelled with
// pixctl, debiting nothing; a cancel of the one that ran is refused.
func TestScheduledPixAgainstTheService(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const token = "pixctl-test-admin-token"
	issuer := newDevIssuer(t)
	base, store, _ := runServiceWithSimulator(t, token, issuer)

	const account = "acc-scheduled"
	_, err := store.CreateAccount(ctx, db.NewAccount{ID: account, OwnerName: "Maria", OpeningBalanceCents: 50_000})
	require.NoError(t, err)
	dev, err := openDevTokens(envOf(issuer))
	require.NoError(t, err)
	c := (&apiClient{base: base, adminToken: token, dev: dev}).as(account)
	saoPaulo, err := time.LoadLocation("America/Sao_Paulo")
	require.NoError(t, err)
	today := time.Now().In(saoPaulo)
	schedule := func(date string) scheduledPix {
		var s scheduledPix
		status, _, err := c.callWith(ctx, http.MethodPost, "/pix/scheduled", http.Header{"Idempotency-Key": {newKey()}},
			map[string]any{"account_id": account, "amount_cents": 15_000, "pix_key": "joao@example.com", "scheduled_for": date}, &s)
		require.NoError(t, err)
		require.Equal(t, http.StatusCreated, status)
		require.Equal(t, "scheduled", s.Status)
		return s
	}
	getenv := envOf(issuer, "PIX_API_URL", base, "ADMIN_TOKEN", token)

	// For today (its hour, 0:00 in São Paulo, has passed): it runs at once.
	now := schedule(today.Format(time.DateOnly))
	var ran scheduledPix
	require.Eventually(t, func() bool {
		_, err := c.read(ctx, "/pix/scheduled/"+now.ID, "show", &ran)
		return err == nil && ran.Status != "scheduled"
	}, 2*time.Minute, 100*time.Millisecond, "the scheduled PIX for today runs") // a bound on a hang: 9.9 s alone, over 30 s once at a full cold run's load
	require.Equal(t, "executed", ran.Status)
	require.NotNil(t, ran.TransferID)
	var transfer struct {
		Status     string `json:"status"`
		EndToEndID string `json:"end_to_end_id"`
	}
	require.Eventually(t, func() bool {
		_, err := c.read(ctx, "/pix/transfers/"+*ran.TransferID, "transfer", &transfer)
		return err == nil && transfer.Status == "settled"
	}, 30*time.Second, 100*time.Millisecond, "the transfer saga sends it and the PSP settles it")
	require.Equal(t, *ran.EndToEndID, transfer.EndToEndID)

	r := pixctl(t, getenv, "scheduled", "show", "-account", account, now.ID)
	r.requireStatus(t, cli.ExitOK)
	require.Regexp(t, regexp.MustCompile(`executed\s+`+*ran.TransferID), r.stdout)
	r = pixctl(t, getenv, "scheduled", "cancel", "-account", account, now.ID)
	r.requireStatus(t, cli.ExitProblem)
	require.Contains(t, r.stderr, "409 scheduled_pix_already_ran")

	// For tomorrow: cancelled before it runs, nothing debited.
	later := schedule(today.AddDate(0, 0, 1).Format(time.DateOnly))
	r = pixctl(t, getenv, "scheduled", "cancel", "-account", account, later.ID)
	r.requireStatus(t, cli.ExitOK)
	require.Contains(t, r.stdout, "cancelled")
	r = pixctl(t, getenv, "scheduled", "cancel", "-account", account, later.ID)
	r.requireStatus(t, cli.ExitOK)
	r = pixctl(t, getenv, "scheduled", "list", "-account", account, "-o", "json")
	r.requireStatus(t, cli.ExitOK)
	require.Contains(t, r.stdout, now.ID)
	require.Contains(t, r.stdout, later.ID)

	a, err := store.GetAccount(ctx, account)
	require.NoError(t, err)
	require.EqualValues(t, 50_000-15_000, a.BalanceCents, "the one that ran debited once; the cancelled one nothing")
	books, err := reconcilesaga.NewStore(store).Reconcile(ctx)
	require.NoError(t, err)
	require.True(t, books.Balanced(), "%+v", books)
}
