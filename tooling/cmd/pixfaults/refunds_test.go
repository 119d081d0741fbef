package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/db/dbtest"
	"github.com/pixbank/pix/internal/psp"
	"github.com/pixbank/pix/internal/tooling/pspsim"
	"github.com/pixbank/pix/tooling/load"
)

// refundsEnv is the books of one run in a schema of its own and the PSP
// simulator: refunds are booked as the saga would have left them, and the
// PSP made to hold what a test says.
type refundsEnv struct {
	st      *stack
	runID   string
	created map[string]load.SentRefund
	refused map[string]bool
	n       int64
}

const refundCredit = 10000

func newRefundsEnv(t *testing.T) *refundsEnv {
	t.Helper()
	store := dbtest.New(t)
	p, err := newPSPServer(t.TempDir(), nil)
	require.NoError(t, err)
	t.Cleanup(p.close)
	e := &refundsEnv{st: &stack{pool: store.Pool(), psp: p}, runID: "TESTRUN001", created: map[string]load.SentRefund{}, refused: map[string]bool{}}
	_, err = store.Pool().Exec(t.Context(), `INSERT INTO accounts (id, owner_name, opening_balance_cents, balance_cents) VALUES ($1, 'x', 100000, 100000)`,
		load.AccountID(e.runID, 0))
	require.NoError(t, err)
	return e
}

// pix credits a new PIX of the run; refuse makes the PSP refuse its
// devoluções.
func (e *refundsEnv) pix(t *testing.T, refuse bool) string {
	t.Helper()
	e.n++
	e2e := load.EndToEndID(e.runID, e.n)
	_, err := e.st.pool.Exec(t.Context(), `INSERT INTO pix_credits (end_to_end_id, account_id, amount_cents, balance_after_cents) VALUES ($1, $2, $3, 0)`,
		e2e, load.AccountID(e.runID, 0), refundCredit)
	require.NoError(t, err)
	if refuse {
		e.refused[e2e] = true
		require.NoError(t, e.st.psp.setRefundBehavior(t.Context(), e2e, pspsim.RefundBehavior{Mode: pspsim.RefundModeRefuse}))
	}
	return e2e
}

// refund books a refund of e2e with status ours (its reversal row when
// reversed, its events as the status says), as answered 201 to the load,
// and asks the PSP for its devolução under mode ("" asks nothing: the PSP
// never got it). It returns the refund's id.
func (e *refundsEnv) refund(t *testing.T, e2e, ours string, mode pspsim.RefundMode, amount int64) string {
	t.Helper()
	return e.book(t, e2e, ours, mode, amount, true)
}

// book is refund, a reversed one booked without its reversal row and its
// reversed event when reversal is false (the books are append-only: a
// reversal can't be deleted after).
func (e *refundsEnv) book(t *testing.T, e2e, ours string, mode pspsim.RefundMode, amount int64, reversal bool) string {
	t.Helper()
	id, key := strings.ReplaceAll(uuid.NewString(), "-", ""), uuid.NewString()
	account := load.AccountID(e.runID, 0)
	due := "now()"
	if ours == "returned" || ours == "reversed" {
		due = "NULL"
	}
	_, err := e.st.pool.Exec(t.Context(), `
		INSERT INTO pix_refunds (id, end_to_end_id, account_id, amount_cents, status, balance_after_cents, idempotency_key, dispatch_due_at,
		                         returned_at, reversed_at)
		VALUES ($1, $2, $3, $4, $5, 0, $6, `+due+`, CASE WHEN $5 = 'returned' THEN now() END, CASE WHEN $5 = 'reversed' THEN now() END)`,
		id, e2e, account, amount, ours, key)
	require.NoError(t, err)
	events := []string{db.EventRefundDebited}
	switch {
	case ours == "reversed" && reversal:
		_, err = e.st.pool.Exec(t.Context(), `INSERT INTO pix_refund_reversals (refund_id, account_id, amount_cents, balance_after_cents, reason)
			VALUES ($1, $2, $3, 0, 'x')`, id, account, amount)
		require.NoError(t, err)
		events = append(events, db.EventRefundReversed)
	case ours == "returned":
		events = append(events, db.EventRefundReturned)
	}
	for _, ev := range events {
		e.event(t, id, ev)
	}
	e.created[id] = load.SentRefund{IdempotencyKey: key, EndToEndID: e2e, AccountID: account, AmountCents: amount, Status: http.StatusCreated, RefundID: id}
	if mode != "" {
		if !e.refused[e2e] {
			b := pspsim.RefundBehavior{Mode: mode}
			if mode != pspsim.RefundModeReject && mode != pspsim.RefundModeStayProcessing {
				b.SettleAfter = time.Nanosecond
			}
			require.NoError(t, e.st.psp.setRefundBehavior(t.Context(), e2e, b))
		}
		e.devolucao(t, e2e, id, amount)
	}
	return id
}

// devolucao asks the PSP for a devolução, as the saga does.
func (e *refundsEnv) devolucao(t *testing.T, e2e, id string, amount int64) {
	t.Helper()
	body, err := json.Marshal(map[string]string{"valor": psp.FormatValor(amount), "natureza": "ORIGINAL"})
	require.NoError(t, err)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPut, e.st.psp.url+"/pix/"+e2e+"/devolucao/"+id, bytes.NewReader(body))
	require.NoError(t, err)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	res.Body.Close()
}

