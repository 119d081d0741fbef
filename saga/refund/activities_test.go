package refund_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"

	"github.com/pixbank/pix/activities"
	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/internal/psp"
	"github.com/pixbank/pix/internal/psp/psptest"
	"github.com/pixbank/pix/saga/refund"
	"github.com/pixbank/pix/saga/sagatest"
)

// The refund activities' decisions, over an in-memory store and a scripted
// PSP: no PostgreSQL, no Temporal server (the unit tier).

// The stores: the saga's Store satisfies what the activities and the
// routes need, and so does this in-memory fake what the activities need.
var (
	_ refund.ActivityStore = (*refund.Store)(nil)
	_ refund.RouteStore    = (*refund.Store)(nil)
	_ refund.ActivityStore = (*memRefunds)(nil)
)

// memRefunds is an in-memory refund.ActivityStore of one refund.
type memRefunds struct {
	mu       sync.Mutex
	r        pix.Refund
	asked    bool    // MarkRefundAsked was called
	asks     int     // MarkRefundAsked calls (db's psp_asks)
	refusal  *string // MarkRefundRefused recorded it
	noticed  bool    // a PSP notice was recorded on the refund
	reversed int     // ReverseRefund calls that reversed
	calls    []string
}

func (m *memRefunds) MarkRefundAsked(context.Context, string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	first := !m.asked
	m.asked = true
	m.asks++
	return first, nil
}

// refusalStands is db's RefusalStands: nothing says the PSP took it, and
// no PUT but the refused one was sent.
func (m *memRefunds) refusalStands() bool {
	return m.r.Status == pix.RefundDebited && m.r.RtrID == nil && !m.noticed && m.asks <= 1
}

func (m *memRefunds) MarkRefundRefused(_ context.Context, _ string, reason string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.refusalStands() {
		return false, nil
	}
	if m.refusal == nil {
		m.refusal = &reason
	}
	return true, nil
}

func (m *memRefunds) StandingRefusal(context.Context, string) (string, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.refusal == nil || !m.refusalStands() {
		return "", false, nil
	}
	return *m.refusal, true, nil
}

func (m *memRefunds) GetRefund(_ context.Context, id string) (pix.Refund, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if id != m.r.ID {
		return pix.Refund{}, pix.ErrRefundNotFound
	}
	return m.r, nil
}

func (m *memRefunds) MarkRefundRequested(_ context.Context, _ string, rtrID string) (pix.Refund, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls = append(m.calls, "requested")
	if !m.r.Final() {
		m.r.Status = pix.RefundRequested
		if m.r.RtrID == nil && rtrID != "" {
			m.r.RtrID = &rtrID
		}
	}
	return m.r, nil
}

func (m *memRefunds) MarkRefundReturned(_ context.Context, _ string, _ string) (pix.Refund, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls = append(m.calls, "returned")
	if m.r.Status == pix.RefundReversed {
		return m.r, pix.ErrRefundFinal
	}
	m.r.Status = pix.RefundReturned
	return m.r, nil
}

func (m *memRefunds) ReverseRefund(_ context.Context, _ string, reason string, refused bool) (pix.Refund, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls = append(m.calls, "reverse")
	switch m.r.Status {
	case pix.RefundReversed:
		return m.r, nil
	case pix.RefundReturned:
		return m.r, pix.ErrRefundFinal
	}
	if refused && !m.refusalStands() {
		return m.r, pix.ErrRefundFinal // the refusal no longer stands (as db checks under the lock)
	}
	m.r.Status, m.r.FailureReason = pix.RefundReversed, &reason
	m.reversed++
	return m.r, nil
}

// scriptedRefundPSP answers PUT and GET from scripts (the last answer
// repeats) and counts the calls.
type scriptedRefundPSP struct {
	psptest.Calls
	puts, gets []refundAnswer
}

