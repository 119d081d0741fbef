package med_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/pixbank/pix/internal/dict"
	"github.com/pixbank/pix/saga/med"
)

// fakeDICT keeps one report and its refund requests as the DICT would,
// and can lose the answer of its next write (done, then "unknown"), refuse
// its next call, or rate-limit it.
type fakeDICT struct {
	mu      sync.Mutex
	report  dict.InfractionReport
	refunds map[string]dict.Refund
	// sent counts the writes the DICT did, by operation.
	sent map[string]int
	// loseNext loses the answer of the next write; refuseNext answers the
	// next call with it; limitNext answers the next call 429.
	loseNext   bool
	refuseNext error
	limitNext  time.Duration
	// ops are the calls made, in order.
	ops []string
	// refundQuery is the last listRefund's query.
	refundQuery dict.RefundQuery
	// malformedRefunds are refund requests listed that are not the
	// specification's: handed to the query's Malformed, or the walk stops.
	malformedRefunds []dict.MalformedItem
	// invalidCloses answers that many closes of an OPEN refund request
	// RefundOperationInvalid (a DICT that refuses the close for a status
	// that allows it).
	invalidCloses int
}

func newFakeDICT(r med.Report) *fakeDICT {
	return &fakeDICT{report: dict.InfractionReport{ID: r.ID.String(), TransactionID: r.EndToEndID, Status: dict.ReportOpen,
		LastModified: time.Now()}, refunds: map[string]dict.Refund{}, sent: map[string]int{}}
}

var errLost = fmt.Errorf("dict: answer lost: %w", dict.ErrUnknownOutcome)

func (d *fakeDICT) answer(op string, write bool) error {
	d.ops = append(d.ops, op)
	switch {
	case d.limitNext > 0:
		wait := d.limitNext
		d.limitNext = 0
		return &dict.ProblemError{Operation: op, StatusCode: http.StatusTooManyRequests, RetryAfter: wait}
	case d.refuseNext != nil:
		err := d.refuseNext
		d.refuseNext = nil
		return err
	}
	return nil
}

// wrote records a write the DICT did, and loses its answer when told to.
func (d *fakeDICT) wrote(op string) error {
	d.sent[op]++
	d.report.LastModified = time.Now()
	if d.loseNext {
		d.loseNext = false
		return errLost
	}
	return nil
}

func (d *fakeDICT) GetInfractionReport(_ context.Context, _ string) (dict.InfractionReport, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.report, d.answer("getInfractionReport", false)
}

func (d *fakeDICT) AcknowledgeInfractionReport(_ context.Context, _ string) (dict.InfractionReport, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.answer("acknowledgeInfractionReport", true); err != nil {
		return dict.InfractionReport{}, err
	}
	if d.report.Status != dict.ReportOpen && d.report.Status != dict.ReportAcknowledged {
		return dict.InfractionReport{}, invalid(dict.ErrInfractionReportOperationInvalid)
	}
	d.report.Status = dict.ReportAcknowledged
	return d.report, d.wrote("acknowledge")
}

func (d *fakeDICT) CloseInfractionReport(_ context.Context, _ string, result dict.AnalysisResult, details string) (dict.InfractionReport, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.answer("closeInfractionReport", true); err != nil {
		return dict.InfractionReport{}, err
	}
	if d.report.Status == dict.ReportClosed && d.report.AnalysisResult == result && d.report.AnalysisDetails == dict.NormalizeDetails(details) {
		d.sent["close"]++ // the same close again: the first answer (the specification's idempotence)
		return d.report, nil
	}
	if d.report.Status != dict.ReportAcknowledged {
		return dict.InfractionReport{}, invalid(dict.ErrInfractionReportOperationInvalid)
	}
	d.report.Status, d.report.AnalysisResult, d.report.AnalysisDetails = dict.ReportClosed, result, dict.NormalizeDetails(details)
	return d.report, d.wrote("close")
}

