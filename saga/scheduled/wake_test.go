package scheduled_test

// The cancel's durable wake-up, over PostgreSQL and a real Temporal: the
// saga's worker runs the workflow, and its dispatcher (durable.Dispatcher
// over the saga's Source) works the queue as the worker process does.

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/pixbank/pix/internal/durable"
	"github.com/pixbank/pix/internal/durable/rows"
	"github.com/pixbank/pix/internal/tooling/temporaltest"
	"github.com/pixbank/pix/saga/sagatest"
	"github.com/pixbank/pix/saga/scheduled"
)

// unreachable is a Temporal that does not answer a signal (stopped, or the
// service's client still reconnecting after its restart): Unavailable.
type unreachable struct {
	mu    sync.Mutex
	tries int
}

func (u *unreachable) SignalWorkflow(context.Context, string, string, string, any) error {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.tries++
	return serviceerror.NewUnavailable("connection refused")
}

func (u *unreachable) count() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.tries
}

// unreachableClient is the dispatcher's client while Temporal does not
// answer its signals.
type unreachableClient struct {
	client.Client
	unreachable
}

func (u *unreachableClient) SignalWorkflow(ctx context.Context, id, runID, name string, arg any) error {
	return u.unreachable.SignalWorkflow(ctx, id, runID, name, arg)
}

// wakeEnv is the routes' harness (its cancels' signals lost), a Temporal
// with the saga's worker, and the saga's dispatcher.
type wakeEnv struct {
	*harness
	c       client.Client
	src     durable.Source
	lost    *unreachable
	options durable.Options
}

func newWakeEnv(t *testing.T) *wakeEnv {
	lost := &unreachable{}
	a := newAPIWith(t, time.Now(), lost)
	c := temporaltest.StartT(t).Client(t)
	taskQueue := fmt.Sprintf("pix-scheduled-wake-%d", time.Now().UnixNano())
	w := worker.New(c, taskQueue, worker.Options{})
	w.RegisterWorkflowWithOptions(scheduled.Workflow, workflow.RegisterOptions{Name: scheduled.WorkflowName})
	w.RegisterActivity(&scheduled.Activities{Store: a.f.store, BankISPB: ispb, Log: sagatest.Discard()})
	require.NoError(t, w.Start())
	t.Cleanup(w.Stop)
	return &wakeEnv{harness: a, c: c, src: scheduled.Source(a.f.store.Queue(), a.f.store, taskQueue), lost: lost,
		options: durable.Options{PollInterval: 50 * time.Millisecond, BatchSize: 10, Concurrency: 2,
			RecheckAfter: time.Minute, RecheckMax: 15 * time.Minute, RetryMaxDelay: time.Second}}
}

// dispatch runs one round of the saga's dispatcher over c (nil: the
// Temporal's own client) and returns how many rows it claimed.
func (e *wakeEnv) dispatch(t *testing.T, c client.Client) int {
	t.Helper()
	if c == nil {
		c = e.c
	}
	n, err := durable.New(nil, e.src, c, e.options, sagatest.Discard()).DispatchOnce(context.Background())
	require.NoError(t, err)
	return n
}

// due is the row's dispatch_due_at (nil: out of the queue).
func (e *wakeEnv) due(t *testing.T, id uuid.UUID) *time.Time {
	t.Helper()
	var due *time.Time
	require.NoError(t, e.f.s.Pool().QueryRow(context.Background(),
		`SELECT dispatch_due_at FROM pix_scheduled WHERE id = $1`, id).Scan(&due))
	return due
}

// run describes the scheduled PIX's run: nil when it has none.
func (e *wakeEnv) run(t *testing.T, id uuid.UUID) *workflowRun {
	t.Helper()
	d, err := e.c.DescribeWorkflow(context.Background(), scheduled.WorkflowID(id.String()), "")
	var notFound *serviceerror.NotFound
	if errors.As(err, &notFound) {
		return nil
	}
	require.NoError(t, err)
	info := d.RawResponse.GetWorkflowExecutionInfo()
	return &workflowRun{id: info.GetExecution().GetRunId(), status: info.GetStatus()}
}

