package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/api"
	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/internal/auth"
	"github.com/pixbank/pix/internal/pix"
)

// fakeRefunds is the refunds' fake: its refunds and the outcomes it was
// told of, beside the accounts, credits and keys of its fakeStore (guarded
// by its mu).
type fakeRefunds struct {
	fakeKeys
	refunds map[string]pix.Refund
	notices []db.RefundNotice
}

func newFakeRefunds(fs *fakeStore) *fakeRefunds {
	return &fakeRefunds{fakeKeys: fakeKeys{fs}, refunds: map[string]pix.Refund{}}
}

func (fs *fakeRefunds) CreateRefund(_ context.Context, r db.Reservation, nr db.NewRefund, mayRefund func(string) bool,
	render func(pix.Refund) ([]byte, error)) (pix.Refund, error) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if err := fs.call("CreateRefund"); err != nil {
		return pix.Refund{}, err
	}
	c, ok := fs.credits[nr.EndToEndID]
	if !ok || c.AccountID == nil || !mayRefund(*c.AccountID) {
		return pix.Refund{}, pix.ErrPixNotCredited
	}
	var refunded int64
	for _, old := range fs.refunds {
		if old.EndToEndID == nr.EndToEndID && old.Status != pix.RefundReversed {
			refunded += old.AmountCents
		}
	}
	if refunded+nr.AmountCents > c.AmountCents {
		return pix.Refund{}, pix.ErrRefundExceedsCredit
	}
	a := fs.accounts[*c.AccountID]
	if a.BalanceCents < nr.AmountCents {
		return pix.Refund{}, pix.ErrInsufficientFunds
	}
	a.BalanceCents -= nr.AmountCents
	fs.accounts[a.ID] = a
	out := pix.Refund{ID: nr.ID, EndToEndID: nr.EndToEndID, AccountID: a.ID, AmountCents: nr.AmountCents,
		Status: pix.RefundDebited, BalanceAfterCents: a.BalanceCents, CreatedAt: time.Now()}
	if nr.Reason != "" {
		out.Reason = &nr.Reason
	}
	body, err := render(out)
	if err != nil {
		return pix.Refund{}, err
	}
	fs.refunds[out.ID] = out
	fs.record(r, http.StatusCreated, body)
	return out, nil
}

func (fs *fakeRefunds) GetRefund(_ context.Context, id string) (pix.Refund, error) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if err := fs.call("GetRefund"); err != nil {
		return pix.Refund{}, err
	}
	r, ok := fs.refunds[id]
	if !ok {
		return pix.Refund{}, pix.ErrRefundNotFound
	}
	return r, nil
}

// RefundsOf is not recorded in calls: every credit view asks it.
func (fs *fakeRefunds) RefundsOf(_ context.Context, endToEndID string) ([]pix.Refund, error) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fs.fail != nil {
		return nil, fs.fail
	}
	var out []pix.Refund
	for _, r := range fs.refunds {
		if r.EndToEndID == endToEndID {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b pix.Refund) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

func (fs *fakeRefunds) NoteRefundOutcomes(_ context.Context, notices []db.RefundNotice) (db.NotedRefunds, error) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if err := fs.call("NoteRefundOutcomes"); err != nil {
		return db.NotedRefunds{}, err
	}
	fs.notices = append(fs.notices, notices...)
	return db.NotedRefunds{}, nil
}

// noted is the outcomes fs was told of.
func (fs *fakeRefunds) noted() []db.RefundNotice {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return slices.Clone(fs.notices)
}

func (fs *fakeStore) addCredit(id, account string, amount int64) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.credits[id] = pix.Credit{EndToEndID: id, AccountID: &account, AmountCents: amount, Status: pix.StatusDone}
}

func refundURL(base, e2e string) string { return base + "/pix/credits/" + e2e + "/refunds" }

