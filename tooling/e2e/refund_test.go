//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"

	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/internal/auth"
	"github.com/pixbank/pix/internal/config"
	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/internal/psp"
	"github.com/pixbank/pix/internal/runconf"
	"github.com/pixbank/pix/internal/tooling/pspsim"
	"github.com/pixbank/pix/saga/reconcile"
	"github.com/pixbank/pix/saga/refund"
)

// The refund saga (devolução of a received PIX) end to end: the API, the
// dispatcher and the worker as the stack runs them, the PSP simulator over
// HTTP. Every test holds the money to the centavo: balances, pix_refunds and
// pix_refund_reversals rows, the outbox events, and the books.

// keyedReply is an answer with its headers (X-Idempotent-Replay).
type keyedReply struct {
	Status int
	Body   map[string]any
	Header http.Header
	Raw    []byte
}

// code is the error code of an error answer, "" for another body.
func (r keyedReply) code() string {
	e, _ := r.Body["error"].(map[string]any)
	c, _ := e["code"].(string)
	return c
}

// call sends body as JSON with the extra headers, as asCaller would, or,
// with a token, as that token's bearer.
func (s *stack) call(method, path string, header http.Header, body any, token string) keyedReply {
	s.t.Helper()
	var raw []byte
	if body != nil {
		var err error
		raw, err = json.Marshal(body)
		require.NoError(s.t, err)
	}
	req, err := http.NewRequest(method, s.baseURL+path, bytes.NewReader(raw))
	require.NoError(s.t, err)
	for k, v := range header {
		req.Header[k] = v
	}
	asCaller(req, path, raw)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(s.t, err)
	defer res.Body.Close()
	var buf bytes.Buffer
	_, err = buf.ReadFrom(res.Body)
	require.NoError(s.t, err)
	var m map[string]any
	require.NoError(s.t, json.Unmarshal(buf.Bytes(), &m), "%s", buf.Bytes())
	return keyedReply{res.StatusCode, m, res.Header, buf.Bytes()}
}

// requestRefund asks to return amount of the PIX e2e under an
// Idempotency-Key, as the tests' customer (or token's bearer).
func (s *stack) requestRefund(key, e2e string, amount int64, reason, token string) keyedReply {
	s.t.Helper()
	body := map[string]any{"amount_cents": amount}
	if reason != "" {
		body["reason"] = reason
	}
	return s.call(http.MethodPost, "/pix/credits/"+e2e+"/refunds", http.Header{"Idempotency-Key": {key}}, body, token)
}

// creditPix delivers a new PIX of amount to acct and waits until it is
// credited.
func (s *stack) creditPix(acct string, amount int64) string {
	s.t.Helper()
	id := pixID()
	r := s.post(webhook{id, acct, amount})
	require.Equal(s.t, http.StatusAccepted, r.Status, "%v", r.Body)
	s.waitStatus(id, pix.StatusDone, 30*time.Second)
	return id
}

// waitRefund waits until the refund reaches want.
func (s *stack) waitRefund(id, want string, within time.Duration) pix.Refund {
	s.t.Helper()
	var r pix.Refund
	s.awaitSaga(refundSaga(id), within, fmt.Sprintf("refund %s did not become %s", id, want), func() bool {
		var err error
		r, err = s.store.GetRefund(context.Background(), id)
		require.NoError(s.t, err)
		return r.Status == want
	})
	return r
}

// refundSaga is the saga of the refund id, as explainSaga reads it.
func refundSaga(id string) sagaRun {
	return sagaRun{WorkflowID: refund.WorkflowID(id), Family: runconf.Refunds, Row: `SELECT to_jsonb(r)::text FROM pix_refunds r WHERE id = $1`, Key: id}
}

func (s *stack) refundStatus(id string) string {
	s.t.Helper()
	r, err := s.store.GetRefund(context.Background(), id)
	require.NoError(s.t, err)
	return r.Status
}

// refundEvents counts the outbox events of one refund, by type.
func (s *stack) refundEvents(id string) map[string]int {
	s.t.Helper()
	rows, err := s.store.Pool().Query(context.Background(),
		`SELECT event_type, count(*) FROM outbox_events WHERE aggregate_type = $1 AND aggregate_id = $2 GROUP BY 1`, db.AggregateRefund, id)
	require.NoError(s.t, err)
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var e string
		var n int
		require.NoError(s.t, rows.Scan(&e, &n))
		out[e] = n
	}
	require.NoError(s.t, rows.Err())
	return out
}

// requireRefundEvents holds the refund's events to exactly want.
func (s *stack) requireRefundEvents(id string, final string) {
	s.t.Helper()
	want := map[string]int{db.EventRefundDebited: 1}
	switch final {
	case pix.RefundReturned:
		want[db.EventRefundReturned] = 1
	case pix.RefundReversed:
		want[db.EventRefundReversed] = 1
	}
	require.Equal(s.t, want, s.refundEvents(id), "the events of refund %s (%s), once each", id, final)
}

// reversal is the pix_refund_reversals rows of a refund: how many, and
// their sum.
func (s *stack) reversal(id string) (n int, cents int64) {
	s.t.Helper()
	require.NoError(s.t, s.store.Pool().QueryRow(context.Background(),
		`SELECT count(*), COALESCE(sum(amount_cents), 0)::bigint FROM pix_refund_reversals WHERE refund_id = $1`, id).Scan(&n, &cents))
	return n, cents
}

