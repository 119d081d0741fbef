package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/internal/auth"
	"github.com/pixbank/pix/internal/cli"
	"github.com/pixbank/pix/internal/tooling/devauth"
	"github.com/pixbank/pix/internal/tooling/pspsim"
)

// fakeAPI is the part of the PIX API the refund commands and the demo's
// devolução call, in memory: the customer routes check the development
// issuer's tokens (scope and accounts) as the API does, the admin route
// the admin token. A refund is returned on its third read.
type fakeAPI struct {
	verifier   *auth.Verifier
	adminToken string

	mu         sync.Mutex
	credits    map[string]*credit // by end_to_end_id
	refunds    map[string]*refund // by id
	byPIX      map[string][]string
	answers    map[string]fakeAnswer // by the caller's sub and the Idempotency-Key
	reads      map[string]int
	adminCalls int
	posts      []fakePost
	delivered  int // API Pix notifications received
}

type fakeAnswer struct {
	status int
	body   []byte
}

// fakePost is a refund request as the API saw it.
type fakePost struct {
	caller auth.Caller
	key    string
	body   map[string]any
}

func newFakeAPI(t *testing.T, issuer devauth.Settings, adminToken string) (*fakeAPI, *httptest.Server) {
	t.Helper()
	keys, err := auth.NewKeyCache(context.Background(), auth.FileKeys(issuer.JWKSFile()), auth.KeyCacheOptions{})
	require.NoError(t, err)
	f := &fakeAPI{
		verifier: auth.NewVerifier(issuer.Issuer, issuer.Audience, keys, nil), adminToken: adminToken,
		credits: map[string]*credit{}, refunds: map[string]*refund{}, byPIX: map[string][]string{},
		answers: map[string]fakeAnswer{}, reads: map[string]int{},
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /admin/pix/credits/{e2e}", f.getCredit)
	mux.HandleFunc("POST /pix/credits/{e2e}/refunds", f.postRefund)
	mux.HandleFunc("GET /pix/refunds/{id}", f.getRefund)
	mux.HandleFunc("POST /webhooks/api-pix/pix", f.receive)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return f, srv
}

func (f *fakeAPI) credit(e2e, account string, amount int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.credits[e2e] = &credit{EndToEndID: e2e, AccountID: account, AmountCents: amount, Status: "done",
		TemporalUIURL: "http://ui/pix-credit:" + e2e}
}

func writeJSONAnswer(w http.ResponseWriter, status int, v any) []byte {
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
	return b
}

func errorAnswer(code, message string) map[string]any {
	return map[string]any{"error": map[string]string{"code": code, "message": message}}
}

// caller verifies the request's bearer token and its scope, answering 401
// or 403 when it does not do.
func (f *fakeAPI) caller(w http.ResponseWriter, r *http.Request, scope string) (auth.Caller, bool) {
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		writeJSONAnswer(w, http.StatusUnauthorized, errorAnswer("unauthorized", "a bearer token is required"))
		return auth.Caller{}, false
	}
	c, err := f.verifier.Verify(r.Context(), token)
	if err != nil {
		writeJSONAnswer(w, http.StatusUnauthorized, errorAnswer("unauthorized", err.Error()))
		return auth.Caller{}, false
	}
	if !c.HasScope(scope) {
		writeJSONAnswer(w, http.StatusForbidden, errorAnswer("insufficient_scope", scope))
		return auth.Caller{}, false
	}
	return c, true
}