type refundAnswer struct {
	status psp.RefundStatus
	reason string
	amount int64 // 0: the refund's own
	err    error
}

func (p *scriptedRefundPSP) next(kind string, script []refundAnswer, r psp.RefundRequest) (psp.RefundResult, error) {
	a, err := psptest.Next(&p.Calls, kind, script)
	if err == nil {
		err = a.err
	}
	if err != nil {
		return psp.RefundResult{}, err
	}
	amount := r.AmountCents
	if a.amount != 0 {
		amount = a.amount
	}
	return psp.RefundResult{EndToEndID: r.EndToEndID, ID: r.ID, RtrID: "D12345678202611291200abcdef12345", AmountCents: amount,
		Status: a.status, Reason: a.reason, RequestedAt: time.Now()}, nil
}

// RequestRefund sends the PUT (psp.Sending), unless its scripted answer is
// the token endpoint's (nothing sent).
func (p *scriptedRefundPSP) RequestRefund(ctx context.Context, r psp.RefundRequest) (psp.RefundResult, error) {
	res, err := p.next("put", p.puts, r)
	var tokenErr *psp.TokenError
	if !errors.As(err, &tokenErr) {
		if err := psp.Sending(ctx); err != nil {
			return psp.RefundResult{}, err
		}
	}
	return res, err
}

func (p *scriptedRefundPSP) RefundStatus(_ context.Context, e2e, id string) (psp.RefundResult, error) {
	return p.next("get", p.gets, psp.RefundRequest{EndToEndID: e2e, ID: id, AmountCents: 2_500})
}

const unitRefundID = "0123456789abcdef0123456789abcdef"

// unitRefund is the refund of the unit tests, of 2,500, in status.
func unitRefund(status string) *memRefunds {
	return &memRefunds{r: pix.Refund{ID: unitRefundID, EndToEndID: "E1234567820261129120000000000001", AccountID: "acc-1",
		AmountCents: 2_500, Status: status}}
}

// unitActivities are the activities over store and pspFake, registered on
// an activity environment of their own.
func unitActivities(store refund.ActivityStore, pspFake psp.RefundClient) (*refund.Activities, *testsuite.TestActivityEnvironment) {
	a := &refund.Activities{Store: store, PSP: pspFake, Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))}
	return a, sagatest.Activities(a)
}

// refundUnit is the unit refund in status, and the activities over it and
// pspFake.
func refundUnit(status string, pspFake psp.RefundClient) (*memRefunds, *testsuite.TestActivityEnvironment) {
	store := unitRefund(status)
	_, env := unitActivities(store, pspFake)
	return store, env
}

var unitRef = refund.Ref{RefundID: unitRefundID}

// act names the activities (never called).
var act *refund.Activities

// failsWith runs activity on ref, the unit refund in status, against
// pspFake, and requires its failure of type want; the store, for the test
// to check what did not move.
func failsWith(t *testing.T, want string, activity any, ref refund.Ref, status string, pspFake psp.RefundClient) *memRefunds {
	t.Helper()
	store, env := refundUnit(status, pspFake)
	_, err := env.ExecuteActivity(activity, ref)
	require.Equal(t, want, sagatest.ErrorType(t, err))
	return store
}