// refundRows counts the pix_refunds rows of a PIX, and those under an
// Idempotency-Key.
func (s *stack) refundRows(where string, arg any) int {
	s.t.Helper()
	var n int
	require.NoError(s.t, s.store.Pool().QueryRow(context.Background(), `SELECT count(*) FROM pix_refunds WHERE `+where, arg).Scan(&n))
	return n
}

// heldRefunds sums what the PIX's refunds hold: all but the reversed.
func (s *stack) heldRefunds(e2e string) int64 {
	s.t.Helper()
	var sum int64
	require.NoError(s.t, s.store.Pool().QueryRow(context.Background(),
		`SELECT COALESCE(sum(amount_cents), 0)::bigint FROM pix_refunds WHERE end_to_end_id = $1 AND status <> 'reversed'`, e2e).Scan(&sum))
	return sum
}

// assertReconciled checks the books as assertBooksBalance does, and the
// service's own reconciliation.
func (s *stack) assertReconciled() {
	s.t.Helper()
	s.assertBooksBalance()
	rec, err := reconcile.NewStore(s.store).Reconcile(context.Background())
	require.NoError(s.t, err)
	require.True(s.t, rec.Balanced(), "reconcile.Store.Reconcile: %+v", rec)
}

// simDevolucoes lists the PSP simulator's devoluções of a PIX over its HTTP
// API (GET /pix/{e2eid}/devolucao).
func (s *stack) simDevolucoes(e2e string) []map[string]any {
	s.t.Helper()
	res, err := http.Get(s.cfg.PSPURL + "/pix/" + e2e + "/devolucao")
	require.NoError(s.t, err)
	defer res.Body.Close()
	require.Equal(s.t, http.StatusOK, res.StatusCode)
	var out struct {
		Devolucoes []map[string]any `json:"devolucoes"`
	}
	require.NoError(s.t, json.NewDecoder(res.Body).Decode(&out))
	return out.Devolucoes
}