func (f *fakeAPI) getCredit(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "Bearer "+f.adminToken {
		writeJSONAnswer(w, http.StatusUnauthorized, errorAnswer("unauthorized", "admin"))
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.adminCalls++
	cr, ok := f.credits[r.PathValue("e2e")]
	if !ok {
		writeJSONAnswer(w, http.StatusNotFound, errorAnswer("pix_credit_not_found", "no PIX credit with this end_to_end_id"))
		return
	}
	v := map[string]any{"end_to_end_id": cr.EndToEndID, "account_id": cr.AccountID, "amount_cents": cr.AmountCents,
		"status": cr.Status, "source": "api_pix", "workflow_id": "pix-credit:" + cr.EndToEndID, "temporal_ui_url": cr.TemporalUIURL}
	if ids := f.byPIX[cr.EndToEndID]; len(ids) > 0 {
		list := make([]refund, len(ids))
		for i, id := range ids {
			list[i] = *f.refunds[id]
		}
		v["refunds"] = list
	}
	writeJSONAnswer(w, http.StatusOK, v)
}

func (f *fakeAPI) postRefund(w http.ResponseWriter, r *http.Request) {
	c, ok := f.caller(w, r, auth.ScopeWrite)
	if !ok {
		return
	}
	var body map[string]any
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		writeJSONAnswer(w, http.StatusBadRequest, errorAnswer("invalid_request", err.Error()))
		return
	}
	key := r.Header.Get("Idempotency-Key")
	f.mu.Lock()
	defer f.mu.Unlock()
	f.posts = append(f.posts, fakePost{caller: c, key: key, body: body})
	if a, ok := f.answers[c.Subject+"/"+key]; ok {
		w.Header().Set("X-Idempotent-Replay", "true")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(a.status)
		_, _ = w.Write(a.body)
		return
	}
	answer := func(status int, v any) {
		f.answers[c.Subject+"/"+key] = fakeAnswer{status, writeJSONAnswer(w, status, v)}
	}
	e2e := r.PathValue("e2e")
	cr, ok := f.credits[e2e]
	if !ok || !c.MayActFor(cr.AccountID) {
		answer(http.StatusUnprocessableEntity, errorAnswer("pix_not_credited", "no PIX credited to your accounts has this end_to_end_id; nothing was debited"))
		return
	}
	amount := int64(body["amount_cents"].(float64))
	var held int64
	for _, id := range f.byPIX[e2e] {
		if f.refunds[id].Status != "reversed" {
			held += f.refunds[id].AmountCents
		}
	}
	if held+amount > cr.AmountCents {
		answer(http.StatusUnprocessableEntity, errorAnswer("refund_exceeds_credit", "the refunds of this PIX would exceed the amount credited; nothing was debited"))
		return
	}
	id := fmt.Sprintf("%032x", len(f.refunds)+1)
	rf := &refund{ID: id, EndToEndID: e2e, AccountID: cr.AccountID, AmountCents: amount, Status: "debited",
		BalanceAfterCents: 100_000 - amount, CreatedAt: "2026-12-01T10:00:00Z",
		WorkflowID: "pix-refund:" + id, TemporalUIURL: "http://ui/pix-refund:" + id}
	if reason, ok := body["reason"].(string); ok {
		rf.Reason = &reason
	}
	f.refunds[id] = rf
	f.byPIX[e2e] = append(f.byPIX[e2e], id)
	answer(http.StatusCreated, rf)
}