func TestRequestRefundDecisions(t *testing.T) {
	t.Run("in process is recorded as requested", func(t *testing.T) {
		fake := &scriptedRefundPSP{puts: []refundAnswer{{status: psp.RefundInProcessing}}}
		store, env := refundUnit(pix.RefundDebited, fake)
		st, err := sagatest.Run[refund.State](t, env, act.RequestRefund, unitRef)
		require.NoError(t, err)
		require.Equal(t, string(psp.RefundInProcessing), st.Status)
		require.Equal(t, pix.RefundRequested, store.r.Status)
		require.Equal(t, "D12345678202611291200abcdef12345", *store.r.RtrID)
	})
	t.Run("a final answer is confirmed by the record", func(t *testing.T) {
		fake := &scriptedRefundPSP{puts: []refundAnswer{{status: psp.RefundNotDone, reason: "x"}}, gets: []refundAnswer{{status: psp.RefundInProcessing}}}
		store, env := refundUnit(pix.RefundDebited, fake)
		st, err := sagatest.Run[refund.State](t, env, act.RequestRefund, unitRef)
		require.NoError(t, err)
		require.Equal(t, string(psp.RefundInProcessing), st.Status, "the record says in process: nothing to reverse")
		require.Equal(t, 1, fake.Count("get"))
		require.Equal(t, pix.RefundRequested, store.r.Status)
	})
	t.Run("a confirmed refusal is left to the reversal", func(t *testing.T) {
		fake := &scriptedRefundPSP{puts: []refundAnswer{{status: psp.RefundNotDone}}, gets: []refundAnswer{{status: psp.RefundNotDone, reason: "conta encerrada"}}}
		store, env := refundUnit(pix.RefundDebited, fake)
		st, err := sagatest.Run[refund.State](t, env, act.RequestRefund, unitRef)
		require.NoError(t, err)
		require.Equal(t, string(psp.RefundNotDone), st.Status)
		require.Equal(t, "conta encerrada", st.Reason)
		require.Equal(t, []string{"requested"}, store.calls, "the PSP holds a record of it (kept with its rtrId); not reversed here")
	})
	for name, c := range map[string]struct {
		answer refundAnswer
		want   string
	}{
		"no answer":           {refundAnswer{err: fmt.Errorf("%w: http 503", psp.ErrTransient)}, activities.ErrTypePSPUnavailable},
		"credentials refused": {refundAnswer{err: &psp.RequestError{StatusCode: 401, Message: "unauthorized"}}, activities.ErrTypePSPRequestRefused},
		"our id is another's": {refundAnswer{err: &psp.RequestError{StatusCode: 409, Code: psp.CodeRefundIDReused}}, activities.ErrTypePSPRequestRefused},
		"another amount":      {refundAnswer{status: psp.RefundInProcessing, amount: 99}, refund.ErrTypePSPRefundMismatch},
	} {
		t.Run(name, func(t *testing.T) {
			store := failsWith(t, c.want, act.RequestRefund, unitRef, pix.RefundDebited, &scriptedRefundPSP{puts: []refundAnswer{c.answer}})
			require.Empty(t, store.calls, "nothing recorded, nothing reversed")
		})
	}
	t.Run("a final refund asks nothing", func(t *testing.T) {
		fake := &scriptedRefundPSP{}
		_, env := refundUnit(pix.RefundReturned, fake)
		st, err := sagatest.Run[refund.State](t, env, act.RequestRefund, unitRef)
		require.NoError(t, err)
		require.True(t, st.AlreadyFinal)
		require.Zero(t, fake.Count("put"))
	})
}

