package med_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/pixbank/pix/internal/dict"
	"github.com/pixbank/pix/saga/med"
)

// walkThen is the fake DICT whose refund listing runs then after its walk:
// a change another actor (the lister) commits while the expiry lists.
type walkThen struct {
	*fakeDICT
	then func()
}

func (w walkThen) WalkRefunds(ctx context.Context, q dict.RefundQuery, fn func(dict.Refund) error) (time.Time, error) {
	at, err := w.fakeDICT.WalkRefunds(ctx, q, fn)
	w.then()
	return at, err
}

// The expiry's own listing meets an OPEN request on the report's PIX that
// names no report and decides to stop (dict_not_as_ours); meanwhile the
// lister takes in the report's own request (in time: a new generation).
// The stop's note, fenced by the generation the step decided on, changes
// nothing: that is no stop (not StoppedType, not counted, no dict_problem)
// but a retry, which reads the report as it is and hands it to the run to
// decide again (its return). Attack review r6 MED-1: the activity answered
// StoppedType and the run waited ProblemRetryAfter on the new generation,
// the request taken in not returned for 6 hours.
func TestAStopFencedOutByAMoveOfItsReportIsNoStop(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	a, r := closedAgreed(t, f)
	openOnItsPIX(t, f, a, r, "", "invalid_request:infraction_report_id")
	own := request(r, 10_000, dict.RefundOpen)
	own.LastModified = *r.RequestDueAt
	a.acts.DICT = walkThen{fakeDICT: a.dict, then: func() {
		_, _, err := doorsOf(f.store).IntakeRefund(ctx, own) // the lister's, meanwhile
		require.NoError(t, err)
	}}
	coveredPast(a, *r.RequestDueAt)
	stops := testutil.ToFloat64(med.DICTStopped)
	before := a.current(r)
	_, err := a.run(a.acts.ExpireRequest, before)
	require.Error(t, err)
	var app *temporal.ApplicationError
	require.False(t, errors.As(err, &app) && (app.Type() == med.StoppedType || app.NonRetryable()), "a stop, not a retry: %v", err)
	after := a.current(r)
	require.True(t, after.RequestOpen(), "the lister's take-in")
	require.Nil(t, after.DICTProblem)
	require.Equal(t, stops, testutil.ToFloat64(med.DICTStopped), "counted as a stop")

	retried, err := a.run(a.acts.ExpireRequest, before) // the activity's retry
	require.NoError(t, err)
	require.Equal(t, after.Gen, retried.Gen, "the report as it is, for the run to decide on")
	require.Equal(t, med.StepReturn, med.Next(retried, time.Now()))
}

// A step stopped at the DICT, its stop noted, whose report moved before
// the run read it again (the doors took in its refund request and
// signalled): the run decides again at once, it does not wait
// ProblemRetryAfter on the generation it read, whose signal came before
// the read. Attack review r6 MED-1: the request taken in was returned 6
// hours after the stop.
func TestARunStoppedWhoseReportMovedSinceTheNoteDecidesAgain(t *testing.T) {
	r := stoppedExpiry()
	env, s := newRun(t, r)
	s.stops = map[string]int{"ExpireRequest": 1}
	s.moved = func(r *med.Report) { // the doors' intake of its request, in time
		r.RefundRequestID, r.RefundRequestCents = ptr(uuid.New()), ptr(int64(10_000))
		r.RefundRequestState = ptr(string(dict.RefundOpen))
	}
	env.RegisterDelayedCallback(func() { s.set(func(r *med.Report) { r.Status, r.EndCause = med.StatusEnded, ptr(med.EndReleased) }) },
		12*time.Hour) // ends a run that waits
	env.ExecuteWorkflow(med.WorkflowName, med.Input{ID: r.ID.String()})
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	returns := s.called("ReturnReport")
	require.NotEmpty(t, returns, "never returned")
	require.Equal(t, start, returns[0], "returned %s after the stop", returns[0].Sub(start))
}
