package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/db/dbtest"
	"github.com/pixbank/pix/internal/auth"
	"github.com/pixbank/pix/internal/psp"
	"github.com/pixbank/pix/internal/tooling/devauth"
	"github.com/pixbank/pix/internal/tooling/pspsim"
	"github.com/pixbank/pix/tooling/load"
)

// transfersEnv is the books of one run in a schema of its own, the PSP
// simulator, and an API that answers GET /pix/transfers/{id}.
type transfersEnv struct {
	st      *stack
	runID   string
	created map[string]load.SentTransfer
	n       int
}

func newTransfersEnv(t *testing.T) *transfersEnv {
	t.Helper()
	store := dbtest.New(t)
	p, err := newPSPServer(t.TempDir(), nil)
	require.NoError(t, err)
	t.Cleanup(p.close)
	// The API answers the transfer's customer only, as the real one does:
	// a token of the stack's issuer, scope pix:read, for the account.
	issuer := devauth.Settings{KeyDir: t.TempDir(), Issuer: devauth.DefaultIssuer, Audience: devauth.DefaultAudience}
	iss, err := issuer.Open()
	require.NoError(t, err)
	keys, err := auth.NewKeyCache(t.Context(), auth.FileKeys(issuer.JWKSFile()), auth.KeyCacheOptions{})
	require.NoError(t, err)
	verifier := auth.NewVerifier(issuer.Issuer, issuer.Audience, keys, nil)
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		caller, err := verifier.Verify(r.Context(), strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
		if err != nil || !caller.HasScope(auth.ScopeRead) || !caller.MayActFor(load.AccountID("TESTRUN001", 0)) {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		_, _ = w.Write([]byte(`{"status":"submitted"}`))
	}))
	t.Cleanup(api.Close)
	e := &transfersEnv{st: &stack{pool: store.Pool(), psp: p, apiURL: api.URL, issuer: iss}, runID: "TESTRUN001", created: map[string]load.SentTransfer{}}
	_, err = store.Pool().Exec(t.Context(), `INSERT INTO accounts (id, owner_name, opening_balance_cents, balance_cents) VALUES ($1, 'x', 100000, 100000)`,
		load.AccountID(e.runID, 0))
	require.NoError(t, err)
	return e
}

// transfer books a transfer of ours with status ours (and its refund row
// when refunded), as answered 201 to the load, and has the PSP hold it as
// pspMode makes it (none: the PSP never got it). It returns its
// end_to_end_id.
func (e *transfersEnv) transfer(t *testing.T, ours string, pspMode pspsim.Mode, pspAmount int64) string {
	t.Helper()
	e.n++
	id, key := uuid.NewString(), uuid.NewString()
	e2e := fmt.Sprintf("E12345678202611301200%011d", e.n)
	pixKey := fmt.Sprintf("k%d@test", e.n)
	account := load.AccountID(e.runID, 0)
	const amount = 1500
	due := "now()"
	if ours == "settled" || ours == "refunded" {
		due = "NULL"
	}
	_, err := e.st.pool.Exec(t.Context(), `
		INSERT INTO pix_transfers (id, end_to_end_id, account_id, amount_cents, pix_key, status, balance_after_cents, idempotency_key, dispatch_due_at)
		VALUES ($1, $2, $3, $4, $5, $6, 0, $7, `+due+`)`, id, e2e, account, amount, pixKey, ours, key)
	require.NoError(t, err)
	if ours == "refunded" {
		_, err = e.st.pool.Exec(t.Context(), `INSERT INTO pix_transfer_refunds (transfer_id, account_id, amount_cents, balance_after_cents, reason)
			VALUES ($1, $2, $3, 0, 'x')`, id, account, amount)
		require.NoError(t, err)
	}
	e.created[id] = load.SentTransfer{IdempotencyKey: key, AccountID: account, PixKey: pixKey, AmountCents: amount, Status: http.StatusCreated,
		TransferID: id, EndToEndID: e2e}
	if pspMode != "" {
		require.NoError(t, e.st.psp.setBehavior(t.Context(), pixKey, pspsim.Behavior{Mode: pspMode, SettleAfter: settleFor(pspMode)}))
		body, err := json.Marshal(psp.Transfer{EndToEndID: e2e, AccountID: account, AmountCents: pspAmount, PixKey: pixKey})
		require.NoError(t, err)
		res, err := http.Post(e.st.psp.url+"/transfers", "application/json", bytes.NewReader(body))
		require.NoError(t, err)
		res.Body.Close()
	}
	return e2e
}

// settleFor: accept settles at once for the test, reject_later stays
// pending (an hour), reject takes no settle_after.
func settleFor(m pspsim.Mode) time.Duration {
	switch m {
	case pspsim.ModeAccept:
		return time.Nanosecond
	case pspsim.ModeRejectLater:
		return time.Hour
	}
	return 0
}

func (e *transfersEnv) check(t *testing.T) (transferReport, string) {
	t.Helper()
	time.Sleep(10 * time.Millisecond) // the accepted ones settle
	rep, v, err := checkTransfers(t.Context(), e.st, e.created, e.runID, time.Now())
	require.NoError(t, err)
	return rep, strings.Join(v, "\n")
}

func TestCheckTransfersPassesConsistentBooks(t *testing.T) {
	e := newTransfersEnv(t)
	e.transfer(t, "settled", pspsim.ModeAccept, 1500)
	e.transfer(t, "refunded", pspsim.ModeReject, 1500)
	pending := e.transfer(t, "submitted", pspsim.ModeRejectLater, 1500)
	never := e.transfer(t, "debited", "", 0)
	rep, v := e.check(t)
	require.Empty(t, v)
	require.Equal(t, 4, rep.total)
	require.Equal(t, [3]int{1, 1, 2}, [3]int{rep.settled, rep.refunded, rep.open})
	require.Len(t, rep.openVisible, 2)
	require.Contains(t, strings.Join(rep.openVisible, " "), pending+" (ours submitted, psp pending)")
	require.Contains(t, strings.Join(rep.openVisible, " "), never+" (ours debited, psp none)")
}

func TestCheckTransfersCatchesEachViolation(t *testing.T) {
	e := newTransfersEnv(t)
	refundedSettled := e.transfer(t, "refunded", pspsim.ModeAccept, 1500)
	refundedPending := e.transfer(t, "refunded", pspsim.ModeRejectLater, 1500)
	refundedNever := e.transfer(t, "refunded", "", 0)
	settledPending := e.transfer(t, "settled", pspsim.ModeRejectLater, 1500)
	openFinal := e.transfer(t, "submitted", pspsim.ModeAccept, 1500)
	otherAmount := e.transfer(t, "settled", pspsim.ModeAccept, 1499)
	// A 201 the books do not have.
	e.created["ghost"] = load.SentTransfer{TransferID: "ghost", Status: http.StatusCreated}

	_, v := e.check(t)
	for _, want := range []string{
		"2 transfers REFUNDED although the PSP holds them settled or pending",
		refundedSettled, refundedPending,
		"1 transfers refunded although the PSP never received them (a refusal of the request taken for a rejection): " + refundedNever,
		"1 transfers settled by us that the PSP does not hold settled: " + settledPending,
		"1 transfers left open although the PSP's answer is final: " + openFinal,
		"1 transfers the PSP holds with another amount, key or account: " + otherAmount,
		"7 transfers answered 201, 6 in the books",
	} {
		require.Contains(t, v, want)
	}
}