// The reversal moves money only on the PSP's own record of NAO_REALIZADO.
func TestReverseRefundDecisions(t *testing.T) {
	t.Run("not made: reversed", func(t *testing.T) {
		store, env := refundUnit(pix.RefundRequested, &scriptedRefundPSP{gets: []refundAnswer{{status: psp.RefundNotDone, reason: "conta encerrada"}}})
		_, err := env.ExecuteActivity(act.ReverseRefund, unitRef)
		require.NoError(t, err)
		require.Equal(t, 1, store.reversed)
		require.Equal(t, "conta encerrada", *store.r.FailureReason)
	})
	for name, c := range map[string]struct {
		answer refundAnswer
		want   string
	}{
		"in process":     {refundAnswer{status: psp.RefundInProcessing}, refund.ErrTypeReversalUnconfirmed},
		"returned":       {refundAnswer{status: psp.RefundReturned}, refund.ErrTypeReversalUnconfirmed},
		"no record":      {refundAnswer{err: fmt.Errorf("psp: %w", psp.ErrNotFound)}, refund.ErrTypePSPRefundUnknown},
		"no answer":      {refundAnswer{err: fmt.Errorf("%w: timeout", psp.ErrTransient)}, activities.ErrTypePSPUnavailable},
		"another amount": {refundAnswer{status: psp.RefundNotDone, amount: 1}, refund.ErrTypePSPRefundMismatch},
		"refused query":  {refundAnswer{err: &psp.RequestError{StatusCode: 403}}, activities.ErrTypePSPRequestRefused},
	} {
		t.Run(name, func(t *testing.T) {
			store := failsWith(t, c.want, act.ReverseRefund, unitRef, pix.RefundRequested, &scriptedRefundPSP{gets: []refundAnswer{c.answer}})
			require.Zero(t, store.reversed, "never reversed on a guess")
		})
	}
	t.Run("reversed already: a retry asks nothing", func(t *testing.T) {
		fake := &scriptedRefundPSP{}
		store, env := refundUnit(pix.RefundReversed, fake)
		_, err := env.ExecuteActivity(act.ReverseRefund, unitRef)
		require.NoError(t, err)
		require.Zero(t, fake.Count("get"))
		require.Empty(t, store.calls)
	})
	t.Run("returned: final, never credited back", func(t *testing.T) {
		store := failsWith(t, pix.TemporalType(pix.ErrRefundFinal), act.ReverseRefund, unitRef, pix.RefundReturned, &scriptedRefundPSP{gets: []refundAnswer{{status: psp.RefundNotDone}}})
		require.Zero(t, store.reversed)
	})
}

func TestCheckRefundReportsTheRecord(t *testing.T) {
	_, env := refundUnit(pix.RefundRequested, &scriptedRefundPSP{gets: []refundAnswer{{status: psp.RefundReturned}}})
	st, err := sagatest.Run[refund.State](t, env, act.CheckRefund, unitRef)
	require.NoError(t, err)
	require.Equal(t, string(psp.RefundReturned), st.Status)
}

