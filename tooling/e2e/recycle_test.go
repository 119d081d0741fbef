//go:build e2e

package e2e

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/pixbank/pix/internal/config"
	"github.com/pixbank/pix/internal/tooling/temporaltest"
	"github.com/pixbank/pix/saga/catchup"
	"github.com/pixbank/pix/saga/med"
	"github.com/pixbank/pix/saga/reconcile"
	"github.com/pixbank/pix/saga/retention"
)

// recycledBases are task queue bases (TEMPORAL_TASK_QUEUE) of the shared
// server whose stacks' tests passed and ended, emptied (recycleBase): a
// later stack takes one rather than a new one. A new base is a new Worker
// Deployment, whose worker's build the server registers in each family's
// queue, promotes, and routes every queue to (waitCurrentBuild): 4 to 9 s
// of every test on a loaded machine, and system workflows the shared server
// keeps running to the package's end. On a recycled base the build (the
// same for every stack of the package: its build id names no revision) is
// current and routed already: each test still starts its own worker,
// API, database, broker and PSP, on queues that nothing else polls and
// that hold no run.
var (
	recycledMu    sync.Mutex
	recycledBases []string
)

// takeBase is a recycled base of srv if there is one (recycled), else a
// new one.
func takeBase(srv *temporaltest.Server) (base string, recycled bool) {
	recycledMu.Lock()
	defer recycledMu.Unlock()
	if n := len(recycledBases); n > 0 && srv == shared {
		base = recycledBases[n-1]
		recycledBases = recycledBases[:n-1]
		return base, true
	}
	return "pix-credit-" + randomSuffix(), false
}

func giveBackBase(base string) {
	recycledMu.Lock()
	defer recycledMu.Unlock()
	recycledBases = append(recycledBases, base)
}

// reusableBase tells whether a stack with cfg on srv may run on a recycled
// base, and leave its own for a later one: on the shared server, its
// workers versioned and promoted as by default, on the base takeBase gave
// (a test that names its base, an unversioned worker, or another promotion
// mode has queues of its own).
func reusableBase(srv *temporaltest.Server, cfg config.Config, base string) bool {
	def := config.Default()
	return srv == shared && cfg.TemporalTaskQueue == base && cfg.WorkerVersioning &&
		cfg.WorkerPromote == def.WorkerPromote && cfg.TemporalNamespace == def.TemporalNamespace
}

// recycleBase empties the stack's queues once its test passed and its
// worker stopped, and leaves them to a later stack: the base's Schedules
// deleted (the next worker creates its own), then every run still open on
// its queues terminated, until two listings a moment apart find none. A
// failed test's base, or one not emptied, is left as it is.
func (s *stack) recycleBase() {
	if s.t.Failed() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := client.DialContext(ctx, client.Options{HostPort: s.srv.Address, Namespace: s.cfg.TemporalNamespace})
	if err != nil {
		s.t.Logf("task queue base %s not recycled: %v", s.cfg.TemporalTaskQueue, err)
		return
	}
	defer c.Close()
	if err := emptyBase(ctx, c, s.cfg.TemporalTaskQueue, s.queuesFilter()); err != nil {
		s.t.Logf("task queue base %s not recycled: %v", s.cfg.TemporalTaskQueue, err)
		return
	}
	giveBackBase(s.cfg.TemporalTaskQueue)
}

func emptyBase(ctx context.Context, c client.Client, base, queues string) error {
	ids := []string{retention.ScheduleID(base), reconcile.ScheduleID(base), catchup.ScheduleID(base), med.ListerScheduleID(base)}
	list, err := c.ScheduleClient().List(ctx, client.ScheduleListOptions{})
	if err != nil {
		return err
	}
	for list.HasNext() {
		e, err := list.Next()
		if err != nil {
			return err
		}
		if strings.HasSuffix(e.ID, ":"+base) {
			ids = append(ids, e.ID)
		}
	}
	var notFound *serviceerror.NotFound
	for _, id := range ids {
		if err := c.ScheduleClient().GetHandle(ctx, id).Delete(ctx); err != nil && !errors.As(err, &notFound) {
			return err
		}
	}
	for empty := 0; empty < 2; {
		open, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: queues + " AND ExecutionStatus = 'Running'"})
		if err != nil {
			return err
		}
		if len(open.Executions) == 0 {
			if empty++; empty < 2 {
				time.Sleep(300 * time.Millisecond)
			}
			continue
		}
		empty = 0
		for _, e := range open.Executions {
			err := c.TerminateWorkflow(ctx, e.GetExecution().GetWorkflowId(), e.GetExecution().GetRunId(), "the e2e test ended: its task queues are recycled")
			if err != nil && !errors.As(err, &notFound) {
				return err
			}
		}
	}
	return nil
}
