package med_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/pixbank/pix/internal/dict"
	"github.com/pixbank/pix/saga/med"
)

// start is the test clock's start: the runs below sleep days of it.
var start = time.Date(2026, 12, 6, 13, 0, 0, 0, time.UTC)

// stub stands for the saga's activities on the test clock: one report in
// memory, each activity the store's transition in short (the store's own
// are tested on PostgreSQL), every call recorded with its time.
type stub struct {
	mu  sync.Mutex
	env *testsuite.TestWorkflowEnvironment
	// now is the clock the calls are recorded by (the test clock's, or the
	// recording server's: time.Now).
	now func() time.Time
	// requestWindow is how long an AGREED close waits for the request
	// (med.RequestWindow, shorter on the recording server).
	requestWindow time.Duration
	r             med.Report
	calls         []call
	// credits is what arrives for a return in parts, per try (0: nothing).
	credits []int64
	// stops makes the activity named stop at the DICT this many times.
	stops map[string]int
	// moved, when set, changes the report from outside the run (set) once,
	// just after a stop is noted.
	moved func(r *med.Report)
	// dbBehind is how far the database's clock lags the run's: Finish
	// before return_until by it answers "not yet" (med.NotYetType), the
	// hold filled by fillAtNotYet at the first such answer.
	dbBehind     time.Duration
	fillAtNotYet int64
	notYets      int
	// noLeft: the "not yet" answers say no time left (no details).
	noLeft bool
	// closings are the refund request's closes sent.
	closings []dict.RefundClosing
}

type call struct {
	name string
	at   time.Time
}

func (s *stub) record(name string) { s.calls = append(s.calls, call{name, s.now().UTC()}) }

func (s *stub) called(name string) []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []time.Time
	for _, c := range s.calls {
		if c.name == name {
			out = append(out, c.at)
		}
	}
	return out
}

// change applies fn to the report when at is its generation, bumping it.
func (s *stub) change(name string, at med.Report, fn func(r *med.Report) bool) med.Report {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.record(name)
	if at.Gen == s.r.Gen && fn(&s.r) {
		s.r.Gen++
	}
	return s.r
}

// set changes the report from outside the run (an intake, an operator),
// then signals the run, as the store's callers do after their commit.
func (s *stub) set(fn func(r *med.Report)) {
	s.mu.Lock()
	fn(&s.r)
	s.r.Gen++
	s.mu.Unlock()
	if s.env != nil {
		s.env.SignalWorkflow(med.ChangedSignal, nil)
	}
}

func (s *stub) LoadReport(_ context.Context, _ string) (med.Report, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.record("LoadReport")
	return s.r, nil
}

func (s *stub) HoldReport(_ context.Context, at med.Report) (med.Report, error) {
	return s.change("HoldReport", at, func(r *med.Report) bool {
		r.Status, r.HeldCents, r.Holds = med.StatusHeld, *r.AmountCents, 1
		return true
	}), nil
}

func (s *stub) AcknowledgeReport(_ context.Context, at med.Report) (med.Report, error) {
	return s.change("AcknowledgeReport", at, func(r *med.Report) bool {
		r.Status, r.DICTStatus = med.StatusAcknowledged, string(dict.ReportAcknowledged)
		if r.AnalysisResult != nil {
			r.Status = med.StatusAnalysed
		}
		return true
	}), nil
}

// stop stops the activity name at the DICT while stops says so: the
// problem noted (a new generation), the run's error StoppedType with the
// generation that notes it (med.StopNote); then moved runs, a change by
// another actor (it signals the run) before the run reads the report.
func (s *stub) stop(name string) error {
	s.mu.Lock()
	if s.stops[name] == 0 {
		s.mu.Unlock()
		return nil
	}
	s.stops[name]--
	s.record(name)
	s.r.Gen++
	noted := s.r.Gen
	s.mu.Unlock()
	if s.moved != nil {
		s.set(s.moved)
		s.moved = nil
	}
	return temporal.NewNonRetryableApplicationError("refused", med.StoppedType, nil, med.StopNote{Gen: noted})
}

func (s *stub) CloseReport(_ context.Context, at med.Report) (med.Report, error) {
	if err := s.stop("CloseReport"); err != nil {
		return med.Report{}, err
	}
	return s.change("CloseReport", at, func(r *med.Report) bool {
		now := s.now()
		r.ClosedAt = &now
		if *r.AnalysisResult == string(dict.Disagreed) {
			r.Status, r.EndCause, r.HeldCents = med.StatusEnded, ptr(med.EndReleased), 0
			return true
		}
		r.Status, r.RequestDueAt = med.StatusAwaitingRequest, ptr(now.Add(s.requestWindow))
		return true
	}), nil
}

