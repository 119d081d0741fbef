package med_test

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/pixbank/pix/saga/med"
	refundsaga "github.com/pixbank/pix/saga/refund"
)

// skewed are the saga's activities on the store with the database's clock
// behind the run's (Temporal's) by a skew; onNotYet runs once, at the first
// Finish the database answers "not yet"; a devolução the run records is
// returned by the PSP at once (so that the run settles it).
type skewed struct {
	*med.Activities
	f        *fixture
	mu       sync.Mutex
	notYets  int
	onNotYet func()
}

func (s *skewed) FinishReport(ctx context.Context, at med.Report) (med.Report, error) {
	out, err := s.Activities.FinishReport(ctx, at)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		if s.notYets++; s.notYets == 1 {
			s.onNotYet()
		}
	}
	return out, err
}

func (s *skewed) ReturnReport(ctx context.Context, at med.Report) (med.Report, error) {
	out, err := s.Activities.ReturnReport(ctx, at)
	if err == nil && out.Status == med.StatusReturning {
		_, err = refundsaga.NewStore(s.f.s).MarkRefundReturned(ctx, *out.RefundID, "D12345678202612061200ccccccccccc")
	}
	return out, err
}

// Attack review r12 LOW-1: with the run's clock ahead of the database's,
// the run asks Finish of a report returned in parts past return_until by
// its clock, before it by the database's: "not yet". A credit that fills
// the report's hold then, inside the skew, is returned (the run goes back
// to its return and its wait for credits until return_until by the
// database's clock), never released by the Finish that passes after.
// Seen failing on the old run (the "not yet" retried by the activity until
// the database's clock passed: the 2,000 released, 3,000 returned).
func TestAPartFilledWhileTheDatabasesClockLagsIsReturned(t *testing.T) {
	f := newFixture(t)
	account, r := f.awaitingCredit()
	const skew = 30 * time.Second
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	env.SetStartTime(r.ReturnUntil.Add(5 * time.Second)) // past return_until by the run's clock
	env.RegisterWorkflowWithOptions(med.Workflow, workflow.RegisterOptions{Name: med.WorkflowName})
	acts := &med.Activities{Store: f.store.WithClock(func() time.Time { return env.Now().Add(-skew) }),
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	s := &skewed{Activities: acts, f: f, onNotYet: func() {
		f.creditMore(account, 2_000) // fills the report's hold, 25 s before return_until by the database's clock
	}}
	env.RegisterActivity(s)

	env.ExecuteWorkflow(med.WorkflowName, med.Input{ID: r.ID.String()})

	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	out := f.get(r)
	require.Equal(t, med.StatusEnded, out.Status)
	require.GreaterOrEqual(t, s.notYets, 1, "Finish asked before return_until by the database's clock")
	require.EqualValues(t, 5_000, out.ReturnedCents, "the part filled within return_until returned, not released")
	require.Equal(t, med.EndReturnedInPart, *out.EndCause)
	f.requireMoney(account, 0, 0)
	f.requireBooks()
}