// A PUT the PSP refuses (400 PixDevolucaoInvalida) is decided by its
// record: no record is RECUSADA on the first ask (reversed later, after a
// second look), a record is followed on any ask; credentials and id
// conflicts never ask and never reverse.
func TestRequestRefundBusinessRefusal(t *testing.T) {
	invalid := &psp.RequestError{StatusCode: 400, Type: psp.ProblemPixDevolucaoInvalida, Message: "Devolução inválida: fora do prazo"}
	t.Run("no record: refused by the psp", func(t *testing.T) {
		fake := &scriptedRefundPSP{puts: []refundAnswer{{err: invalid}}, gets: []refundAnswer{{err: fmt.Errorf("psp: %w", psp.ErrNotFound)}}}
		store, env := refundUnit(pix.RefundDebited, fake)
		st, err := sagatest.Run[refund.State](t, env, act.RequestRefund, unitRef)
		require.NoError(t, err)
		require.Equal(t, refund.RefusedByPSP, st.Status)
		require.Equal(t, "the psp refused the devolução (http 400 PixDevolucaoInvalida): Devolução inválida: fora do prazo", st.Reason)
		require.Empty(t, store.calls, "nothing recorded, nothing reversed yet")
	})
	t.Run("a record: followed", func(t *testing.T) {
		fake := &scriptedRefundPSP{puts: []refundAnswer{{err: invalid}}, gets: []refundAnswer{{status: psp.RefundReturned}}}
		store, env := refundUnit(pix.RefundDebited, fake)
		st, err := sagatest.Run[refund.State](t, env, act.RequestRefund, unitRef)
		require.NoError(t, err)
		require.Equal(t, string(psp.RefundReturned), st.Status)
		require.Equal(t, pix.RefundRequested, store.r.Status)
	})
	t.Run("asked before (an earlier run's PUT, or one before the upgrade), no record: a human looks", func(t *testing.T) {
		fake := &scriptedRefundPSP{puts: []refundAnswer{{err: invalid}}, gets: []refundAnswer{{err: fmt.Errorf("psp: %w", psp.ErrNotFound)}}}
		store, env := refundUnit(pix.RefundDebited, fake)
		store.asked = true
		_, got := env.ExecuteActivity(act.RequestRefund, unitRef)
		require.Equal(t, activities.ErrTypePSPRequestRefused, sagatest.ErrorType(t, got))
		require.Equal(t, 1, fake.Count("get"), "the record is asked")
		require.Zero(t, store.reversed)
		require.Empty(t, store.calls)
	})
	t.Run("asked before, our devolução in the record (the first PUT made it, its answer lost): followed", func(t *testing.T) {
		fake := &scriptedRefundPSP{puts: []refundAnswer{{err: invalid}}, gets: []refundAnswer{{status: psp.RefundInProcessing}}}
		store, env := refundUnit(pix.RefundDebited, fake)
		store.asked = true
		st, err := sagatest.Run[refund.State](t, env, act.RequestRefund, unitRef)
		require.NoError(t, err)
		require.Equal(t, string(psp.RefundInProcessing), st.Status)
		require.Equal(t, pix.RefundRequested, store.r.Status)
	})
	t.Run("another devolução in the record: never acted on", func(t *testing.T) {
		fake := &scriptedRefundPSP{puts: []refundAnswer{{err: invalid}}, gets: []refundAnswer{{status: psp.RefundInProcessing, amount: 1}}}
		store := failsWith(t, refund.ErrTypePSPRefundMismatch, act.RequestRefund, unitRef, pix.RefundDebited, fake)
		require.Empty(t, store.calls)
	})
	for name, err := range map[string]error{
		"credentials":       &psp.RequestError{StatusCode: 403},
		"id conflict":       &psp.RequestError{StatusCode: 409, Code: psp.CodeRefundIDReused},
		"not sent":          &psp.RequestError{StatusCode: 0, Code: "invalid_request"},
		"a 422":             &psp.RequestError{StatusCode: 422, Type: psp.ProblemPixDevolucaoInvalida},
		"the invented code": &psp.RequestError{StatusCode: 400, Type: psp.ProblemTypePrefix + "DevolucaoOperacaoInvalida"},
		"token refused":     &psp.TokenError{StatusCode: 401, Code: "invalid_client"},
	} {
		t.Run(name, func(t *testing.T) {
			fake := &scriptedRefundPSP{puts: []refundAnswer{{err: err}}}
			store := failsWith(t, activities.ErrTypePSPRequestRefused, act.RequestRefund, unitRef, pix.RefundDebited, fake)
			require.Zero(t, fake.Count("get"))
			require.Empty(t, store.calls)
		})
	}
}

func TestReverseRefundRefusedByThePSP(t *testing.T) {
	refusedRef := refund.Ref{RefundID: unitRefundID, PSPRefused: true, Reason: "fora do prazo\u202e\u0000"}
	t.Run("still no record: reversed", func(t *testing.T) {
		store, env := refundUnit(pix.RefundDebited, &scriptedRefundPSP{gets: []refundAnswer{{err: fmt.Errorf("psp: %w", psp.ErrNotFound)}}})
		_, err := env.ExecuteActivity(act.ReverseRefund, refusedRef)
		require.NoError(t, err)
		require.Equal(t, 1, store.reversed)
		require.Equal(t, "fora do prazo", *store.r.FailureReason, "the psp's text, printable")
	})
	t.Run("a record showed up: followed, not reversed", func(t *testing.T) {
		store := failsWith(t, refund.ErrTypeReversalUnconfirmed, act.ReverseRefund, refusedRef, pix.RefundDebited, &scriptedRefundPSP{gets: []refundAnswer{{status: psp.RefundInProcessing}}})
		require.Zero(t, store.reversed)
	})
	t.Run("without the refusal, no record is never a reversal", func(t *testing.T) {
		store := failsWith(t, refund.ErrTypePSPRefundUnknown, act.ReverseRefund, unitRef, pix.RefundDebited, &scriptedRefundPSP{gets: []refundAnswer{{err: fmt.Errorf("psp: %w", psp.ErrNotFound)}}})
		require.Zero(t, store.reversed)
	})
}