func (s *stub) CancelReport(_ context.Context, at med.Report) (med.Report, error) {
	return s.change("CancelReport", at, func(r *med.Report) bool {
		r.Status, r.EndCause, r.HeldCents = med.StatusEnded, ptr(med.EndCancelled), 0
		return true
	}), nil
}

func (s *stub) ExpireRequest(_ context.Context, at med.Report) (med.Report, error) {
	if err := s.stop("ExpireRequest"); err != nil {
		return med.Report{}, err
	}
	return s.change("ExpireRequest", at, func(r *med.Report) bool {
		r.Status, r.EndCause, r.HeldCents = med.StatusEnded, ptr(med.EndReleased), 0
		return true
	}), nil
}

func (s *stub) ReturnReport(_ context.Context, at med.Report) (med.Report, error) {
	return s.change("ReturnReport", at, func(r *med.Report) bool {
		if !s.now().Add(-s.dbBehind).Before(*r.ReturnUntil) {
			return false // past return_until by the database's clock: nothing changes
		}
		if r.HeldCents == 0 && len(s.credits) > 0 {
			r.HeldCents, s.credits = min(s.credits[0], r.Target()-r.ReturnedCents), s.credits[1:]
		}
		if r.HeldCents == 0 {
			changed := r.Status != med.StatusAwaitingCredit
			r.Status = med.StatusAwaitingCredit
			return changed
		}
		r.Status, r.RefundID = med.StatusReturning, ptr(uuid.NewString())
		return true
	}), nil
}

func (s *stub) SettleReport(_ context.Context, at med.Report) (med.Report, error) {
	return s.change("SettleReport", at, func(r *med.Report) bool {
		r.Status, r.RefundID = med.StatusAwaitingCredit, nil
		r.ReturnedCents += r.HeldCents
		r.HeldCents = 0
		r.Returns++
		if r.FirstRtrID == nil {
			r.FirstRtrID = ptr("D12345678202612061300abcdefghijk")
		}
		return true
	}), nil
}

// CloseRefundRequest closes the request as med.Closing says (sent, in
// closings); a close as the deadline closes it (NO_BALANCE) before
// return_until by the database's clock is its "not yet" (Store.MarkSent).
func (s *stub) CloseRefundRequest(_ context.Context, at med.Report) (med.Report, error) {
	if err := s.stop("CloseRefundRequest"); err != nil {
		return med.Report{}, err
	}
	s.mu.Lock()
	closing, db := med.Closing(s.r), s.now().Add(-s.dbBehind)
	if at.Gen == s.r.Gen && med.DeadlineClosing(closing) && db.Before(*s.r.ReturnUntil) && !med.RejectedAtTheDICT(s.r) {
		s.record("CloseRefundRequest")
		s.mu.Unlock()
		return med.Report{}, s.notYetError(s.r.ReturnUntil.Sub(db))
	}
	s.mu.Unlock()
	return s.change("CloseRefundRequest", at, func(r *med.Report) bool {
		now := s.now()
		r.RefundClosedAt = &now
		s.closings = append(s.closings, closing)
		return true
	}), nil
}

// CloseKeptRequests stands for the close of the requests a report kept as
// it ended (the store's and the DICT's, tested in kept_close_test.go).
func (s *stub) CloseKeptRequests(_ context.Context, _ med.Report) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.record("CloseKeptRequests")
	return nil
}

func (s *stub) FinishReport(_ context.Context, at med.Report) (med.Report, error) {
	if err := s.notYet(at); err != nil {
		return med.Report{}, err
	}
	return s.change("FinishReport", at, func(r *med.Report) bool {
		r.Status, r.EndCause = med.StatusEnded, ptr(med.EndReturned)
		if r.ReturnedCents < r.Target() {
			r.EndCause = ptr(med.EndReturnedInPart)
		}
		if r.ReturnedCents == 0 {
			r.EndCause = ptr(med.EndReleased)
		}
		return true
	}), nil
}