func TestUnitRefundValidationIsRecordedOnTheKey(t *testing.T) {
	fs := newFakeStore()
	fs.addAccount("acc-a", 10_000)
	fs.addCredit(validID, "acc-a", 5_000)
	srv := newUnitServer(t, fs, withTokens)

	for name, body := range map[string]string{
		"no amount":         `{"reason":"x"}`,
		"zero":              `{"amount_cents":0}`,
		"float":             `{"amount_cents":1.5}`,
		"string amount":     `{"amount_cents":"100"}`,
		"unknown member":    `{"amount_cents":100,"amount":1}`,
		"long reason":       `{"amount_cents":100,"reason":"` + strings.Repeat("é", pix.MaxRefundReasonLength+1) + `"}`,
		"control in reason": `{"amount_cents":100,"reason":"a\u0000b"}`,
		"not an object":     `[1]`,
	} {
		t.Run(name, func(t *testing.T) {
			key := uuid.NewString()
			first := attackSend(t, http.MethodPost, refundURL(srv.URL, validID), "tok-a", key, body)
			requireError(t, first, http.StatusUnprocessableEntity, api.CodeInvalidRequest)
			again := attackSend(t, http.MethodPost, refundURL(srv.URL, validID), "tok-a", key, body)
			require.Equal(t, first.raw, again.raw)
			require.Equal(t, "true", again.headers.Get(api.IdempotentReplayHeader), "the refusal is the key's answer")
		})
	}
	bad := attackSend(t, http.MethodPost, refundURL(srv.URL, "E123"), "tok-a", uuid.NewString(), `{"amount_cents":100}`)
	requireError(t, bad, http.StatusUnprocessableEntity, api.CodeInvalidRequest)
	require.NotContains(t, fs.called(), "CreateRefund", "nothing invalid reached the refund")
}

func TestUnitRefundAccessAndRefusals(t *testing.T) {
	fs := newFakeStore()
	fs.addAccount("acc-a", 10_000)
	fs.addAccount("acc-b", 10_000)
	fs.addCredit(validID, "acc-a", 5_000)
	other := "E1234567820261129120000000000009"
	fs.addCredit(other, "acc-b", 5_000)
	srv := newUnitServer(t, fs, withTokens)
	post := func(tok, e2e, body string) attackReply {
		return attackSend(t, http.MethodPost, refundURL(srv.URL, e2e), tok, uuid.NewString(), body)
	}

	requireError(t, post("", validID, `{"amount_cents":1}`), http.StatusUnauthorized, api.CodeUnauthorized)
	requireError(t, post("tok-read", validID, `{"amount_cents":1}`), http.StatusForbidden, api.CodeInsufficientScope)

	// Another customer's PIX and a PIX never credited answer alike.
	missing := post("tok-a", "E1234567820261129120000000000008", `{"amount_cents":1}`)
	foreign := post("tok-a", other, `{"amount_cents":1}`)
	requireError(t, missing, http.StatusUnprocessableEntity, "pix_not_credited")
	require.Equal(t, missing.raw, foreign.raw)

	requireError(t, post("tok-a", validID, `{"amount_cents":5001}`), http.StatusUnprocessableEntity, "refund_exceeds_credit")
	created := post("tok-a", validID, `{"amount_cents":3000,"reason":"devolução"}`)
	require.Equal(t, http.StatusCreated, created.status, created.raw)
	var view map[string]any
	require.NoError(t, json.Unmarshal([]byte(created.raw), &view))
	require.Equal(t, "debited", view["status"])
	require.Equal(t, "pix-refund:"+view["id"].(string), view["workflow_id"])
	requireError(t, post("tok-a", validID, `{"amount_cents":2001}`), http.StatusUnprocessableEntity, "refund_exceeds_credit")

	// The refund reads back for its owner only, and shows in the credit.
	id := view["id"].(string)
	got := attackSend(t, http.MethodGet, srv.URL+"/pix/refunds/"+id, "tok-a", "", "")
	require.Equal(t, http.StatusOK, got.status, got.raw)
	credit := attackSend(t, http.MethodGet, srv.URL+"/pix/credits/"+validID, "tok-a", "", "")
	require.Contains(t, credit.raw, `"refunds":[{"id":"`+id+`"`)
	noRefunds := attackSend(t, http.MethodGet, srv.URL+"/admin/pix/credits/"+validID, "tok-admin", "", "")
	require.Contains(t, noRefunds.raw, `"refunds":`, "operators see them too")

	fs.addCredit("E1234567820261129120000000000007", "acc-a", 1)
	plain := attackSend(t, http.MethodGet, srv.URL+"/pix/credits/E1234567820261129120000000000007", "tok-a", "", "")
	require.NotContains(t, plain.raw, `"refunds"`, "a PIX without refunds answers as before")

	requireError(t, attackSend(t, http.MethodGet, srv.URL+"/pix/refunds/"+strings.Repeat("a", 36), "tok-a", "", ""),
		http.StatusBadRequest, api.CodeInvalidRequest)
	unknown := attackSend(t, http.MethodGet, srv.URL+"/pix/refunds/abc", "tok-a", "", "")
	requireError(t, unknown, http.StatusNotFound, "refund_not_found")
}