// A refusal is never taken for the PSP's own unless nothing says it ever
// took the devolução (found by an attack review: two bare 404s a minute
// apart reversed a refund the PSP had accepted).
func TestRefusalAfterAnAcceptanceNeedsAHuman(t *testing.T) {
	invalid := &psp.RequestError{StatusCode: 400, Type: psp.ProblemPixDevolucaoInvalida}
	notFound := fmt.Errorf("psp: %w", psp.ErrNotFound)
	for name, c := range map[string]struct {
		status string
		rtrID  bool
		err    error
		gets   int // the record asked: always after PixDevolucaoInvalida
	}{
		"requested already":             {pix.RefundRequested, true, invalid, 1},
		"an rtr_id recorded":            {pix.RefundDebited, true, invalid, 1},
		"a bare 404":                    {pix.RefundDebited, false, &psp.RequestError{StatusCode: 404, Message: "<html>not found</html>"}, 0},
		"a 400 without the PSP's error": {pix.RefundDebited, false, &psp.RequestError{StatusCode: 400, Message: "<html>bad request</html>"}, 0},
	} {
		t.Run(name, func(t *testing.T) {
			fake := &scriptedRefundPSP{puts: []refundAnswer{{err: c.err}}, gets: []refundAnswer{{err: notFound}}}
			store, env := refundUnit(c.status, fake)
			if c.rtrID {
				rtr := "D12345678202611291200abcdef12345"
				store.r.RtrID = &rtr
			}
			_, err := env.ExecuteActivity(act.RequestRefund, unitRef)
			require.Equal(t, activities.ErrTypePSPRequestRefused, sagatest.ErrorType(t, err))
			require.Equal(t, c.gets, fake.Count("get"), "no record leads nowhere: a human must look")
			require.Empty(t, store.calls)
		})
	}
}

// A later run's first attempt is no proof that the PSP never took the
// devolução: an earlier run's PUT may have reached it (found by an attack
// review: a lagging GET and a 400 on the next run reversed a devolução the
// PSP had made). And the rtrId of an answer is kept even when its
// confirmation fails.
func TestRefusalOnALaterRunNeedsAHuman(t *testing.T) {
	// Run 1: DEVOLVIDO with an rtrId, then the confirming GET lags (404).
	fake := &scriptedRefundPSP{puts: []refundAnswer{{status: psp.RefundReturned}}, gets: []refundAnswer{{err: fmt.Errorf("psp: %w", psp.ErrNotFound)}}}
	store := failsWith(t, refund.ErrTypePSPRefundUnknown, act.RequestRefund, unitRef, pix.RefundDebited, fake)
	require.NotNil(t, store.r.RtrID, "the PSP's rtrId is kept")
	require.Equal(t, pix.RefundRequested, store.r.Status)

	// Run 2 (a fresh activity environment: attempt 1 again): a 400 with the
	// PSP's code, no record: still a human's, never a reversal.
	fake2 := &scriptedRefundPSP{puts: []refundAnswer{{err: &psp.RequestError{StatusCode: 400, Type: psp.ProblemPixDevolucaoInvalida}}},
		gets: []refundAnswer{{err: fmt.Errorf("psp: %w", psp.ErrNotFound)}}}
	_, env2 := unitActivities(store, fake2)
	_, err := env2.ExecuteActivity(act.RequestRefund, unitRef)
	require.Equal(t, activities.ErrTypePSPRequestRefused, sagatest.ErrorType(t, err))
	require.Zero(t, store.reversed)

	// Even a row that looks untouched was asked before: the marker says so.
	store.r.Status, store.r.RtrID = pix.RefundDebited, nil
	_, err = env2.ExecuteActivity(act.RequestRefund, unitRef)
	require.Equal(t, activities.ErrTypePSPRequestRefused, sagatest.ErrorType(t, err))
	require.Zero(t, store.reversed, "no record, asked before: never RECUSADA")
}