// notYet is the database's "not yet" of a Finish asked of a report
// returned in part before its return_until by the database's clock (the
// run's less dbBehind), the hold filled by fillAtNotYet at the first; nil
// otherwise.
func (s *stub) notYet(at med.Report) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	db := s.now().Add(-s.dbBehind)
	if at.Gen != s.r.Gen || s.r.ReturnedCents >= s.r.Target() || !db.Before(*s.r.ReturnUntil) || med.RejectedAtTheDICT(s.r) {
		return nil
	}
	s.record("FinishReport")
	if s.notYets++; s.notYets == 1 {
		s.r.HeldCents += s.fillAtNotYet
	}
	return s.notYetError(s.r.ReturnUntil.Sub(db))
}

// notYetError is the "not yet" (med.NotYetType) with the time left, or
// without it (noLeft).
func (s *stub) notYetError(left time.Duration) error {
	if s.noLeft {
		return temporal.NewApplicationError("not yet", med.NotYetType)
	}
	return temporal.NewApplicationErrorWithOptions("not yet", med.NotYetType,
		temporal.ApplicationErrorOptions{Details: []any{med.NotYet{Left: left}}})
}

func ptr[T any](v T) *T { return &v }

// received is a report of a PIX of 10,000 credited a day before start,
// reported at start.
func received() med.Report {
	credited := start.Add(-24 * time.Hour)
	return med.Report{ID: uuid.New(), EndToEndID: "E12345678202612051300abcdefghijk", AccountID: ptr("acc-1"),
		AmountCents: ptr(int64(10_000)), CreditedAt: &credited, DICTStatus: string(dict.ReportOpen),
		ReportedAt: start, Status: med.StatusReceived, AnalysisDueAt: start.Add(med.AnalysisWindow),
		ReturnUntil: ptr(credited.Add(med.ReturnWindow)), Gen: 1}
}

func newRun(t *testing.T, r med.Report) (*testsuite.TestWorkflowEnvironment, *stub) {
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	env.SetStartTime(start)
	env.RegisterWorkflowWithOptions(med.Workflow, workflow.RegisterOptions{Name: med.WorkflowName})
	s := &stub{env: env, now: env.Now, requestWindow: med.RequestWindow, r: r}
	env.RegisterActivity(s)
	return env, s
}

func analyse(s *stub, result dict.AnalysisResult) {
	s.set(func(r *med.Report) {
		r.AnalysisResult, r.AnalysisDetails = ptr(string(result)), ptr("")
		if r.Status == med.StatusAcknowledged {
			r.Status = med.StatusAnalysed
		}
	})
}

func result(t *testing.T, env *testsuite.TestWorkflowEnvironment) med.Report {
	t.Helper()
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	var out med.Report
	require.NoError(t, env.GetWorkflowResult(&out))
	return out
}

// The run holds and acknowledges at once, then waits for the operator's
// analysis past the 7 days without deciding anything alone; the analysis
// (DISAGREED) wakes it, and it closes and ends released.
func TestTheAnalysisIsAwaitedPastSevenDays(t *testing.T) {
	env, s := newRun(t, received())
	analysedAt := start.Add(med.AnalysisWindow + 36*time.Hour)
	env.RegisterDelayedCallback(func() { analyse(s, dict.Disagreed) }, analysedAt.Sub(start))

	env.ExecuteWorkflow(med.WorkflowName, med.Input{ID: s.r.ID.String()})

	out := result(t, env)
	require.Equal(t, med.EndReleased, *out.EndCause)
	require.Equal(t, []time.Time{start}, s.called("HoldReport"))
	require.Equal(t, []time.Time{start}, s.called("AcknowledgeReport"))
	closes := s.called("CloseReport")
	require.Len(t, closes, 1)
	require.False(t, closes[0].Before(analysedAt), "closed at %s, before the analysis", closes[0])
	require.Empty(t, s.called("ExpireRequest"))
	// Ended DISAGREED: the requests it kept are closed as it ends, once.
	require.Len(t, s.called("CloseKeptRequests"), 1)
}

// AGREED and no refund request: released by the run at the 72 hours after
// the close, not before.
func TestNoRequestReleasesAt72Hours(t *testing.T) {
	r := received()
	r.AnalysisResult, r.AnalysisDetails = ptr(string(dict.Agreed)), ptr("")
	env, s := newRun(t, r)

	env.ExecuteWorkflow(med.WorkflowName, med.Input{ID: r.ID.String()})

	out := result(t, env)
	require.Equal(t, med.EndReleased, *out.EndCause)
	expired := s.called("ExpireRequest")
	require.Len(t, expired, 1)
	require.False(t, expired[0].Before(out.RequestDueAt.Add(-time.Minute)), "released at %s, due %s", expired[0], out.RequestDueAt)
	require.Less(t, expired[0].Sub(*out.RequestDueAt), time.Minute)
	require.Empty(t, s.called("ReturnReport"))
	require.Empty(t, s.called("CloseKeptRequests"), "released at its 72 hours: nothing kept to close")
}

