package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/internal/cli"
	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/internal/tooling/devauth"
	"github.com/pixbank/pix/internal/tooling/pspsim"
)

// The refund commands and the demo's devolução against a running service
// (the API and the worker on a real Temporal server and a real database),
// whose PSP is the simulator, notifying the API Pix webhook route: each
// devolução is debited, then returned by its saga, or reversed when the
// PSP does not make it; the books balance.
func TestRefundsAgainstTheService(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const token = "pixctl-test-admin-token"
	issuer := newDevIssuer(t)
	base, store, pspURL := runServiceWithSimulator(t, token, issuer)

	_, err := store.CreateAccount(ctx, db.NewAccount{ID: demoRefundAccount, OwnerName: "Maria", OpeningBalanceCents: 100_000})
	require.NoError(t, err)
	_, err = store.CreatePixKey(ctx, db.NewPixKey{Key: demoRefundPixKey, KeyType: "email", AccountID: demoRefundAccount})
	require.NoError(t, err)
	dev, err := openDevTokens(envOf(issuer))
	require.NoError(t, err)
	c := &apiClient{base: base, adminToken: token, dev: dev}
	psp := &apiClient{base: pspURL}

	// The demo's devolução: the PIX through the simulator's webhook, 50
	// returned, 160 more refused, the saga ends it returned.
	var out bytes.Buffer
	say := func(format string, args ...any) { fmt.Fprintf(&out, format+"\n", args...) }
	run := fmt.Sprintf("%014d", time.Now().UnixMilli()%1e14)
	aggregates, events, err := demoRefund(ctx, c, psp, run, 2*time.Minute, &out, say)
	require.NoError(t, err, out.String())
	require.Equal(t, 3, events)
	e2e, id := aggregates[0], aggregates[1]
	s := out.String()
	require.Contains(t, s, "the simulator delivers it, as its webhook, to POST /webhooks/api-pix/pix")
	require.NotContains(t, s, "the demo delivers it itself")
	require.Contains(t, s, "-> 422 refund_exceeds_credit (nothing debited)")
	requireRow(t, s, "status", "returned")
	requireRow(t, s, "workflow", "pix-refund:"+id)
	require.Regexp(t, `(?m)^temporal_ui +http://.*pix-refund%3A`+id, s)
	require.Regexp(t, `(?m)^rtr_id +D99999999\w{23}$`, s)
	var notice *string
	require.NoError(t, store.Pool().QueryRow(ctx, `SELECT psp_notice FROM pix_refunds WHERE id = $1`, id).Scan(&notice))
	t.Logf("the PSP's notice of the devolução, as the webhook brought it: %v", deref(notice))

	// pixctl refund: the rest of the PIX (150), account looked up.
	getenv := envOf(issuer, "PIX_API_URL", base, "ADMIN_TOKEN", token)
	r := pixctl(t, getenv, "refund", "-e2e", e2e, "-amount", "15000", "-reason", "o resto")
	r.requireStatus(t, cli.ExitOK)
	requireRow(t, r.stdout, "status", "debited")
	requireRow(t, r.stdout, "balance_after", brl(100_000+20_000-5_000-15_000))
	second := regexp.MustCompile(`(?m)^refund +(\w+)$`).FindStringSubmatch(r.stdout)[1]
	r = pixctl(t, getenv, "refund-status", second, "-account", demoRefundAccount, "-wait", "30s")
	r.requireStatus(t, cli.ExitOK)
	requireRow(t, r.stdout, "status", "returned")
	// Nothing is left of the PIX to return.
	r = pixctl(t, getenv, "refund", "-e2e", e2e, "-amount", "1")
	r.requireStatus(t, cli.ExitProblem)
	require.Contains(t, r.stderr, "422 refund_exceeds_credit")

	// A PIX whose devolução the PSP refuses: reversed, the money back.
	other := demoID(run, 7)
	status, err := psp.call(ctx, http.MethodPut, "/refund-behaviors/"+other,
		map[string]any{"mode": "reject", "reason": "conta do pagador encerrada"}, nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusNoContent, status)
	_, err = store.Receive(ctx, pix.Notification{EndToEndID: other, AccountID: demoRefundAccount, AmountCents: 3_000, Payload: []byte(`{}`)})
	require.NoError(t, err)
	waitStatus(t, store, other, pix.StatusDone)
	r = pixctl(t, getenv, "refund", "-e2e", other, "-amount", "1000", "-account", demoRefundAccount)
	r.requireStatus(t, cli.ExitOK)
	third := regexp.MustCompile(`(?m)^refund +(\w+)$`).FindStringSubmatch(r.stdout)[1]
	r = pixctl(t, getenv, "refund-status", "-account", demoRefundAccount, "-wait", "30s", third)
	r.requireStatus(t, cli.ExitOK)
	requireRow(t, r.stdout, "status", "reversed")
	requireRow(t, r.stdout, "failure_reason", "conta do pagador encerrada")

	// pixctl show: each PIX's refunds, and what they hold of its credit.
	r = pixctl(t, getenv, "show", e2e)
	r.requireStatus(t, cli.ExitOK)
	requireRow(t, r.stdout, "refunded", "R$ 200,00 of R$ 200,00 in 2 refund(s)")
	require.Regexp(t, id+`\s+R\$ 50,00\s+returned\s`, r.stdout)
	require.Regexp(t, second+`\s+R\$ 150,00\s+returned\s.*o resto\s+pix-refund:`+second, r.stdout)
	r = pixctl(t, getenv, "show", other)
	r.requireStatus(t, cli.ExitOK)
	requireRow(t, r.stdout, "refunded", "R$ 0,00 of R$ 30,00 in 1 refund(s)")
	require.Regexp(t, third+`\s+R\$ 10,00\s+reversed\s.*\(not made: conta do pagador encerrada\)`, r.stdout)

	// The books: 1000 + 200 - 50 - 150 + 30 (- 10 + 10).
	var a account
	_, err = c.as(demoRefundAccount).call(ctx, http.MethodGet, "/accounts/"+demoRefundAccount, nil, &a)
	require.NoError(t, err)
	require.EqualValues(t, 103_000, a.BalanceCents)
	r = pixctl(t, getenv, "reconcile")
	r.requireStatus(t, cli.ExitOK)
	require.Contains(t, r.stdout, "the books balance")
}

// runServiceWithSimulator is runServiceWithPSP whose PSP is the simulator,
// notifying the API Pix webhook route, until the test ends; it returns the
// API's base URL, the store and the simulator's URL. The simulator's
// address is the worker's PSP_URL, and the API's is the simulator's
// webhook: listen first, serve once both are known.
func runServiceWithSimulator(t *testing.T, adminToken string, issuer devauth.Settings) (string, *db.Store, string) {
	t.Helper()
	simLn, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	pspURL := "http://" + simLn.Addr().String()
	base, store := runServiceWithPSP(t, adminToken, issuer, pspURL)
	sim := pspsim.New(pspsim.Options{WebhookURL: base + "/webhooks/api-pix/pix"})
	simCtx, stopSim := context.WithCancel(context.Background())
	simDone := make(chan error, 1)
	go func() { simDone <- sim.Serve(simCtx, simLn) }()
	t.Cleanup(func() { stopSim(); require.NoError(t, <-simDone) })
	return base, store, pspURL
}