func (d *fakeDICT) GetRefund(_ context.Context, id string) (dict.Refund, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	r, ok := d.refunds[id]
	if err := d.answer("getRefund", false); err != nil {
		return dict.Refund{}, err
	}
	if !ok {
		return dict.Refund{}, notFound()
	}
	return r, nil
}

func (d *fakeDICT) WalkRefunds(_ context.Context, q dict.RefundQuery, fn func(dict.Refund) error) (time.Time, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.refundQuery = q
	if err := d.answer("listRefund", false); err != nil {
		return time.Time{}, err
	}
	for _, m := range d.malformedRefunds {
		if q.Malformed == nil {
			return time.Time{}, m
		}
		if err := q.Malformed(m); err != nil {
			return time.Time{}, err
		}
	}
	for _, r := range d.refunds {
		if len(q.Status) > 0 && !slices.Contains(q.Status, r.Status) {
			continue
		}
		if err := fn(r); err != nil {
			return time.Time{}, err
		}
	}
	return time.Now(), nil
}

func (d *fakeDICT) CloseRefund(_ context.Context, id string, c dict.RefundClosing) (dict.Refund, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.answer("closeRefund", true); err != nil {
		return dict.Refund{}, err
	}
	r := d.refunds[id]
	if r.Status != dict.RefundOpen || d.invalidCloses > 0 {
		d.invalidCloses--
		return dict.Refund{}, invalid(dict.ErrRefundOperationInvalid)
	}
	r.Status, r.AnalysisResult, r.RefundTransactionID, r.AnalysisDetails = dict.RefundClosed, c.Result, c.RefundTransactionID, dict.NormalizeDetails(c.Details)
	r.RefundRejectionReason, r.LastModified = c.RejectionReason, time.Now()
	d.refunds[id] = r
	return r, d.wrote("closeRefund")
}

// notFound is the DICT's signed answer that it has no such object (for us).
func notFound() error {
	return &dict.ProblemError{StatusCode: http.StatusNotFound, Type: dict.ErrNotFound.Type(), Problem: dict.ErrNotFound, Signed: true}
}

// invalid is the DICT's signed refusal of an operation its object's status
// does not allow.
func invalid(p *dict.Problem) error {
	return &dict.ProblemError{StatusCode: http.StatusBadRequest, Type: p.Type(), Problem: p, Signed: true}
}

type activityRun struct {
	f    *fixture
	dict *fakeDICT
	acts *med.Activities
	env  *testsuite.TestActivityEnvironment
}