// An expiry at the 72 hours that stops at the DICT (its read back found
// an OPEN request the report can't take: dict_not_as_ours) waits for a
// signal or ProblemRetryAfter before it lists again, never at once: no
// hot loop of DICT lists.
func TestAStoppedExpiryWaits(t *testing.T) {
	r := received()
	r.AnalysisResult, r.AnalysisDetails = ptr(string(dict.Agreed)), ptr("")
	env, s := newRun(t, r)
	s.stops = map[string]int{"ExpireRequest": 2}

	env.ExecuteWorkflow(med.WorkflowName, med.Input{ID: r.ID.String()})

	out := result(t, env)
	require.Equal(t, med.EndReleased, *out.EndCause)
	expired := s.called("ExpireRequest")
	require.Len(t, expired, 3)
	for i := 1; i < len(expired); i++ {
		require.GreaterOrEqual(t, expired[i].Sub(expired[i-1]), med.ProblemRetryAfter, "try %d", i)
	}
}

// A refund request within the 72 hours: the run returns at once, follows
// the devolução to its end, closes the request, and ends returned.
func TestARequestIsReturnedAtOnce(t *testing.T) {
	r := received()
	r.AnalysisResult, r.AnalysisDetails = ptr(string(dict.Agreed)), ptr("")
	env, s := newRun(t, r)
	requestAt := 30 * time.Hour
	env.RegisterDelayedCallback(func() {
		s.set(func(r *med.Report) {
			r.RefundRequestID, r.RefundRequestCents, r.RefundRequestState = ptr(uuid.New()), ptr(int64(10_000)), ptr(string(dict.RefundOpen))
		})
	}, requestAt)

	env.ExecuteWorkflow(med.WorkflowName, med.Input{ID: r.ID.String()})

	out := result(t, env)
	require.Equal(t, med.EndReturned, *out.EndCause)
	returns := s.called("ReturnReport")
	require.Len(t, returns, 1)
	require.Less(t, returns[0].Sub(start.Add(requestAt)), time.Minute, "returned at once")
	require.Len(t, s.called("CloseRefundRequest"), 1)
	require.Empty(t, s.called("ExpireRequest"))
}

// Returned in part: what is left is held and returned as credits arrive;
// nothing more arriving, the run ends at the 90 days after the PIX,
// returned in part, continuing as new on the way (its history bounded).
func TestReturnsInPartsEndAt90Days(t *testing.T) {
	r := received()
	r.Status, r.DICTStatus = med.StatusAwaitingCredit, string(dict.ReportClosed)
	r.AnalysisResult = ptr(string(dict.Agreed))
	r.RefundRequestID, r.RefundRequestCents, r.RefundRequestState = ptr(uuid.New()), ptr(int64(10_000)), ptr(string(dict.RefundOpen))
	r.ReturnedCents, r.Returns, r.FirstRtrID = 3_000, 1, ptr("D12345678202612061300abcdefghijk")
	r.RefundClosedAt = ptr(start)
	// The 90 days end a few days from the start: the run's turns stay
	// under one history.
	r.ReturnUntil = ptr(start.Add(3 * 24 * time.Hour))
	env, s := newRun(t, r)
	s.credits = []int64{0, 0, 2_000, 0, 1_000}

	env.ExecuteWorkflow(med.WorkflowName, med.Input{ID: r.ID.String()})

	out := result(t, env)
	require.Equal(t, med.EndReturnedInPart, *out.EndCause)
	require.EqualValues(t, 6_000, out.ReturnedCents)
	finish := s.called("FinishReport")
	require.Len(t, finish, 1)
	require.False(t, finish[0].Before(r.ReturnUntil.Add(-time.Minute)), "ended at %s, before the 90 days", finish[0])
	tries := s.called("ReturnReport")
	for i := 1; i < len(tries); i++ {
		require.LessOrEqual(t, tries[i].Sub(tries[i-1]), med.CreditPoll+time.Minute, "a try at least every CreditPoll")
	}
}