// history is the whole event history of a workflow's latest run.
func (s *stack) history(workflowID string) []*historypb.HistoryEvent {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	it := s.client().GetWorkflowHistory(ctx, workflowID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	var out []*historypb.HistoryEvent
	for it.HasNext() {
		e, err := it.Next()
		require.NoError(s.t, err)
		out = append(out, e)
	}
	return out
}

// refundOutcome waits for the refund's run to end and returns its output.
func (s *stack) refundOutcome(id string) refund.Output {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var out refund.Output
	require.NoError(s.t, s.client().GetWorkflow(ctx, refund.WorkflowID(id), "").Get(ctx, &out))
	return out
}

func countEvents(h []*historypb.HistoryEvent, keep func(*historypb.HistoryEvent) bool) int {
	n := 0
	for _, e := range h {
		if keep(e) {
			n++
		}
	}
	return n
}

func signalled(e *historypb.HistoryEvent) bool {
	return e.GetEventType() == enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED &&
		e.GetWorkflowExecutionSignaledEventAttributes().GetSignalName() == refund.NoticeSignal
}

func scheduled(activity string) func(*historypb.HistoryEvent) bool {
	return func(e *historypb.HistoryEvent) bool {
		return e.GetEventType() == enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED &&
			e.GetActivityTaskScheduledEventAttributes().GetActivityType().GetName() == activity
	}
}

func ofType(t enumspb.EventType) func(*historypb.HistoryEvent) bool {
	return func(e *historypb.HistoryEvent) bool { return e.GetEventType() == t }
}

// A devolução the PSP makes, with no webhook: the run polls the PSP's
// record (debited -> requested -> returned), and the money stays returned.
func TestRefundReturnedByPolling(t *testing.T) {
	s := newStack(t, shared, nil)
	s.openAccount("acc-refund-poll", 5_000)
	e2e := s.creditPix("acc-refund-poll", 20_000)
	require.EqualValues(t, 25_000, s.balance("acc-refund-poll"))
	// In process long enough to be seen requested; returned at the second
	// poll or later (1 s, 3 s, 7 s after the request: the first poll finds it
	// in process even on a loaded machine).
	require.NoError(t, s.psp.SetRefundBehavior(e2e, pspsim.RefundBehavior{Mode: pspsim.RefundModeReturn, SettleAfter: 5 * time.Second}))

	// Every status the refund shows, sampled from its commit on.
	var seen []string
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var id string
	idSet := make(chan struct{})
	wg.Go(func() {
		<-idSet
		for {
			var st string
			if err := s.store.Pool().QueryRow(context.Background(), `SELECT status FROM pix_refunds WHERE id = $1`, id).Scan(&st); err == nil {
				if len(seen) == 0 || seen[len(seen)-1] != st {
					seen = append(seen, st)
				}
			}
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	})

	r := s.requestRefund(uuid.NewString(), e2e, 7_500, "devolução pedida pelo cliente", "")
	require.Equal(t, http.StatusCreated, r.Status, "%s", r.Raw)
	id = r.Body["id"].(string)
	close(idSet)
	require.Equal(t, pix.RefundDebited, r.Body["status"])
	require.Equal(t, e2e, r.Body["end_to_end_id"])
	require.Equal(t, "acc-refund-poll", r.Body["account_id"])
	require.EqualValues(t, 7_500, r.Body["amount_cents"])
	require.EqualValues(t, 17_500, r.Body["balance_after_cents"])
	require.Equal(t, "devolução pedida pelo cliente", r.Body["reason"])
	require.Equal(t, refund.WorkflowID(id), r.Body["workflow_id"])
	require.True(t, pix.ValidRefundID(id))
	require.EqualValues(t, 17_500, s.balance("acc-refund-poll"), "debited at once")

	got := s.waitRefund(id, pix.RefundReturned, 30*time.Second)
	close(stop)
	wg.Wait()
	// The answer's status, then each status sampled since, then the final
	// one waitRefund saw (the sampler may stop before it samples it).
	statuses := []string{r.Body["status"].(string)}
	for _, st := range append(seen, got.Status) {
		if st != statuses[len(statuses)-1] {
			statuses = append(statuses, st)
		}
	}
	require.Equal(t, []string{pix.RefundDebited, pix.RefundRequested, pix.RefundReturned}, statuses, "the statuses the refund showed")
	require.NotNil(t, got.RequestedAt)
	require.NotNil(t, got.ReturnedAt)
	require.Nil(t, got.ReversedAt)
	require.NotNil(t, got.RtrID)

	devs := s.simDevolucoes(e2e)
	require.Len(t, devs, 1)
	require.Equal(t, id, devs[0]["id"])
	require.Equal(t, "75.00", devs[0]["valor"])
	require.Equal(t, string(psp.RefundReturned), devs[0]["status"])
	require.Equal(t, *got.RtrID, devs[0]["rtrId"])

	require.Equal(t, refund.Output{Status: pix.RefundReturned}, s.refundOutcome(id))
	h := s.history(refund.WorkflowID(id))
	require.Zero(t, countEvents(h, signalled), "no notice: the polling found it")
	require.Equal(t, 1, countEvents(h, scheduled("RequestRefund")))
	require.GreaterOrEqual(t, countEvents(h, scheduled("CheckRefund")), 2, "in process at the first poll")

	view := s.call(http.MethodGet, "/pix/refunds/"+id, nil, nil, "")
	require.Equal(t, http.StatusOK, view.Status, "%s", view.Raw)
	require.Equal(t, pix.RefundReturned, view.Body["status"])
	credit := s.call(http.MethodGet, "/pix/credits/"+e2e, nil, nil, "")
	require.Equal(t, http.StatusOK, credit.Status, "%s", credit.Raw)
	refunds, _ := credit.Body["refunds"].([]any)
	require.Len(t, refunds, 1, "%s", credit.Raw)
	require.Equal(t, id, refunds[0].(map[string]any)["id"])

	require.EqualValues(t, 17_500, s.balance("acc-refund-poll"))
	require.Equal(t, 1, s.refundRows("end_to_end_id = $1", e2e))
	n, _ := s.reversal(id)
	require.Zero(t, n)
	s.requireRefundEvents(id, pix.RefundReturned)
	s.assertReconciled()
	s.recordHistory(refund.WorkflowID(id), "refund_returned_polling")
}

// The PSP's signed API Pix webhook (the PIX again, with its devolucoes)
// tells of the outcome while the run waits out a long poll interval: the
// run is signalled, checks the PSP's record at once, and the refund is
// returned without waiting for the next poll.
func TestRefundReturnedOnThePSPNotice(t *testing.T) {
	ctx := context.Background()
	s := newStack(t, shared, nil)
	s.openAccount("acc-refund-hook", 0)
	pixKey := "hook-" + randomSuffix() + "@example.com"
	_, err := s.store.CreatePixKey(ctx, db.NewPixKey{Key: pixKey, KeyType: "email", AccountID: "acc-refund-hook"})
	require.NoError(t, err)
	e2e := pixID()
	item := map[string]any{"endToEndId": e2e, "chave": pixKey, "valor": "300.00", "horario": "2026-11-29T20:15:00.358Z", "infoPagador": "aluguel"}
	r := s.request(http.MethodPost, "/webhooks/api-pix/pix", map[string]any{"pix": []any{item}})
	require.Equal(t, http.StatusOK, r.Status, "%v", r.Body)
	s.waitStatus(e2e, pix.StatusDone, 30*time.Second)
	require.EqualValues(t, 30_000, s.balance("acc-refund-hook"))

	// The PSP holds the devolução in process for an hour of its clock.
	require.NoError(t, s.psp.SetRefundBehavior(e2e, pspsim.RefundBehavior{Mode: pspsim.RefundModeReturn, SettleAfter: time.Hour}))
	rr := s.requestRefund(uuid.NewString(), e2e, 12_000, "", "")
	require.Equal(t, http.StatusCreated, rr.Status, "%s", rr.Raw)
	id := rr.Body["id"].(string)
	wid := refund.WorkflowID(id)
	s.waitRefund(id, pix.RefundRequested, 30*time.Second)

	// Two polls (1 s, 2 s) found it in process: the run now waits 4 s
	// (the third timer) before it polls again.
	var third string
	s.awaitSaga(refundSaga(id), 30*time.Second, "the run polls twice and waits for the third time", func() bool {
		var timers []string
		for _, e := range s.history(wid) {
			if e.GetEventType() == enumspb.EVENT_TYPE_TIMER_STARTED {
				timers = append(timers, e.GetTimerStartedEventAttributes().GetTimerId())
			}
		}
		if len(timers) >= 3 {
			third = timers[2]
			return true
		}
		return false
	})
	require.Equal(t, pix.RefundRequested, s.refundStatus(id))

	// Now the PSP makes it, and tells: the PIX as it was delivered, with
	// its devolucoes.
	s.pspClock.advance(2 * time.Hour)
	view, ok := s.psp.Refund(e2e, id)
	require.True(t, ok)
	require.Equal(t, psp.RefundReturned, view.Status)
	item["devolucoes"] = []map[string]any{{
		"id": id, "rtrId": view.RtrID, "valor": "120.00", "natureza": "ORIGINAL",
		"horario": map[string]any{"solicitacao": view.RequestedAt.UTC(), "liquidacao": view.SettledAt.UTC()}, "status": "DEVOLVIDO",
	}}
	sent := time.Now()
	r = s.request(http.MethodPost, "/webhooks/api-pix/pix", map[string]any{"pix": []any{item}})
	require.Equal(t, http.StatusOK, r.Status, "%v", r.Body)
	require.Equal(t, true, r.Body["pix"].([]any)[0].(map[string]any)["duplicate"], "the PIX itself is a redelivery")

	got := s.waitRefund(id, pix.RefundReturned, 30*time.Second)
	took := time.Since(sent)
	t.Logf("returned %s after the notice", took.Round(time.Millisecond))
	require.NotNil(t, got.RtrID)
	require.Equal(t, view.RtrID, *got.RtrID)
	var notice string
	var noticedAt *time.Time
	require.NoError(t, s.store.Pool().QueryRow(ctx, `SELECT psp_notice, noticed_at FROM pix_refunds WHERE id = $1`, id).Scan(&notice, &noticedAt))
	require.Equal(t, "DEVOLVIDO", notice)
	require.NotNil(t, noticedAt)

	require.Equal(t, refund.Output{Status: pix.RefundReturned}, s.refundOutcome(id))
	h := s.history(wid)
	// The notice woke the run: the signal, then the third timer cancelled
	// (never fired), then the check that found it returned.
	sig, cancelled := -1, -1
	for i, e := range h {
		switch {
		case signalled(e) && sig < 0:
			sig = i
		case e.GetEventType() == enumspb.EVENT_TYPE_TIMER_CANCELED && e.GetTimerCanceledEventAttributes().GetTimerId() == third:
			cancelled = i
		case e.GetEventType() == enumspb.EVENT_TYPE_TIMER_FIRED:
			require.NotEqual(t, third, e.GetTimerFiredEventAttributes().GetTimerId(), "the third poll's timer fired: the notice did not wake the run")
		}
	}
	require.GreaterOrEqual(t, sig, 0, "the run got a %s signal", refund.NoticeSignal)
	require.Greater(t, cancelled, sig, "the notice cancelled the wait for the third poll")
	require.Equal(t, 3, countEvents(h, scheduled("CheckRefund")), "two polls, then one check on the notice")
	require.Equal(t, 3, countEvents(h, ofType(enumspb.EVENT_TYPE_TIMER_STARTED)))

	require.EqualValues(t, 18_000, s.balance("acc-refund-hook"))
	n, _ := s.reversal(id)
	require.Zero(t, n)
	s.requireRefundEvents(id, pix.RefundReturned)
	s.assertReconciled()
	s.recordHistory(refund.WorkflowID(id), "refund_returned_on_notice")
}

// A devolução the PSP does not make (not_done: after a while in process;
// reject: at once) is reversed exactly once: the debit credited back, one
// reversal row; the reversed refund no longer counts, so the whole PIX can
// be refunded again.
func TestRefundNotMadeIsReversedOnce(t *testing.T) {
	for _, mode := range []pspsim.RefundMode{pspsim.RefundModeNotDone, pspsim.RefundModeReject} {
		t.Run(string(mode), func(t *testing.T) {
			s := newStack(t, shared, nil)
			acct := "acc-refund-" + string(mode)
			s.openAccount(acct, 1_000)
			e2e := s.creditPix(acct, 10_000)
			reason := "model: conta do pagador encerrada (" + string(mode) + ")"
			b := pspsim.RefundBehavior{Mode: mode, Reason: reason}
			if mode == pspsim.RefundModeNotDone {
				b.SettleAfter = 300 * time.Millisecond
			}
			require.NoError(t, s.psp.SetRefundBehavior(e2e, b))

			r := s.requestRefund(uuid.NewString(), e2e, 10_000, "", "")
			require.Equal(t, http.StatusCreated, r.Status, "%s", r.Raw)
			id := r.Body["id"].(string)
			require.EqualValues(t, 1_000, s.balance(acct))
			over := s.requestRefund(uuid.NewString(), e2e, 1, "", "")
			require.Equal(t, http.StatusUnprocessableEntity, over.Status, "%s", over.Raw)
			require.Equal(t, "refund_exceeds_credit", over.code(), "the open refund holds the whole credit")

			got := s.waitRefund(id, pix.RefundReversed, 30*time.Second)
			require.NotNil(t, got.FailureReason)
			require.Equal(t, reason, *got.FailureReason)
			require.NotNil(t, got.ReversedAt)
			require.Nil(t, got.ReturnedAt)
			// Refused at once (reject) or later (not_done), the PSP held a
			// record of it: its acceptance (and rtrId) was recorded first.
			require.NotNil(t, got.RequestedAt)
			require.NotNil(t, got.RtrID)
			require.Equal(t, refund.Output{Status: pix.RefundReversed, Reason: reason}, s.refundOutcome(id))
			s.recordHistory(refund.WorkflowID(id), "refund_reversed_"+string(mode))
			require.EqualValues(t, 11_000, s.balance(acct), "the debit credited back exactly")
			n, cents := s.reversal(id)
			require.Equal(t, 1, n)
			require.EqualValues(t, 10_000, cents)
			s.requireRefundEvents(id, pix.RefundReversed)
			devs := s.simDevolucoes(e2e)
			require.Len(t, devs, 1)
			require.Equal(t, string(psp.RefundNotDone), devs[0]["status"])
			require.Zero(t, s.heldRefunds(e2e))

			// The reversed refund no longer counts: the whole PIX again.
			s.psp.DeleteRefundBehavior(e2e)
			again := s.requestRefund(uuid.NewString(), e2e, 10_000, "", "")
			require.Equal(t, http.StatusCreated, again.Status, "%s", again.Raw)
			id2 := again.Body["id"].(string)
			require.NotEqual(t, id, id2)
			require.EqualValues(t, 1_000, again.Body["balance_after_cents"])
			s.waitRefund(id2, pix.RefundReturned, 30*time.Second)
			require.Equal(t, pix.RefundReversed, s.refundStatus(id), "the first stays reversed")

			require.EqualValues(t, 1_000, s.balance(acct))
			n, _ = s.reversal(id)
			require.Equal(t, 1, n, "reversed once, whatever came after")
			n, _ = s.reversal(id2)
			require.Zero(t, n)
			s.requireRefundEvents(id, pix.RefundReversed)
			s.requireRefundEvents(id2, pix.RefundReturned)
			require.EqualValues(t, 10_000, s.heldRefunds(e2e))
			require.Len(t, s.simDevolucoes(e2e), 2)
			s.assertReconciled()
		})
	}
}

// The PSP makes the devolução and its answer is lost (lose_response), or it
// answers 503 three times (fail): the run asks again under the same id, and
// the PSP holds exactly one devolução, returned once.
func TestRefundLostAnswerAndPSPFailuresRequestOnce(t *testing.T) {
	s := newStack(t, shared, nil)
	s.openAccount("acc-refund-flaky", 0)
	lossy := s.creditPix("acc-refund-flaky", 5_000)
	flaky := s.creditPix("acc-refund-flaky", 7_000)
	require.NoError(t, s.psp.SetRefundBehavior(lossy, pspsim.RefundBehavior{Mode: pspsim.RefundModeLoseResponse, Times: 1}))
	require.NoError(t, s.psp.SetRefundBehavior(flaky, pspsim.RefundBehavior{Mode: pspsim.RefundModeFail, Times: 3}))

	a := s.requestRefund(uuid.NewString(), lossy, 5_000, "", "")
	b := s.requestRefund(uuid.NewString(), flaky, 2_500, "", "")
	require.Equal(t, http.StatusCreated, a.Status, "%s", a.Raw)
	require.Equal(t, http.StatusCreated, b.Status, "%s", b.Raw)
	ida, idb := a.Body["id"].(string), b.Body["id"].(string)
	s.waitRefund(ida, pix.RefundReturned, 60*time.Second)
	s.waitRefund(idb, pix.RefundReturned, 60*time.Second)

	for _, c := range []struct {
		e2e, id     string
		minReceived int
		valor       string
	}{{lossy, ida, 2, "50.00"}, {flaky, idb, 4, "25.00"}} {
		devs := s.simDevolucoes(c.e2e)
		require.Len(t, devs, 1, "one devolução at the PSP for %s", c.e2e)
		require.Equal(t, c.id, devs[0]["id"])
		require.Equal(t, c.valor, devs[0]["valor"])
		require.Equal(t, string(psp.RefundReturned), devs[0]["status"])
		v, ok := s.psp.Refund(c.e2e, c.id)
		require.True(t, ok)
		require.GreaterOrEqual(t, v.Received, c.minReceived, "asked again under the same id")
		n, _ := s.reversal(c.id)
		require.Zero(t, n)
		s.requireRefundEvents(c.id, pix.RefundReturned)
		require.Equal(t, refund.Output{Status: pix.RefundReturned}, s.refundOutcome(c.id))
	}
	require.EqualValues(t, 12_000-5_000-2_500, s.balance("acc-refund-flaky"))
	s.assertReconciled()
}

// The PSP refuses our credentials (401): that says nothing about the
// devolução. The refund stays debited and open, never reversed, for as
// long as the PSP refuses; once it takes the request, the devolução is made.
func TestRefundRefusedByThePSPStaysOpen(t *testing.T) {
	ctx := context.Background()
	// A run that gave up on the refusals is started again soon.
	s := newStack(t, shared, func(c *config.Config) { c.DispatchRecheckAfter, c.DispatchRecheckMax = 2*time.Second, 2*time.Second })
	s.openAccount("acc-refund-401", 0)
	e2e := s.creditPix("acc-refund-401", 9_000)
	require.NoError(t, s.psp.SetRefundBehavior(e2e, pspsim.RefundBehavior{Mode: pspsim.RefundModeUnauthorized}))

	r := s.requestRefund(uuid.NewString(), e2e, 9_000, "", "")
	require.Equal(t, http.StatusCreated, r.Status, "%s", r.Raw)
	id := r.Body["id"].(string)
	// The PSP sees the request and refuses it, again and again.
	s.awaitSaga(refundSaga(id), 30*time.Second, "the run asks the PSP again after each refusal", func() bool {
		for _, b := range s.psp.RefundBehaviors() {
			if b.EndToEndID == e2e && b.Requests >= 3 {
				return true
			}
		}
		return false
	})
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		require.Equal(t, pix.RefundDebited, s.refundStatus(id), "open while the PSP refuses")
		time.Sleep(100 * time.Millisecond)
	}
	n, _ := s.reversal(id)
	require.Zero(t, n, "a 401 is about our credentials, never a reason to reverse")
	require.Empty(t, s.simDevolucoes(e2e), "the PSP made nothing")
	require.EqualValues(t, 0, s.balance("acc-refund-401"), "debited, not credited back")
	require.Equal(t, map[string]int{db.EventRefundDebited: 1}, s.refundEvents(id))
	require.GreaterOrEqual(t, s.total("pix_psp_attention_total"), 1.0, "every refusal is counted for the alert")
	var due bool
	require.NoError(t, s.store.Pool().QueryRow(ctx, `SELECT dispatch_due_at IS NOT NULL FROM pix_refunds WHERE id = $1`, id).Scan(&due))
	require.True(t, due, "open: the dispatcher keeps it")
	s.assertReconciled()

	// The PSP takes our credentials again: the devolução is made.
	s.psp.DeleteRefundBehavior(e2e)
	s.waitRefund(id, pix.RefundReturned, 90*time.Second)
	require.Len(t, s.simDevolucoes(e2e), 1)
	n, _ = s.reversal(id)
	require.Zero(t, n)
	require.EqualValues(t, 0, s.balance("acc-refund-401"))
	s.requireRefundEvents(id, pix.RefundReturned)
	s.assertReconciled()
}

// The Idempotency-Key layer: a replay gets the same refund (one debit);
// concurrent copies under one key make one refund; concurrent refunds of
// one PIX under different keys never hold more than its credit.
func TestRefundIdempotency(t *testing.T) {
	s := newStack(t, shared, nil)
	s.openAccount("acc-refund-keys", 50_000)
	e2e := s.creditPix("acc-refund-keys", 10_000)

	// The same key and body twice.
	key := uuid.NewString()
	first := s.requestRefund(key, e2e, 1_000, "primeira", "")
	require.Equal(t, http.StatusCreated, first.Status, "%s", first.Raw)
	require.Empty(t, first.Header.Get("X-Idempotent-Replay"))
	again := s.requestRefund(key, e2e, 1_000, "primeira", "")
	require.Equal(t, http.StatusCreated, again.Status, "%s", again.Raw)
	require.Equal(t, "true", again.Header.Get("X-Idempotent-Replay"))
	require.Equal(t, first.Body, again.Body, "the same refund, answered again")
	require.EqualValues(t, 59_000, s.balance("acc-refund-keys"), "one debit")
	require.Equal(t, 1, s.refundRows("idempotency_key = $1", key))
	// The key with another body, or for another PIX: refused.
	other := s.requestRefund(key, e2e, 1_001, "primeira", "")
	require.Equal(t, http.StatusUnprocessableEntity, other.Status, "%s", other.Raw)
	require.Equal(t, "idempotency_key_reused", other.code())
	e2e2 := s.creditPix("acc-refund-keys", 3_000)
	other = s.requestRefund(key, e2e2, 1_000, "primeira", "")
	require.Equal(t, http.StatusUnprocessableEntity, other.Status, "%s", other.Raw)
	require.Equal(t, "idempotency_key_reused", other.code(), "the PIX is part of the request")

	// Eight copies at once under one new key: one refund.
	key = uuid.NewString()
	const copies = 8
	replies := make([]keyedReply, copies)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range copies {
		wg.Go(func() {
			<-start
			replies[i] = s.requestRefund(key, e2e, 2_000, "", "")
		})
	}
	close(start)
	wg.Wait()
	ids := map[string]bool{}
	ran := 0
	for _, r := range replies {
		switch {
		case r.Status == http.StatusCreated:
			ids[r.Body["id"].(string)] = true
			if r.Header.Get("X-Idempotent-Replay") != "true" {
				ran++
			}
		case r.Status == http.StatusConflict && r.code() == "request_in_progress":
		default:
			t.Fatalf("a copy under one key: expected 201 or 409 request_in_progress; got %d %s", r.Status, r.Raw)
		}
	}
	require.Len(t, ids, 1, "one refund for one key")
	require.Equal(t, 1, ran, "one copy ran, the others waited or replayed")
	require.Equal(t, 1, s.refundRows("idempotency_key = $1", key))
	require.EqualValues(t, 50_000+10_000+3_000-1_000-2_000, s.balance("acc-refund-keys"))

	// Five refunds of 3 000 at once, under five keys, of the 7 000 left:
	// two at most fit.
	concurrent := make([]keyedReply, 5)
	start = make(chan struct{})
	for i := range concurrent {
		wg.Go(func() {
			<-start
			concurrent[i] = s.requestRefund(uuid.NewString(), e2e, 3_000, "", "")
		})
	}
	close(start)
	wg.Wait()
	var made []string
	for _, r := range concurrent {
		switch {
		case r.Status == http.StatusCreated:
			made = append(made, r.Body["id"].(string))
		case r.Status == http.StatusUnprocessableEntity && r.code() == "refund_exceeds_credit":
		default:
			t.Fatalf("a concurrent refund: expected 201 or 422 refund_exceeds_credit; got %d %s", r.Status, r.Raw)
		}
	}
	require.Len(t, made, 2, "the two that fit are made, the others refused")
	require.LessOrEqual(t, s.heldRefunds(e2e), int64(10_000))
	require.EqualValues(t, 1_000+2_000+2*3_000, s.heldRefunds(e2e))
	require.EqualValues(t, 60_000-2*3_000, s.balance("acc-refund-keys"))

	all := append(made, first.Body["id"].(string))
	for id := range ids {
		all = append(all, id)
	}
	for _, id := range all {
		s.waitRefund(id, pix.RefundReturned, 30*time.Second)
		s.requireRefundEvents(id, pix.RefundReturned)
	}
	require.Equal(t, 4, s.refundRows("end_to_end_id = $1", e2e))
	require.LessOrEqual(t, s.heldRefunds(e2e), int64(10_000))
	require.EqualValues(t, 60_000-2*3_000, s.balance("acc-refund-keys"))
	s.assertReconciled()
}

// Another customer's PIX is refused exactly like one never credited, and
// another customer's refund is not found like a missing one; neither
// moves money.
func TestRefundAccess(t *testing.T) {
	s := newStack(t, shared, nil)
	s.openAccount("acc-refund-owner", 1_000)
	s.openAccount("acc-refund-stranger", 1_000)
	e2e := s.creditPix("acc-refund-owner", 4_000)
	stranger, err := e2eIssuer.Mint(auth.TokenSpec{Subject: "e2e-stranger", Scopes: []string{auth.ScopeRead, auth.ScopeWrite},
		Accounts: []string{"acc-refund-stranger"}, TTL: 5 * time.Minute}, time.Now())
	require.NoError(t, err)

	theirs := s.requestRefund(uuid.NewString(), e2e, 1_000, "", stranger)
	missing := s.requestRefund(uuid.NewString(), pixID(), 1_000, "", stranger)
	require.Equal(t, http.StatusUnprocessableEntity, theirs.Status, "%s", theirs.Raw)
	require.Equal(t, "pix_not_credited", theirs.code())
	require.Equal(t, missing.Status, theirs.Status)
	require.Equal(t, missing.Body, theirs.Body, "another customer's PIX looks exactly like a missing one")
	require.Zero(t, s.refundRows("end_to_end_id = $1", e2e))
	require.EqualValues(t, 5_000, s.balance("acc-refund-owner"))
	require.EqualValues(t, 1_000, s.balance("acc-refund-stranger"))

	own := s.requestRefund(uuid.NewString(), e2e, 1_000, "", "")
	require.Equal(t, http.StatusCreated, own.Status, "%s", own.Raw)
	id := own.Body["id"].(string)
	got := s.call(http.MethodGet, "/pix/refunds/"+id, nil, nil, stranger)
	none := s.call(http.MethodGet, "/pix/refunds/"+pix.NewRefundID(), nil, nil, stranger)
	require.Equal(t, http.StatusNotFound, got.Status, "%s", got.Raw)
	require.Equal(t, "refund_not_found", got.code())
	require.Equal(t, none.Status, got.Status)
	require.Equal(t, none.Body, got.Body, "another customer's refund looks exactly like a missing one")
	require.Equal(t, http.StatusOK, s.call(http.MethodGet, "/pix/refunds/"+id, nil, nil, "").Status, "the owner sees it")
	// Nor does the credit's view show the stranger its refunds.
	view := s.call(http.MethodGet, "/pix/credits/"+e2e, nil, nil, stranger)
	unknown := s.call(http.MethodGet, "/pix/credits/"+pixID(), nil, nil, stranger)
	require.Equal(t, unknown.Status, view.Status, "%s", view.Raw)
	require.Equal(t, unknown.Body, view.Body, "another customer's PIX looks exactly like a missing one")
	require.NotContains(t, string(view.Raw), id)

	s.waitRefund(id, pix.RefundReturned, 30*time.Second)
	require.EqualValues(t, 4_000, s.balance("acc-refund-owner"))
	require.EqualValues(t, 1_000, s.balance("acc-refund-stranger"))
	s.requireRefundEvents(id, pix.RefundReturned)
	s.assertReconciled()
}

// The other refusals: more than the balance, outside the 90-day window,
// more than the credit. Nothing is debited; the refusal is the key's answer.
func TestRefundRefusals(t *testing.T) {
	ctx := context.Background()
	s := newStack(t, shared, nil)
	s.openAccount("acc-refund-no", 0)
	e2e := s.creditPix("acc-refund-no", 10_000)
	tr := s.sendPix(uuid.NewString(), "acc-refund-no", 8_000, "maria@example.com")
	require.Equal(t, http.StatusCreated, tr.Status, "%v", tr.Body)

	key := uuid.NewString()
	poor := s.requestRefund(key, e2e, 5_000, "", "")
	require.Equal(t, http.StatusUnprocessableEntity, poor.Status, "%s", poor.Raw)
	require.Equal(t, "insufficient_funds", poor.code())
	replay := s.requestRefund(key, e2e, 5_000, "", "")
	require.Equal(t, "true", replay.Header.Get("X-Idempotent-Replay"))
	require.Equal(t, poor.Body, replay.Body, "the refusal is the key's answer")

	over := s.requestRefund(uuid.NewString(), e2e, 10_001, "", "")
	require.Equal(t, http.StatusUnprocessableEntity, over.Status, "%s", over.Raw)
	require.Equal(t, "refund_exceeds_credit", over.code())

	// Received (and credited) 91 days ago.
	_, err := s.store.Pool().Exec(ctx, `UPDATE pix_credits SET received_at = now() - interval '91 days', credited_at = now() - interval '91 days' WHERE end_to_end_id = $1`, e2e)
	require.NoError(t, err)
	late := s.requestRefund(uuid.NewString(), e2e, 1_000, "", "")
	require.Equal(t, http.StatusUnprocessableEntity, late.Status, "%s", late.Raw)
	require.Equal(t, "refund_window_closed", late.code())

	require.Zero(t, s.refundRows("end_to_end_id = $1", e2e))
	require.EqualValues(t, 2_000, s.balance("acc-refund-no"))
	var events int
	require.NoError(t, s.store.Pool().QueryRow(ctx, `SELECT count(*) FROM outbox_events WHERE aggregate_type = $1`, db.AggregateRefund).Scan(&events))
	require.Zero(t, events)
	s.waitTransfer(tr.Body["id"].(string), pix.TransferSettled, 30*time.Second)
	s.assertReconciled()
}

// The PSP refuses the devolução itself (refuse: 400
// PixDevolucaoInvalida, nothing made). Nothing is decided on the
// refusal alone: the refund stays debited for the quiet period, then is
// reversed once if the PSP still holds no record of it; a record that
// shows up meanwhile (the PSP made it after all) is followed: returned,
// never reversed.
func TestRefundRefusedByThePSPIsReversedOnlyWithoutARecord(t *testing.T) {
	// A run that found a record after all fails; the next one is started
	// soon.
	s := newStack(t, shared, func(c *config.Config) { c.DispatchRecheckAfter, c.DispatchRecheckMax = 2*time.Second, 2*time.Second })
	quiet := time.Duration(s.refundRun().RefusalQuietPeriod)
	s.openAccount("acc-refund-refused", 0)
	none := s.creditPix("acc-refund-refused", 6_000)
	late := s.creditPix("acc-refund-refused", 4_000)
	for _, e2e := range []string{none, late} {
		require.NoError(t, s.psp.SetRefundBehavior(e2e, pspsim.RefundBehavior{Mode: pspsim.RefundModeRefuse}))
	}
	a := s.requestRefund(uuid.NewString(), none, 6_000, "", "")
	b := s.requestRefund(uuid.NewString(), late, 1_500, "valor incorreto", "")
	require.Equal(t, http.StatusCreated, a.Status, "%s", a.Raw)
	require.Equal(t, http.StatusCreated, b.Status, "%s", b.Raw)
	ida, idb := a.Body["id"].(string), b.Body["id"].(string)
	refusedAt := time.Now()
	require.Eventually(t, func() bool {
		n := 0
		for _, rb := range s.psp.RefundBehaviors() {
			if (rb.EndToEndID == none || rb.EndToEndID == late) && rb.Requests >= 1 {
				n++
			}
		}
		return n == 2
	}, 30*time.Second, 20*time.Millisecond, "both devoluções asked for, and refused")

	// The PSP makes the second one after all, under our id and as asked.
	s.psp.DeleteRefundBehavior(late)
	body, err := json.Marshal(map[string]any{"valor": "15.00", "natureza": "ORIGINAL", "descricao": "valor incorreto"})
	require.NoError(t, err)
	req, err := http.NewRequest(http.MethodPut, s.cfg.PSPURL+"/pix/"+late+"/devolucao/"+idb, bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusCreated, res.StatusCode)

	// Within the quiet period nothing is decided.
	if wait := time.Until(refusedAt.Add(quiet / 2)); wait > 0 {
		time.Sleep(wait)
	}
	require.Equal(t, pix.RefundDebited, s.refundStatus(ida), "a refusal alone reverses nothing")
	// The second's PUT, asked again after its refusal, may already have met
	// the record the PSP now holds and followed it (requested): never
	// reversed either way (seen once in a clean clone: requested at the
	// quiet period's half).
	require.Contains(t, []string{pix.RefundDebited, pix.RefundRequested}, s.refundStatus(idb), "nothing reversed")
	require.EqualValues(t, 10_000-6_000-1_500, s.balance("acc-refund-refused"))

	got := s.waitRefund(ida, pix.RefundReversed, quiet+60*time.Second)
	require.NotNil(t, got.FailureReason)
	require.Contains(t, *got.FailureReason, "PixDevolucaoInvalida")
	require.Empty(t, s.simDevolucoes(none), "the PSP made nothing")
	n, cents := s.reversal(ida)
	require.Equal(t, 1, n)
	require.EqualValues(t, 6_000, cents)
	s.requireRefundEvents(ida, pix.RefundReversed)
	s.recordHistory(refund.WorkflowID(ida), "refund_refused_reversed")

	s.waitRefund(idb, pix.RefundReturned, quiet+60*time.Second)
	devs := s.simDevolucoes(late)
	require.Len(t, devs, 1)
	require.Equal(t, string(psp.RefundReturned), devs[0]["status"])
	n, _ = s.reversal(idb)
	require.Zero(t, n, "the record that showed up decides: never reversed")
	s.requireRefundEvents(idb, pix.RefundReturned)

	require.EqualValues(t, 10_000-1_500, s.balance("acc-refund-refused"))
	s.assertReconciled()
}

// refundRun is the devolução's runs' settings as the stack's worker reads
// them (its configuration, and the stack's own settings).
func (s *stack) refundRun() refund.RunSettings {
	s.t.Helper()
	set, err := refund.SettingsFrom(config.LookupIn(s.settings))
	require.NoError(s.t, err)
	return set.Run(s.cfg)
}