func newActivityRun(t *testing.T, f *fixture, r med.Report) *activityRun {
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	d := newFakeDICT(r)
	acts := &med.Activities{Store: f.store, DICT: d, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	env.RegisterActivity(acts)
	return &activityRun{f: f, dict: d, acts: acts, env: env}
}

// run runs the activity fn on r (a first attempt: what reads the DICT back
// is what the report shows, not the attempt).
func (a *activityRun) run(fn any, r med.Report) (med.Report, error) {
	v, err := a.env.ExecuteActivity(fn, r)
	if err != nil {
		return med.Report{}, err
	}
	var out med.Report
	require.NoError(a.f.t, v.Get(&out))
	return out, nil
}

func (a *activityRun) current(id med.Report) med.Report {
	r, err := a.f.store.Get(context.Background(), id.ID)
	require.NoError(a.f.t, err)
	return r
}

// An acknowledgement whose answer was lost: the retry reads the report
// back, finds it ACKNOWLEDGED, and records it without sending again.
func TestALostAcknowledgementIsReadBack(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	c := f.credit(10_000, 0)
	r := f.intake(report(c.EndToEndID, dict.ReportOpen, time.Now().Add(-time.Hour)))
	r = f.step(f.store.Hold(ctx, r))
	a := newActivityRun(t, f, r)
	a.dict.loseNext = true
	_, err := a.run(a.acts.AcknowledgeReport, r)
	require.Error(t, err)
	require.Equal(t, med.StatusHeld, a.current(r).Status, "nothing recorded on an unknown outcome")
	out, err := a.run(a.acts.AcknowledgeReport, r)
	require.NoError(t, err)
	require.Equal(t, med.StatusAcknowledged, out.Status)
	require.Equal(t, 1, a.dict.sent["acknowledge"], "acknowledged once")
	// A late retry at the old generation sends nothing.
	again, err := a.run(a.acts.AcknowledgeReport, r)
	require.NoError(t, err)
	require.Equal(t, out.Gen, again.Gen)
	require.Equal(t, 1, a.dict.sent["acknowledge"])
}

// analysed is a report acknowledged and analysed as result, with the
// activities and the DICT that acknowledged it.
func analysed(t *testing.T, f *fixture, result dict.AnalysisResult) (*activityRun, med.Report) {
	ctx := context.Background()
	c := f.credit(10_000, 0)
	r := f.intake(report(c.EndToEndID, dict.ReportOpen, time.Now().Add(-time.Hour)))
	r = f.step(f.store.Hold(ctx, r))
	a := newActivityRun(t, f, r)
	r, err := a.run(a.acts.AcknowledgeReport, r)
	require.NoError(t, err)
	f.step(f.store.Analyse(ctx, r.ID, result, "análise\r\nconcluída", "operator-1"))
	return a, a.current(r)
}

// A close whose answer was lost: the retry reads back CLOSED with our
// analysis and records it, sending nothing again.
func TestALostCloseIsReadBack(t *testing.T) {
	f := newFixture(t)
	a, r := analysed(t, f, dict.Agreed)
	a.dict.loseNext = true
	_, err := a.run(a.acts.CloseReport, r)
	require.Error(t, err)
	require.Equal(t, med.StatusAnalysed, a.current(r).Status)
	out, err := a.run(a.acts.CloseReport, r)
	require.NoError(t, err)
	require.Equal(t, med.StatusAwaitingRequest, out.Status)
	require.Equal(t, 1, a.dict.sent["close"])
}

// A close read back CANCELLED (its reporter cancelled it meanwhile): the
// cancel is recorded, nothing sent; the run then cancels.
func TestACloseReadBackCancelled(t *testing.T) {
	f := newFixture(t)
	a, r := analysed(t, f, dict.Agreed)
	a.dict.report.Status, a.dict.report.LastModified = dict.ReportCancelled, time.Now().Add(time.Minute)
	out, err := a.run(a.acts.CloseReport, r)
	require.NoError(t, err)
	require.True(t, out.Cancelled())
	require.Equal(t, med.StepCancel, med.Next(out, time.Now()))
	require.Zero(t, a.dict.sent["close"])
}

// A close read back CLOSED with another result is not ours to redo: the
// run stops, visibly.
func TestACloseReadBackOtherwiseStops(t *testing.T) {
	f := newFixture(t)
	a, r := analysed(t, f, dict.Agreed)
	a.dict.report.Status, a.dict.report.AnalysisResult = dict.ReportClosed, dict.Disagreed
	_, err := a.run(a.acts.CloseReport, r)
	var app *temporal.ApplicationError
	require.ErrorAs(t, err, &app)
	require.Equal(t, med.StoppedType, app.Type())
	require.NotNil(t, a.current(r).DICTProblem)
	require.Equal(t, med.StatusAnalysed, a.current(r).Status)
}

// A refusal of the DICT (signed) stops the run visibly, never retried;
// a 429 is retried after the DICT's Retry-After.
func TestRefusedStopsAndRateLimitedWaits(t *testing.T) {
	f := newFixture(t)
	a, r := analysed(t, f, dict.Disagreed)
	a.dict.limitNext = 7 * time.Second
	_, err := a.run(a.acts.CloseReport, r)
	var app *temporal.ApplicationError
	require.ErrorAs(t, err, &app)
	require.Equal(t, med.RateLimitedType, app.Type())
	require.Equal(t, 7*time.Second, app.NextRetryDelay())
	require.False(t, app.NonRetryable())
	require.Nil(t, a.current(r).DICTProblem)

	a.dict.refuseNext = &dict.ProblemError{StatusCode: http.StatusForbidden, Type: dict.ErrForbidden.Type(), Problem: dict.ErrForbidden, Signed: true}
	stops := testutil.ToFloat64(med.DICTStopped)
	_, err = a.run(a.acts.CloseReport, r)
	stoppedWith(t, a, r, err, med.ProblemRefused, "Forbidden")
	require.Zero(t, a.dict.sent["close"])
	// A DICT problem, not a step awaited at the PSP (psp_cue_test.go).
	counts := openCounts(t, f)
	require.EqualValues(t, 1, counts.DICTProblems)
	require.Zero(t, counts.PSPActionsAwaited)
	require.Zero(t, counts.PSPActionAwaitedFor)
	require.Equal(t, stops+1, testutil.ToFloat64(med.DICTStopped))

	// Tried again (after ProblemRetryAfter), it closes, and the problem is
	// cleared.
	out, err := a.run(a.acts.CloseReport, a.current(r))
	require.NoError(t, err)
	require.Equal(t, med.StatusEnded, out.Status)
	require.Nil(t, out.DICTProblem)
}

// A refund request's close whose answer was lost: read back CLOSED with
// our closing (TOTALLY_ACCEPTED, the devolução's rtrId), recorded, sent once.
func TestALostRefundCloseIsReadBack(t *testing.T) {
	f := newFixture(t)
	a, r := analysed(t, f, dict.Agreed)
	r, err := a.run(a.acts.CloseReport, r)
	require.NoError(t, err)
	req := request(r, 10_000, dict.RefundOpen)
	a.dict.refunds[req.ID] = req
	r = f.returnedAndSettled(req, "D12345678202612061200abcdefghijk")
	require.Equal(t, med.StepCloseRefund, med.Next(r, time.Now()))
	a.dict.loseNext = true
	_, err = a.run(a.acts.CloseRefundRequest, r)
	require.Error(t, err)
	require.Nil(t, a.current(r).RefundClosedAt)
	out, err := a.run(a.acts.CloseRefundRequest, r)
	require.NoError(t, err)
	require.NotNil(t, out.RefundClosedAt)
	require.Equal(t, "D12345678202612061200abcdefghijk", *out.RefundClosedRtrID)
	require.Equal(t, 1, a.dict.sent["closeRefund"])
	require.Equal(t, dict.TotallyAccepted, a.dict.refunds[req.ID].AnalysisResult)
	require.Equal(t, med.StepFinish, med.Next(out, time.Now()))
}

// opsSince are the calls made after the first n.
func (d *fakeDICT) opsSince(n int) []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.ops[n:]...)
}