func (e *refundsEnv) event(t *testing.T, id, typ string) {
	t.Helper()
	_, err := e.st.pool.Exec(t.Context(), `INSERT INTO outbox_events (aggregate_type, aggregate_id, event_type, payload) VALUES ($1, $2, $3, '{}')`,
		db.AggregateRefund, id, typ)
	require.NoError(t, err)
}

func (e *refundsEnv) check(t *testing.T) (refundReport, string) {
	t.Helper()
	time.Sleep(10 * time.Millisecond) // the devoluções settle
	rep, v, err := checkRefunds(t.Context(), e.st, e.created, e.runID, func(e2e string) bool { return e.refused[e2e] }, time.Now())
	require.NoError(t, err)
	return rep, strings.Join(v, "\n")
}

func TestCheckRefundsPassesConsistentBooks(t *testing.T) {
	e := newRefundsEnv(t)
	a := e.pix(t, false)
	e.refund(t, a, "returned", pspsim.RefundModeReturn, 4000)
	e.refund(t, a, "returned", pspsim.RefundModeReturn, 6000)
	e.refund(t, e.pix(t, false), "reversed", pspsim.RefundModeNotDone, 2000)
	e.refund(t, e.pix(t, false), "reversed", pspsim.RefundModeReject, 10000)
	e.refund(t, e.pix(t, true), "reversed", pspsim.RefundModeRefuse, 3000)
	e.pix(t, false) // a PIX without refunds
	rep, v := e.check(t)
	require.Empty(t, v)
	require.Equal(t, refundReport{total: 5, returned: 2, reversed: 3, refused: 1}, refundReport{total: rep.total, returned: rep.returned,
		reversed: rep.reversed, refused: rep.refused, open: rep.open})
}

func TestCheckRefundsCatchesEachViolation(t *testing.T) {
	e := newRefundsEnv(t)
	reversedReturned := e.refund(t, e.pix(t, false), "reversed", pspsim.RefundModeReturn, 1000)
	returnedNotDone := e.refund(t, e.pix(t, false), "returned", pspsim.RefundModeNotDone, 1000)
	reversedNever := e.refund(t, e.pix(t, false), "reversed", "", 1000)
	reversedPending := e.refund(t, e.pix(t, false), "reversed", pspsim.RefundModeStayProcessing, 1000)
	open := e.refund(t, e.pix(t, false), "requested", pspsim.RefundModeReturn, 1000)
	// Made twice at the PSP is impossible under one id; another amount is not.
	otherAmount := e.refund(t, e.pix(t, false), "returned", "", 1000)
	require.NoError(t, e.st.psp.setRefundBehavior(t.Context(), load.EndToEndID(e.runID, e.n),
		pspsim.RefundBehavior{Mode: pspsim.RefundModeReturn, SettleAfter: time.Nanosecond}))
	e.devolucao(t, load.EndToEndID(e.runID, e.n), otherAmount, 999)
	// A reversed refund without its reversal row, and one event short.
	noReversal := e.book(t, e.pix(t, false), "reversed", pspsim.RefundModeNotDone, 1000, false)
	// A debit event twice.
	twice := e.refund(t, e.pix(t, false), "returned", pspsim.RefundModeReturn, 1000)
	e.event(t, twice, db.EventRefundDebited)
	// Refunds beyond the credit.
	over := e.pix(t, false)
	e.refund(t, over, "returned", pspsim.RefundModeReturn, refundCredit)
	e.refund(t, over, "returned", pspsim.RefundModeReturn, 1)
	// A devolução at the PSP that we have no refund of, and a refused
	// PIX whose PSP holds one.
	stray := e.pix(t, false)
	e.devolucao(t, stray, "stray1", 500)
	refusedHeld := e.refund(t, e.pix(t, true), "reversed", "", 1000)
	require.NoError(t, e.st.psp.setRefundBehavior(t.Context(), load.EndToEndID(e.runID, e.n), pspsim.RefundBehavior{Mode: pspsim.RefundModeReject}))
	e.devolucao(t, load.EndToEndID(e.runID, e.n), refusedHeld, 1000)
	// A 201 the books do not have.
	e.created["ghost"] = load.SentRefund{RefundID: "ghost", Status: http.StatusCreated}

	rep, v := e.check(t)
	require.Equal(t, 1, rep.open)
	for _, want := range []string{
		"1 refunds REVERSED although the PSP returned them (the money went back twice): " + reversedReturned,
		"1 refunds returned although the PSP does not hold them DEVOLVIDO: " + returnedNotDone,
		"1 refunds reversed although the PSP never refused them and holds no record", reversedNever,
		"1 refunds reversed although the PSP holds them in process: " + reversedPending,
		"1 refunds left open after the drain: " + open,
		"1 refunds the PSP holds with another amount: " + otherAmount,
		"1 reversed refunds without exactly one reversal of their amount: " + noReversal,
		"2 refunds whose outbox events are not their debit and their outcome, once each",
		"1 PIX whose refunds (but the reversed) add up to more than their credit: " + over,
		"1 devoluções the PSP holds of our PIX that we have no refund of: " + stray + "/stray1",
		"1 refunds of which the PSP holds a devolução although it refuses the PIX's devoluções: " + refusedHeld,
		fmt.Sprintf("%d refunds answered 201, %d in the books", len(e.created), len(e.created)-1),
	} {
		require.Contains(t, v, want)
	}
}