// lateRefusalPSP is scriptedRefundPSP whose GET first runs beforeGet: what
// another attempt does between this one's PUT and its decision.
type lateRefusalPSP struct {
	*scriptedRefundPSP
	beforeGet func()
}

func (p lateRefusalPSP) RefundStatus(ctx context.Context, e2e, id string) (psp.RefundResult, error) {
	p.beforeGet()
	return p.scriptedRefundPSP.RefundStatus(ctx, e2e, id)
}

// Found by an attack review: attempt A's first PUT is refused and its GET
// finds no record; meanwhile attempt B (an overlapping retry, or a run
// started when A's timed out) asks again and sends its PUT, which may make
// the devolução and lose its answer. A's refusal no longer proves that the
// PSP never took it: A is a refused request (counted, retried, a human
// looks), nothing recorded, never RECUSADA, never reversed; the next run
// asks again and, not the first ask, is a human's too. A refusal recorded
// before B's ask stops standing at it: the reversal on it is refused.
func TestRefusalAfterALaterAskIsNeverReversed(t *testing.T) {
	invalid := &psp.RequestError{StatusCode: 400, Type: psp.ProblemPixDevolucaoInvalida}
	notFound := fmt.Errorf("psp: %w", psp.ErrNotFound)
	t.Run("asked again before the refusal is recorded", func(t *testing.T) {
		fake := &scriptedRefundPSP{puts: []refundAnswer{{err: invalid}}, gets: []refundAnswer{{err: notFound}}}
		store := unitRefund(pix.RefundDebited)
		askedAgain := false
		pspFake := lateRefusalPSP{fake, func() {
			if !askedAgain { // attempt B, just before its PUT
				askedAgain = true
				_, _ = store.MarkRefundAsked(context.Background(), unitRefundID)
			}
		}}
		a, env := unitActivities(store, pspFake)

		_, err := env.ExecuteActivity(a.RequestRefund, unitRef)
		require.Equal(t, activities.ErrTypePSPRequestRefused, sagatest.ErrorType(t, err), "the late refusal is no refusal of the devolução")
		require.Nil(t, store.refusal, "not recorded")
		_, err = env.ExecuteActivity(a.RequestRefund, unitRef)
		require.Equal(t, activities.ErrTypePSPRequestRefused, sagatest.ErrorType(t, err), "the next run asks again: not the first ask")
		require.Equal(t, 2, fake.Count("put"))
		require.Zero(t, store.reversed)
		require.Equal(t, pix.RefundDebited, store.r.Status, "open")
	})
	t.Run("asked again after the refusal is recorded", func(t *testing.T) {
		fake := &scriptedRefundPSP{puts: []refundAnswer{{err: invalid}}, gets: []refundAnswer{{err: notFound}}}
		store, env := refundUnit(pix.RefundDebited, fake)
		st, err := sagatest.Run[refund.State](t, env, act.RequestRefund, unitRef)
		require.NoError(t, err)
		require.Equal(t, refund.RefusedByPSP, st.Status)

		_, _ = store.MarkRefundAsked(context.Background(), unitRefundID) // attempt B
		_, err = env.ExecuteActivity(act.ReverseRefund,
			refund.Ref{RefundID: unitRefundID, PSPRefused: true, Reason: st.Reason})
		require.Equal(t, pix.TemporalType(pix.ErrRefundFinal), sagatest.ErrorType(t, err))
		require.Zero(t, store.reversed)
	})
}