// A part that fills in the last minute of the 90 days is returned, not
// released: the run tries the return on until return_until by its clock
// (Next's early tolerance asked Finish a minute early, and the Finish at
// return_until released what filled meanwhile). Seen failing on the old
// run (Finish asked at once, 30 s before return_until, 3,000 returned).
func TestAPartThatFillsInTheLastMinuteIsReturned(t *testing.T) {
	r := received()
	r.Status, r.DICTStatus = med.StatusAwaitingCredit, string(dict.ReportClosed)
	r.AnalysisResult = ptr(string(dict.Agreed))
	r.RefundRequestID, r.RefundRequestCents, r.RefundRequestState = ptr(uuid.New()), ptr(int64(10_000)), ptr(string(dict.RefundOpen))
	r.ReturnedCents, r.Returns, r.FirstRtrID, r.RefundClosedAt = 3_000, 1, ptr("D12345678202612061300abcdefghijk"), ptr(start)
	r.ReturnUntil = ptr(start.Add(30 * time.Second))
	env, s := newRun(t, r)
	env.RegisterDelayedCallback(func() {
		s.set(func(r *med.Report) { r.HeldCents = 2_000 }) // a credit fills the hold (FillsWake)
	}, 10*time.Second)

	env.ExecuteWorkflow(med.WorkflowName, med.Input{ID: r.ID.String()})

	out := result(t, env)
	finish := s.called("FinishReport")
	require.Len(t, finish, 1)
	require.False(t, finish[0].Before(*r.ReturnUntil), "Finish asked at %s, before return_until %s", finish[0], *r.ReturnUntil)
	require.EqualValues(t, 5_000, out.ReturnedCents, "the part filled in the last minute returned")
	require.Equal(t, med.EndReturnedInPart, *out.EndCause)
}

// A Finish the database's clock answers "not yet" (it lags the run's by a
// minute): the run returns on what fills then, and waits for credits until
// the time the answer says is left, then finishes (attack review r12
// LOW-1). The run before retried that Finish and released the part.
func TestAFinishNotYetReturnsOn(t *testing.T) {
	r := inParts()
	env, s := newRun(t, r)
	s.dbBehind, s.fillAtNotYet = time.Minute, 2_000

	env.ExecuteWorkflow(med.WorkflowName, med.Input{ID: r.ID.String()})

	out := result(t, env)
	require.EqualValues(t, 5_000, out.ReturnedCents, "the part filled within return_until by the database's clock returned")
	require.Equal(t, med.EndReturnedInPart, *out.EndCause)
	finish := s.called("FinishReport")
	require.Len(t, finish, 3, "not yet, not yet (the part returned), finished")
	require.False(t, finish[2].Before(r.ReturnUntil.Add(time.Minute)), "finished at %s, before return_until by the database's clock", finish[2])
	require.Less(t, finish[2].Sub(r.ReturnUntil.Add(time.Minute)), 10*time.Second, "finished as the time left passed")
}

// A request taken (or reopened) just before return_until, the run reaching
// it after (attack review r13 LOW): its Return changes nothing, and the run
// closes the request as the deadline closes it (NO_BALANCE), then ends the
// report released, never waiting on. Seen failing on the old run (its
// Return tried on past return_until, never ended: continued as new).
func TestARequestTakenTooLateEndsAsAtTheDeadline(t *testing.T) {
	r := received()
	r.Status, r.DICTStatus = med.StatusAwaitingRequest, string(dict.ReportClosed)
	r.AnalysisResult, r.HeldCents = ptr(string(dict.Agreed)), 10_000
	r.RequestDueAt = ptr(start.Add(-24 * time.Hour))
	r.RefundRequestID, r.RefundRequestCents, r.RefundRequestState = ptr(uuid.New()), ptr(int64(10_000)), ptr(string(dict.RefundOpen))
	r.ReturnUntil = ptr(start.Add(-time.Second))
	env, s := newRun(t, r)

	env.ExecuteWorkflow(med.WorkflowName, med.Input{ID: r.ID.String()})

	out := result(t, env)
	require.Equal(t, med.StatusEnded, out.Status)
	require.Equal(t, med.EndReleased, *out.EndCause)
	require.Len(t, s.called("CloseRefundRequest"), 1)
	require.Len(t, s.called("FinishReport"), 1)
	require.Empty(t, s.called("ReturnReport"), "nothing returned past return_until")
}