// The same key and body on another PIX is another request: refused, never
// replayed as the first PIX's refund.
func TestUnitRefundKeyCoversThePIX(t *testing.T) {
	fs := newFakeStore()
	fs.addAccount("acc-a", 10_000)
	fs.addCredit(validID, "acc-a", 5_000)
	second := "E1234567820261129120000000000002"
	fs.addCredit(second, "acc-a", 5_000)
	srv := newUnitServer(t, fs, withTokens)
	key := uuid.NewString()
	first := attackSend(t, http.MethodPost, refundURL(srv.URL, validID), "tok-a", key, `{"amount_cents":100}`)
	require.Equal(t, http.StatusCreated, first.status, first.raw)
	reused := attackSend(t, http.MethodPost, refundURL(srv.URL, second), "tok-a", key, `{"amount_cents":100}`)
	requireError(t, reused, http.StatusUnprocessableEntity, api.CodeIdempotencyKeyReused)
}

// A webhook's devolucoes with an outcome reach the refunds; one in
// process, or one that can't be read, does not, and never refuses the
// webhook.
func TestUnitWebhookNotesRefundOutcomes(t *testing.T) {
	fs := newFakeStore()
	refunds := newFakeRefunds(fs)
	srv := newUnitServer(t, fs, func(d *api.Deps) { d.Sagas = sagasOf(fakeTransfers{fakeKeys{fs}}, refunds, fakeAdmin{fs}) })
	second := "E1234567820261129120000000000002"
	third := "E1234567820261129120000000000003"
	body := batch(
		apiPixItem(t, validID, map[string]string{"devolucoes": `[{"id":"r1","rtrId":"D12345678202009091000abcde123456","valor":"1.00","status":"DEVOLVIDO"},{"id":"r2","status":"EM_PROCESSAMENTO"}]`}),
		apiPixItem(t, second, map[string]string{"devolucoes": `{"id":"r3","status":"NAO_REALIZADO","motivo":"x"}`}),
		apiPixItem(t, third, map[string]string{"devolucoes": `[{"id":"bad id!","status":"DEVOLVIDO"}, 7]`}),
	)
	r := do(t, http.MethodPost, srv.URL+apiPixPath, "application/json", body)
	require.Equal(t, http.StatusOK, r.status, "%v", r.body)
	require.Equal(t, []string{"ReceiveBatch", "NoteRefundOutcomes"}, fs.called())
	require.Equal(t, []db.RefundNotice{
		{ID: "r1", EndToEndID: validID, Status: "DEVOLVIDO"},
		{ID: "r3", EndToEndID: second, Status: "NAO_REALIZADO"},
	}, refunds.noted())
}

// A caller whose grant no longer covers the account gets, on replaying a
// key, the answer a request about another's PIX gets, not the recorded
// refund (and its balance).
func TestUnitRefundReplayAfterLosingTheAccount(t *testing.T) {
	fs := newFakeStore()
	fs.addAccount("acc-a", 10_000)
	fs.addCredit(validID, "acc-a", 5_000)
	tokens := fakeTokens{
		"before": {Subject: "sub-x", Scopes: []string{auth.ScopeWrite}, Accounts: []string{"acc-a"}},
		"after":  {Subject: "sub-x", Scopes: []string{auth.ScopeWrite}, Accounts: []string{"acc-b"}},
	}
	srv := newUnitServer(t, fs, func(d *api.Deps) { d.OpenCustomerRoutes = false; d.Tokens = tokens })
	key := uuid.NewString()
	created := attackSend(t, http.MethodPost, refundURL(srv.URL, validID), "before", key, `{"amount_cents":100}`)
	require.Equal(t, http.StatusCreated, created.status, created.raw)
	replayed := attackSend(t, http.MethodPost, refundURL(srv.URL, validID), "before", key, `{"amount_cents":100}`)
	require.Equal(t, created.raw, replayed.raw)

	lost := attackSend(t, http.MethodPost, refundURL(srv.URL, validID), "after", key, `{"amount_cents":100}`)
	requireError(t, lost, http.StatusUnprocessableEntity, "pix_not_credited")
	require.NotContains(t, lost.raw, "balance_after_cents")
	require.Equal(t, "true", lost.headers.Get(api.IdempotentReplayHeader), "as a recorded refusal replays")
	foreign := attackSend(t, http.MethodPost, refundURL(srv.URL, validID), "after", uuid.NewString(), `{"amount_cents":100}`)
	require.Equal(t, foreign.raw, lost.raw, "the same answer as a first request about another's PIX")
}