// A write whose answer was lost is read back before it is sent again by
// whoever finds it marked sent, whatever its attempt: here each time a
// first attempt, as after a worker's stop or in a new run (the retry's
// attempt number is not what tells).
func TestAWriteMarkedSentIsReadBackWhateverTheAttempt(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	c := f.credit(10_000, 0)
	r := f.intake(report(c.EndToEndID, dict.ReportOpen, time.Now().Add(-time.Hour)))
	r = f.step(f.store.Hold(ctx, r))
	a := newActivityRun(t, f, r)

	a.dict.loseNext = true
	_, err := a.run(a.acts.AcknowledgeReport, r)
	require.Error(t, err)
	require.NotNil(t, a.current(r).AcknowledgeSentAt, "marked before it was sent")
	n := len(a.dict.opsSince(0))
	r, err = a.run(a.acts.AcknowledgeReport, a.current(r))
	require.NoError(t, err)
	require.Equal(t, med.StatusAcknowledged, r.Status)
	require.Equal(t, []string{"getInfractionReport"}, a.dict.opsSince(n), "read back, not sent again")
	require.Equal(t, 1, a.dict.sent["acknowledge"])

	f.step(f.store.Analyse(ctx, r.ID, dict.Agreed, "fraude", "operator-1"))
	r = a.current(r)
	a.dict.loseNext = true
	_, err = a.run(a.acts.CloseReport, r)
	require.Error(t, err)
	n = len(a.dict.opsSince(0))
	r, err = a.run(a.acts.CloseReport, a.current(r))
	require.NoError(t, err)
	require.Equal(t, med.StatusAwaitingRequest, r.Status)
	require.Equal(t, []string{"getInfractionReport"}, a.dict.opsSince(n), "read back, not sent again")
	require.Equal(t, 1, a.dict.sent["close"])

	req := request(r, 10_000, dict.RefundOpen)
	a.dict.refunds[req.ID] = req
	r = f.returnedAndSettled(req, "D12345678202612061200abcdefghijk")
	a.dict.loseNext = true
	_, err = a.run(a.acts.CloseRefundRequest, r)
	require.Error(t, err)
	n = len(a.dict.opsSince(0))
	r, err = a.run(a.acts.CloseRefundRequest, a.current(r))
	require.NoError(t, err)
	require.NotNil(t, r.RefundClosedAt)
	require.Equal(t, []string{"getRefund"}, a.dict.opsSince(n), "read back, not sent again")
	require.Equal(t, 1, a.dict.sent["closeRefund"])
}