type workflowRun struct {
	id     string
	status enums.WorkflowExecutionStatus
}

// cancel cancels the scheduled PIX through DELETE /pix/scheduled/{id}.
func (e *wakeEnv) cancel(t *testing.T, id uuid.UUID) {
	t.Helper()
	status, body := e.Call(http.MethodDelete, "/pix/scheduled/"+id.String(), "maria", "", nil)
	require.Equal(t, http.StatusOK, status, "%v", body)
	require.Equal(t, scheduled.StatusCancelled, body["status"])
}

// dispatchUntilOut runs the dispatcher over c until the row is out of the
// queue (a failed signal defers it by the dispatcher's backoff).
func (e *wakeEnv) dispatchUntilOut(t *testing.T, id uuid.UUID) {
	t.Helper()
	require.Eventually(t, func() bool {
		e.dispatch(t, nil)
		return e.due(t, id) == nil
	}, 30*time.Second, 20*time.Millisecond, "the cancel's wake-up leaves the queue")
}

// A cancel whose signal is lost (Temporal unreachable: the route's WARN,
// CancelNotWoken) leaves the row due; the dispatcher's signal, failed too
// while Temporal does not answer, keeps it due; once Temporal answers, the
// dispatcher wakes the run, which ends cancelled, and the row leaves the
// queue. Before the fix the row left the queue with the cancel, and the run
// slept on, "Running", until the date. Found failing before the fix.
func TestACancelWhoseSignalIsLostStillEndsItsRun(t *testing.T) {
	e := newWakeEnv(t)
	ctx := context.Background()
	s := e.f.schedule("acc-maria", 15_000, time.Now().AddDate(0, 0, 30))
	require.Equal(t, 1, e.dispatch(t, nil), "the run starts and sleeps")
	require.Eventually(t, func() bool {
		r := e.run(t, s.ID)
		return r != nil && r.status == enums.WORKFLOW_EXECUTION_STATUS_RUNNING
	}, 30*time.Second, 50*time.Millisecond)

	e.cancel(t, s.ID)
	require.Equal(t, 1, e.lost.count(), "the route's signal was tried, and lost")
	require.NotNil(t, e.due(t, s.ID), "the cancel leaves the row due for its dispatcher")

	refusing := &unreachableClient{Client: e.c}
	require.Equal(t, 1, e.dispatch(t, refusing), "the dispatcher claims the cancel's wake-up")
	require.Equal(t, 1, refusing.count(), "it signalled, and failed")
	require.NotNil(t, e.due(t, s.ID), "a failed signal leaves the row due")
	require.Equal(t, enums.WORKFLOW_EXECUTION_STATUS_RUNNING, e.run(t, s.ID).status)

	e.dispatchUntilOut(t, s.ID)
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var out scheduled.Scheduled
	require.NoError(t, e.c.GetWorkflow(wctx, scheduled.WorkflowID(s.ID.String()), "").Get(wctx, &out))
	require.Equal(t, scheduled.StatusCancelled, out.Status, "the run ends as the row says")
	closed := e.run(t, s.ID)
	require.Equal(t, enums.WORKFLOW_EXECUTION_STATUS_COMPLETED, closed.status)
	got, err := e.f.store.Get(ctx, s.ID)
	require.NoError(t, err)
	require.Equal(t, scheduled.StatusCancelled, got.Status)
	requireOneConclusion(t, e.f, s.ID)
	require.EqualValues(t, 50_000, e.f.balance("acc-maria"), "nothing debited")

	// A late dispatcher's claim of the wake-up, replayed after the run
	// closed: nothing started, nothing due again.
	late := rows.Due{Key: s.ID.String(), Drive: 2, Status: scheduled.StatusCancelled}
	started, err := e.src.Start(ctx, e.c, late)
	require.NoError(t, err)
	require.False(t, started)
	require.NoError(t, e.f.store.Queue().MarkDispatched(ctx, nil, []rows.Due{late}, rows.Recheck{After: time.Minute, Max: time.Hour}))
	require.NoError(t, e.f.store.Queue().DeferDispatch(ctx, []rows.Due{late}, time.Second))
	require.Nil(t, e.due(t, s.ID))
	require.Equal(t, *closed, *e.run(t, s.ID), "the closed run, no other")
	require.Zero(t, e.dispatch(t, nil))
}