// A request taken between return_until by the database's clock and by the
// run's (the database a minute behind), its money held: the close as the
// deadline closes it (NO_BALANCE) is "not yet" by the database's clock, so
// the run returns the money and closes the request TOTALLY_ACCEPTED, never
// REJECTED (the review of 4409c89, MED-2). Seen failing on the old run (the
// close's "not yet" ended the run with its error).
func TestARequestTakenInTheClocksGapIsReturned(t *testing.T) {
	r := received()
	r.Status, r.DICTStatus = med.StatusAwaitingRequest, string(dict.ReportClosed)
	r.AnalysisResult, r.HeldCents = ptr(string(dict.Agreed)), 10_000
	r.RequestDueAt = ptr(start.Add(24 * time.Hour))
	r.ReturnUntil = ptr(start.Add(30 * time.Second))
	env, s := newRun(t, r)
	s.dbBehind = time.Minute
	env.RegisterDelayedCallback(func() {
		s.set(func(r *med.Report) { // taken at the database's return_until - 15 s
			r.RefundRequestID, r.RefundRequestCents, r.RefundRequestState = ptr(uuid.New()), ptr(int64(10_000)), ptr(string(dict.RefundOpen))
		})
	}, 45*time.Second)

	env.ExecuteWorkflow(med.WorkflowName, med.Input{ID: r.ID.String()})

	out := result(t, env)
	require.Equal(t, med.EndReturned, *out.EndCause)
	require.EqualValues(t, 10_000, out.ReturnedCents, "returned, not released")
	require.Len(t, s.closings, 1)
	require.Equal(t, dict.TotallyAccepted, s.closings[0].Result, "never closed REJECTED")
	returns, closes := s.called("ReturnReport"), s.called("CloseRefundRequest")
	require.NotEmpty(t, returns)
	require.Len(t, closes, 2, "not yet, then the accepted close")
	require.True(t, returns[0].Before(closes[1]), "returned before any close was sent")
}

// Ninety days of waiting for credits are more turns than one history
// takes: the run continues as new.
func TestAReturnInPartsContinuesAsNew(t *testing.T) {
	r := received()
	r.Status, r.AnalysisResult = med.StatusAwaitingCredit, ptr(string(dict.Agreed))
	r.RefundRequestID, r.RefundRequestCents, r.RefundRequestState = ptr(uuid.New()), ptr(int64(10_000)), ptr(string(dict.RefundOpen))
	r.ReturnedCents, r.Returns, r.FirstRtrID, r.RefundClosedAt = 3_000, 1, ptr("D12345678202612061300abcdefghijk"), ptr(start)
	env, _ := newRun(t, r)

	env.ExecuteWorkflow(med.WorkflowName, med.Input{ID: r.ID.String()})

	require.True(t, env.IsWorkflowCompleted())
	var cont *workflow.ContinueAsNewError
	require.ErrorAs(t, env.GetWorkflowError(), &cont)
}

// A close the DICT refused stops the run visibly: it waits, and tries
// again (reading back first) after ProblemRetryAfter, never at once.
func TestAStoppedCloseWaits(t *testing.T) {
	r := received()
	r.AnalysisResult, r.AnalysisDetails = ptr(string(dict.Disagreed)), ptr("")
	env, s := newRun(t, r)
	s.stops = map[string]int{"CloseReport": 1}

	env.ExecuteWorkflow(med.WorkflowName, med.Input{ID: r.ID.String()})

	out := result(t, env)
	require.Equal(t, med.EndReleased, *out.EndCause)
	closes := s.called("CloseReport")
	require.Len(t, closes, 2)
	require.GreaterOrEqual(t, closes[1].Sub(closes[0]), med.ProblemRetryAfter)
}

// The reporter's cancel wakes the run while it awaits the analysis: it
// cancels, the hold released.
func TestACancelWakesTheRun(t *testing.T) {
	env, s := newRun(t, received())
	env.RegisterDelayedCallback(func() {
		s.set(func(r *med.Report) { r.DICTStatus = string(dict.ReportCancelled) })
	}, 2*time.Hour)

	env.ExecuteWorkflow(med.WorkflowName, med.Input{ID: s.r.ID.String()})

	out := result(t, env)
	require.Equal(t, med.EndCancelled, *out.EndCause)
	cancels := s.called("CancelReport")
	require.Len(t, cancels, 1)
	require.Less(t, cancels[0].Sub(start.Add(2*time.Hour)), time.Minute)
}