// The expiry of the 72 hours reads the DICT back: a request made in time
// but not taken in yet (the lister lags) is found, taken, and returned,
// never released on our table's word; with none listed, released; a list
// read before the request's time plus ExpiryCovered (the lists' lag and
// the DICT's clock skew) proves nothing.
func TestTheExpiryReadsTheDICTBack(t *testing.T) {
	f := newFixture(t)
	a, r := analysed(t, f, dict.Agreed)
	r, err := a.run(a.acts.CloseReport, r)
	require.NoError(t, err)
	req := request(r, 10_000, dict.RefundOpen)
	a.dict.refunds[req.ID] = req
	a.acts.Store = f.store.WithClock(func() time.Time { return r.RequestDueAt.Add(med.ListLag + time.Second) })
	out, err := a.run(a.acts.ExpireRequest, r)
	require.NoError(t, err)
	require.Equal(t, med.StatusAwaitingRequest, out.Status, "not released")
	require.True(t, out.RequestOpen())
	require.Equal(t, req.ID, out.RefundRequestID.String())
	require.Equal(t, med.StepReturn, med.Next(out, time.Now()))
	f.requireMoney(*r.AccountID, 10_000, 10_000)

	// None listed: released, but not on a list read too early.
	a2, r2 := analysed(t, f, dict.Agreed)
	r2, err = a2.run(a2.acts.CloseReport, r2)
	require.NoError(t, err)
	a2.acts.Store = f.store.WithClock(func() time.Time { return r2.RequestDueAt.Add(med.ExpiryCovered - time.Second) })
	_, err = a2.run(a2.acts.ExpireRequest, r2)
	require.Error(t, err, "listed before the request's time, the lists' lag and the DICT's clock skew")
	require.Equal(t, med.StatusAwaitingRequest, a2.current(r2).Status)
	a2.acts.Store = f.store.WithClock(func() time.Time { return r2.RequestDueAt.Add(med.ExpiryCovered) })
	done, err := a2.run(a2.acts.ExpireRequest, r2)
	require.NoError(t, err)
	require.Equal(t, med.EndReleased, *done.EndCause)
	require.Contains(t, a2.dict.ops, "listRefund")
}