// A scheduled PIX cancelled before its run started: the dispatcher ends
// the cancel's wake-up without starting a run (a run started now would
// only read the row and end). Found failing before the fix (the cancel
// left no wake-up to end: the row was out of the queue at once).
func TestACancelBeforeItsRunStartedStartsNoRun(t *testing.T) {
	e := newWakeEnv(t)
	s := e.f.schedule("acc-maria", 15_000, time.Now().AddDate(0, 0, 30))
	e.cancel(t, s.ID)
	require.NotNil(t, e.due(t, s.ID), "the cancel leaves the row due for its dispatcher")

	require.Equal(t, 1, e.dispatch(t, nil))
	require.Nil(t, e.due(t, s.ID), "no run to wake: the wake-up ends")
	require.Nil(t, e.run(t, s.ID), "no run started for a cancelled row")
	require.Zero(t, e.dispatch(t, nil))
	requireOneConclusion(t, e.f, s.ID)
}

// Dispatchers late or twice: a claim made before the cancel (its start's
// records arriving after it) neither pushes the cancel's wake-up to the
// date nor ends it; a wake-up claimed twice (a lease run out) and replayed
// changes nothing once ended, and starts no run. Found failing before the
// fix (the cancel took the row out of the queue).
func TestALateOrSecondDispatchChangesNothing(t *testing.T) {
	e := newWakeEnv(t)
	ctx := context.Background()
	q := e.f.store.Queue()
	s := e.f.schedule("acc-maria", 15_000, time.Now().AddDate(0, 0, 30))
	before, err := q.Claim(ctx, 10, time.Minute)
	require.NoError(t, err)
	require.Len(t, before, 1)
	require.Equal(t, scheduled.StatusScheduled, before[0].Status)

	e.cancel(t, s.ID)
	cancelledAt := e.due(t, s.ID)
	require.NotNil(t, cancelledAt, "the cancel leaves the row due for its dispatcher")
	recheck := rows.Recheck{After: time.Minute, Max: time.Hour}
	require.NoError(t, q.MarkDispatched(ctx, before, nil, recheck))
	require.NoError(t, q.MarkDispatched(ctx, nil, before, recheck))
	require.NoError(t, q.DeferDispatch(ctx, before, time.Hour))
	require.True(t, cancelledAt.Equal(*e.due(t, s.ID)), "the stale claim's records change nothing: due now, not at the date")

	first, err := q.Claim(ctx, 10, time.Millisecond)
	require.NoError(t, err)
	require.Len(t, first, 1)
	require.Equal(t, scheduled.StatusCancelled, first[0].Status)
	time.Sleep(5 * time.Millisecond) // the first claim's lease runs out
	second, err := q.Claim(ctx, 10, time.Minute)
	require.NoError(t, err)
	require.Len(t, second, 1)

	for _, claim := range [][]rows.Due{second, first, second} {
		started, err := e.src.Start(ctx, e.c, claim[0])
		require.NoError(t, err)
		require.False(t, started)
		require.NoError(t, q.MarkDispatched(ctx, nil, claim, recheck))
		require.NoError(t, q.DeferDispatch(ctx, claim, time.Millisecond))
		require.Nil(t, e.due(t, s.ID), "ended, and never due again")
	}
	require.Nil(t, e.run(t, s.ID), "no run started for a cancelled row")
	require.Zero(t, e.dispatch(t, nil))
	requireOneConclusion(t, e.f, s.ID)
}

// requireOneConclusion: the scheduled PIX's events are its creation and one
// conclusion, cancelled.
func requireOneConclusion(t *testing.T, f *fixture, id uuid.UUID) {
	t.Helper()
	evs := f.events(id.String())
	require.Len(t, evs, 2, "created, concluded: one conclusion")
	require.Equal(t, scheduled.EventConcluded, evs[1]["event_type"])
	require.Equal(t, scheduled.StatusCancelled, evs[1]["status"])
}