func (f *fakeAPI) getRefund(w http.ResponseWriter, r *http.Request) {
	c, ok := f.caller(w, r, auth.ScopeRead)
	if !ok {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	rf, ok := f.refunds[r.PathValue("id")]
	if !ok || !c.MayActFor(rf.AccountID) {
		writeJSONAnswer(w, http.StatusNotFound, errorAnswer("refund_not_found", "no refund with this id"))
		return
	}
	f.reads[rf.ID]++
	switch f.reads[rf.ID] {
	case 1:
	case 2:
		rf.Status = "requested"
	default:
		rtr, at := "D99999999202612011000abcdefghijk", "2026-12-01T10:00:02Z"
		rf.Status, rf.RtrID, rf.ReturnedAt = "returned", &rtr, &at
	}
	writeJSONAnswer(w, http.StatusOK, rf)
}

// receive is the API Pix webhook: its PIX go to Maria's key, credited at once.
func (f *fakeAPI) receive(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Pix []struct {
			EndToEndID string `json:"endToEndId"`
			Valor      string `json:"valor"`
			Chave      string `json:"chave"`
		} `json:"pix"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil || len(body.Pix) != 1 || body.Pix[0].Chave != demoRefundPixKey {
		writeJSONAnswer(w, http.StatusBadRequest, errorAnswer("invalid_request", fmt.Sprintf("%v %+v", err, body)))
		return
	}
	var reais, cents int64
	_, _ = fmt.Sscanf(body.Pix[0].Valor, "%d.%d", &reais, &cents)
	f.mu.Lock()
	f.delivered++
	f.mu.Unlock()
	f.credit(body.Pix[0].EndToEndID, demoRefundAccount, reais*100+cents)
	writeJSONAnswer(w, http.StatusOK, map[string]any{"pix": []any{map[string]any{"end_to_end_id": body.Pix[0].EndToEndID, "status": "pending"}}})
}

const refundTestPIX = "E1234567820261201100000000000001"

// requireRow checks that out has the row "key  value" of pixctl's
// key-value tables (aligned by a tabwriter).
func requireRow(t *testing.T, out, key, value string) {
	t.Helper()
	require.Regexp(t, `(?m)^`+regexp.QuoteMeta(key)+` {2,}`+regexp.QuoteMeta(value)+`$`, out)
}

func TestRefundCommand(t *testing.T) {
	t.Parallel()
	issuer := newDevIssuer(t)
	f, srv := newFakeAPI(t, issuer, "adm-token")
	f.credit(refundTestPIX, "acc-0001", 20_000)
	getenv := envOf(issuer, "PIX_API_URL", srv.URL, "ADMIN_TOKEN", "adm-token")

	// The account is looked up with the admin view; the request's token is
	// minted for it, with pix:write.
	const key = "5b0f3c8e-6f1d-4a8e-9c2b-1e7d4a6f3b20"
	r := pixctl(t, getenv, "refund", "-e2e", refundTestPIX, "-amount", "5000", "-reason", "cobrado em duplicidade", "-key", key)
	r.requireStatus(t, cli.ExitOK)
	require.Equal(t, 1, f.adminCalls)
	require.Len(t, f.posts, 1)
	require.Equal(t, []string{"acc-0001"}, f.posts[0].caller.Accounts)
	require.Equal(t, []string{auth.ScopeWrite}, f.posts[0].caller.Scopes)
	require.Equal(t, key, f.posts[0].key)
	require.Equal(t, map[string]any{"amount_cents": 5000.0, "reason": "cobrado em duplicidade"}, f.posts[0].body)
	id := fmt.Sprintf("%032x", 1)
	for _, row := range [][2]string{{"refund", id}, {"amount", "R$ 50,00"}, {"status", "debited"}, {"reason", "cobrado em duplicidade"},
		{"workflow", "pix-refund:" + id}, {"temporal_ui", "http://ui/pix-refund:" + id}, {"idempotency_key", key}} {
		requireRow(t, r.stdout, row[0], row[1])
	}
	require.Contains(t, r.stdout, "\nfollow it: pixctl refund-status -account acc-0001 -wait 30s "+id+"\n")
	require.NotContains(t, r.stdout, "replay")

	// The same key again: the first answer, said to be a replay.
	r = pixctl(t, getenv, "refund", "-e2e", refundTestPIX, "-amount", "5000", "-reason", "cobrado em duplicidade", "-key", key, "-account", "acc-0001")
	r.requireStatus(t, cli.ExitOK)
	require.Equal(t, 1, f.adminCalls, "-account names the account: no look-up")
	requireRow(t, r.stdout, "refund", id)
	requireRow(t, r.stdout, "replay", "true: the key's first answer; nothing debited again")
	require.Len(t, f.refunds, 1)

	// Beyond the credit: refused (exit 1), with the API's code; a fresh key
	// each time, printed nowhere since nothing was made.
	r = pixctl(t, getenv, "refund", "-e2e", refundTestPIX, "-amount", "15001")
	r.requireStatus(t, cli.ExitProblem)
	require.Contains(t, r.stderr, "refund "+refundTestPIX+": 422 refund_exceeds_credit")
	require.Empty(t, r.stdout)
	require.NotEqual(t, key, f.posts[len(f.posts)-1].key)
	_, reasonSent := f.posts[len(f.posts)-1].body["reason"]
	require.False(t, reasonSent, "no -reason, no reason member")

	// A PIX the API does not know: the look-up says so.
	r = pixctl(t, getenv, "refund", "-e2e", "E9999999920261201100000000000009", "-amount", "100")
	r.requireStatus(t, cli.ExitProblem)
	require.Contains(t, r.stderr, "404 pix_credit_not_found")
	require.Contains(t, r.stderr, "-account")

	// PIX_TOKEN is sent as it is, with no look-up: one of another account
	// is refused like a PIX never credited.
	lookups := f.adminCalls
	tok := pixctl(t, envOf(issuer), "token", "-account", "acc-0002")
	tok.requireStatus(t, cli.ExitOK)
	r = pixctl(t, envOf(issuer, "PIX_API_URL", srv.URL, "PIX_TOKEN", strings.TrimSpace(tok.stdout)), "refund", "-e2e", refundTestPIX, "-amount", "100")
	r.requireStatus(t, cli.ExitProblem)
	require.Contains(t, r.stderr, "422 pix_not_credited")
	require.Equal(t, lookups, f.adminCalls)

	posts := len(f.posts)
	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{"-amount", "100"}, "-e2e"},
		{[]string{"-e2e", refundTestPIX}, "-amount"},
		{[]string{"-e2e", refundTestPIX, "-amount", "-5"}, "-amount"},
		{[]string{"-e2e", refundTestPIX, "-amount", "100", "extra"}, `unexpected argument "extra"`},
		{[]string{"-e2e", refundTestPIX, "-amount", "ten"}, `invalid value "ten" for flag -amount`},
		{[]string{"-e2e", refundTestPIX, "-amount", "100", "-o", "json"}, "flag provided but not defined: -o"},
	} {
		r := pixctl(t, getenv, append([]string{"refund"}, bad.args...)...)
		r.requireStatus(t, cli.ExitUsage)
		require.Contains(t, r.stderr, bad.want, "%v", bad.args)
		require.Contains(t, r.stderr, "usage: pixctl refund -e2e", "%v: the usage follows", bad.args)
		require.Empty(t, r.stdout)
	}
	require.Len(t, f.posts, posts, "nothing posted on a usage error")
}

func TestRefundStatusCommand(t *testing.T) {
	t.Parallel()
	issuer := newDevIssuer(t)
	f, srv := newFakeAPI(t, issuer, "adm-token")
	f.credit(refundTestPIX, "acc-0001", 20_000)
	getenv := envOf(issuer, "PIX_API_URL", srv.URL, "ADMIN_TOKEN", "adm-token")
	pixctl(t, getenv, "refund", "-e2e", refundTestPIX, "-amount", "1000").requireStatus(t, cli.ExitOK)
	id := fmt.Sprintf("%032x", 1)

	// A minted token needs the account.
	r := pixctl(t, getenv, "refund-status", id)
	r.requireStatus(t, cli.ExitUsage)
	require.Contains(t, r.stderr, "-account: name the refund's account")

	// Once: where it stands now (the flags after the id too).
	r = pixctl(t, getenv, "refund-status", id, "-account", "acc-0001")
	r.requireStatus(t, cli.ExitOK)
	requireRow(t, r.stdout, "status", "debited")
	requireRow(t, r.stdout, "rtr_id", "-")

	// -o json: the API's answer.
	r = pixctl(t, getenv, "refund-status", "-o", "json", "-account", "acc-0001", id)
	r.requireStatus(t, cli.ExitOK)
	var got refund
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &got))
	require.Equal(t, id, got.ID)
	require.Equal(t, "requested", got.Status)
	require.Equal(t, "pix-refund:"+id, got.WorkflowID)

	// -wait: until it is final.
	r = pixctl(t, getenv, "refund-status", "-account", "acc-0001", "-wait", "10s", id)
	r.requireStatus(t, cli.ExitOK)
	requireRow(t, r.stdout, "status", "returned")
	requireRow(t, r.stdout, "rtr_id", "D99999999202612011000abcdefghijk")
	requireRow(t, r.stdout, "workflow", "pix-refund:"+id)

	// Another customer's refund looks missing.
	for _, account := range []string{"acc-0002", "acc-0001"} {
		ref := id
		if account == "acc-0001" {
			ref = "nope"
		}
		r = pixctl(t, getenv, "refund-status", "-account", account, ref)
		r.requireStatus(t, cli.ExitProblem)
		require.Contains(t, r.stderr, "404 refund_not_found")
	}

	for _, args := range [][]string{nil, {"a", "b"}, {"-wait", "-1s", "a"}} {
		r = pixctl(t, getenv, append([]string{"refund-status"}, args...)...)
		r.requireStatus(t, cli.ExitUsage)
		require.Contains(t, r.stderr, "usage: pixctl refund-status", "%v", args)
	}
}

// A refund that does not end within -wait: printed, and the command fails
// (exit 1) naming its saga.
func TestRefundStatusWaitsBounded(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		writeJSONAnswer(w, http.StatusOK, refund{ID: "abc", Status: "requested", TemporalUIURL: "http://ui/pix-refund:abc"})
	}))
	t.Cleanup(srv.Close)
	start := time.Now()
	r := pixctl(t, env("PIX_API_URL", srv.URL, "PIX_TOKEN", "any"), "refund-status", "-wait", "700ms", "abc")
	r.requireStatus(t, cli.ExitProblem)
	require.Contains(t, r.stderr, "refund abc is still requested after 700ms; its saga: http://ui/pix-refund:abc")
	require.Less(t, time.Since(start), 5*time.Second)
	requireRow(t, r.stdout, "status", "requested")
}

// pixctl show prints a PIX's refunds, and what they hold of its credit.
func TestShowPrintsRefunds(t *testing.T) {
	t.Parallel()
	issuer := newDevIssuer(t)
	f, srv := newFakeAPI(t, issuer, "adm-token")
	f.credit(refundTestPIX, "acc-0001", 20_000)
	getenv := envOf(issuer, "PIX_API_URL", srv.URL, "ADMIN_TOKEN", "adm-token")

	r := pixctl(t, getenv, "show", refundTestPIX)
	r.requireStatus(t, cli.ExitOK)
	require.NotContains(t, r.stdout, "refund", "a PIX without refunds shows none")

	for _, amount := range []string{"5000", "1000"} {
		pixctl(t, getenv, "refund", "-e2e", refundTestPIX, "-amount", amount, "-reason", "r"+amount).requireStatus(t, cli.ExitOK)
	}
	f.mu.Lock()
	reversed, why := f.refunds[fmt.Sprintf("%032x", 2)], "conta encerrada"
	reversed.Status, reversed.FailureReason = "reversed", &why
	f.mu.Unlock()

	r = pixctl(t, getenv, "show", refundTestPIX)
	r.requireStatus(t, cli.ExitOK)
	s := r.stdout
	requireRow(t, s, "refunded", "R$ 50,00 of R$ 200,00 in 2 refund(s)")
	require.Contains(t, s, "\nrefunds\nREFUND ")
	require.Regexp(t, fmt.Sprintf(`%032x\s+R\$ 50,00\s+debited\s+2026-12-01T10:00:00Z\s+-\s+r5000\s+pix-refund:%032x`, 1, 1), s)
	require.Regexp(t, fmt.Sprintf(`%032x\s+R\$ 10,00\s+reversed\s+.*r1000 \(not made: conta encerrada\)\s+pix-refund:`, 2), s)
}

// The demo's devolução against a fake API, with the real PSP simulator:
// delivering the PIX through its webhook, or, when it has none, itself.
func TestDemoRefund(t *testing.T) {
	t.Parallel()
	for _, webhook := range []bool{true, false} {
		t.Run(fmt.Sprintf("webhook=%v", webhook), func(t *testing.T) {
			ctx := context.Background()
			issuer := newDevIssuer(t)
			f, srv := newFakeAPI(t, issuer, "adm-token")
			dev, err := openDevTokens(envOf(issuer))
			require.NoError(t, err)
			c := &apiClient{base: srv.URL, adminToken: "adm-token", dev: dev}

			var pspURL string
			if webhook {
				sim := pspsim.New(pspsim.Options{WebhookURL: srv.URL + "/webhooks/api-pix/pix"})
				ln, err := net.Listen("tcp", "127.0.0.1:0")
				require.NoError(t, err)
				sctx, cancel := context.WithCancel(ctx)
				done := make(chan error, 1)
				go func() { done <- sim.Serve(sctx, ln) }()
				t.Cleanup(func() { cancel(); require.NoError(t, <-done) })
				pspURL = "http://" + ln.Addr().String()
			} else {
				simSrv := httptest.NewServer(pspsim.New(pspsim.Options{}).Handler())
				t.Cleanup(simSrv.Close)
				pspURL = simSrv.URL
			}

			var out bytes.Buffer
			say := func(format string, args ...any) { fmt.Fprintf(&out, format+"\n", args...) }
			aggregates, events, err := demoRefund(ctx, c, &apiClient{base: pspURL}, "20261201100000", 10*time.Second, &out, say)
			require.NoError(t, err, out.String())
			s := out.String()
			e2e := demoID("20261201100000", 6)
			id := fmt.Sprintf("%032x", 1)
			require.Equal(t, []string{e2e, id}, aggregates)
			require.Equal(t, 3, events)
			require.Equal(t, 1, f.delivered, "one delivery: the simulator's, or the demo's")
			if webhook {
				require.Contains(t, s, "the simulator delivers it, as its webhook, to POST /webhooks/api-pix/pix")
				require.Contains(t, s, "The PSP's webhook announced the outcome")
				require.NotContains(t, s, "the demo delivers it itself")
			} else {
				require.Contains(t, s, `webhook="disabled"`)
				require.Contains(t, s, "the demo delivers it itself: POST /webhooks/api-pix/pix -> 200")
				require.Contains(t, s, "The saga polled the PSP's record")
			}
			require.Contains(t, s, "-> 201 refund "+id+" status=debited")
			require.Contains(t, s, "-> 422 refund_exceeds_credit (nothing debited)")
			requireRow(t, s, "status", "returned")
			requireRow(t, s, "workflow", "pix-refund:"+id)
			requireRow(t, s, "temporal_ui", "http://ui/pix-refund:"+id)
			require.Len(t, f.posts, 2)
			require.Equal(t, []string{demoRefundAccount}, f.posts[0].caller.Accounts)
			require.EqualValues(t, 5_000, f.posts[0].body["amount_cents"])
			require.EqualValues(t, 16_000, f.posts[1].body["amount_cents"])
			require.EqualValues(t, 20_000, f.credits[e2e].AmountCents)
		})
	}
}

// pixctl reconcile names the PIX refunded beyond their credit and the final
// refunds the PSP's notice contradicts, beside the books' other findings.
func TestReconcilePrintsRefundFindings(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		require.Equal(t, "/admin/reconcile", r.URL.Path)
		writeJSONAnswer(w, http.StatusOK, map[string]any{"balanced": false, "report": map[string]any{
			"unbalanced_accounts": []string{}, "done_without_credit": []string{}, "credit_without_done": []string{},
			"refunds_over_credit": []string{refundTestPIX}, "refund_contradictions": []string{"abc"}}})
	}))
	t.Cleanup(srv.Close)
	r := pixctl(t, env("PIX_API_URL", srv.URL, "ADMIN_TOKEN", "adm"), "reconcile")
	r.requireStatus(t, cli.ExitProblem)
	require.Contains(t, r.stderr, "do not balance")
	require.Contains(t, r.stdout, "PIX refunded or held beyond their credit: ["+refundTestPIX+"]\n")
	require.Contains(t, r.stdout, "final refunds the PSP's notice contradicts: [abc]\n")
}