// LoadReport answers the report (a store's nil error is no failure: the
// run's first step read it as a technical failure, retried for ever).
func TestLoadReportAnswersTheReport(t *testing.T) {
	f := newFixture(t)
	c := f.credit(10_000, 0)
	r := f.intake(report(c.EndToEndID, dict.ReportOpen, time.Now()))
	a := newActivityRun(t, f, r)
	v, err := a.env.ExecuteActivity(a.acts.LoadReport, r.ID.String())
	require.NoError(t, err)
	var out med.Report
	require.NoError(t, v.Get(&out))
	require.Equal(t, r.ID, out.ID)
}

// A read-back the client could not read as the specification writes it
// (dict.MalformedItem of a single answer: a Status it does not have, an
// element required and missing) stops the run visibly (dict_malformed),
// nothing decided on it: the report's close and the refund request's close
// stay to do, the hold held, nothing released or returned. Before, it was
// an unknown outcome, retried without a word (or, with the typed decoding,
// a copy with a Status no enumeration has decided on).
func TestAMalformedReadBackStopsVisibly(t *testing.T) {
	f := newFixture(t)
	requireStopped := func(a *activityRun, r med.Report, err error) {
		t.Helper()
		var app *temporal.ApplicationError
		require.ErrorAs(t, err, &app)
		require.Equal(t, med.StoppedType, app.Type())
		cur := a.current(r)
		require.NotNil(t, cur.DICTProblem)
		require.Contains(t, *cur.DICTProblem, med.ProblemMalformed)
	}
	a, r := analysed(t, f, dict.Agreed)
	a.dict.loseNext = true
	_, err := a.run(a.acts.CloseReport, r)
	require.Error(t, err)
	a.dict.refuseNext = dict.MalformedItem{Op: "getInfractionReport", ID: r.ID.String(), Field: "Status", Reason: `"SUSPENDED" is none of the statuses`}
	_, err = a.run(a.acts.CloseReport, a.current(r))
	requireStopped(a, r, err)
	require.Equal(t, med.StatusAnalysed, a.current(r).Status, "not closed on a copy it could not read")
	require.EqualValues(t, 10_000, a.current(r).HeldCents)
	r, err = a.run(a.acts.CloseReport, a.current(r))
	require.NoError(t, err, "read back again, as the specification writes it")
	require.Equal(t, med.StatusAwaitingRequest, r.Status)
	require.Nil(t, r.DICTProblem)

	req := request(r, 10_000, dict.RefundOpen)
	a.dict.refunds[req.ID] = req
	r = f.returnedAndSettled(req, "D12345678202612061200abcdefghijk")
	a.dict.loseNext = true
	_, err = a.run(a.acts.CloseRefundRequest, r)
	require.Error(t, err)
	a.dict.refuseNext = dict.MalformedItem{Op: "getRefund", ID: req.ID, Field: "RefundAmount", Reason: "required, missing"}
	_, err = a.run(a.acts.CloseRefundRequest, a.current(r))
	requireStopped(a, r, err)
	require.Nil(t, a.current(r).RefundClosedAt, "not recorded closed on a copy it could not read")
	require.Equal(t, 1, a.dict.sent["closeRefund"])
}

// A kept request's close whose read-back is malformed records
// dict_malformed (migration 0057 takes the code), the request left OPEN
// and paging, nothing sent again on a copy the client could not read.
func TestAKeptCloseReadBackMalformedIsRecorded(t *testing.T) {
	f := newFixture(t)
	a, r, req := disagreedWithRequest(t, f)
	a.dict.loseNext = true
	require.Error(t, a.closeKept(r))
	a.dict.refuseNext = dict.MalformedItem{Op: "getRefund", ID: req.ID, Field: "Status", Reason: `"PENDING" is none of the statuses`}
	require.NoError(t, a.closeKept(r))
	q := f.kept(req.ID)
	require.Equal(t, "OPEN", q.DICTStatus)
	require.Nil(t, q.ClosedAt)
	require.NotNil(t, q.CloseProblem)
	require.Equal(t, med.ProblemMalformed, *q.CloseProblem)
	require.Equal(t, 1, a.dict.sent["closeRefund"])
}
