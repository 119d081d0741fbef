//go:build e2e

package e2e

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
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
//
// They are taken oldest first, never the one given back last, and once
// recycleSettle has passed: a whole test ran on another base since, and a
// run the emptying's listings missed (one a deleted Schedule's action or
// the stopped dispatcher started in the last moments, its visibility
// record not yet written) is open to the second emptying, takeBase's.
var (
	recycledMu    sync.Mutex
	recycledBases []recycledBase
)

// recycleSettle is how long a base given back rests at least before a
// stack takes it: time for the server's visibility to list every run its
// last stack's test started.
const recycleSettle = 5 * time.Second

type recycledBase struct {
	base    string
	queues  string     // the stack's queuesFilter
	t       *testing.T // the test that gave it back
	freedAt time.Time
}

// takeBase is a recycled base of srv if one is ready (recycled, as it was
// given back), emptied again, else a new one. A base whose test failed
// after giving it back, or that is not emptied, is dropped.
func takeBase(t *testing.T, srv *temporaltest.Server) (base string, recycled *recycledBase) {
	for srv == shared {
		r, ok := oldestBase()
		if !ok {
			break
		}
		if r.t.Failed() {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		err := withClient(ctx, func(c client.Client) error { return emptyBase(ctx, c, r.base, r.queues) })
		cancel()
		if err != nil {
			t.Logf("task queue base %s not reused: %v", r.base, err)
			continue
		}
		t.Logf("task queue base %s reused, given back %s ago", r.base, time.Since(r.freedAt).Round(time.Millisecond))
		return r.base, &r
	}
	return "pix-credit-" + randomSuffix(), nil
}

// oldestBase takes the oldest base given back, if there is another (a
// whole test ran since) and it rested recycleSettle.
func oldestBase() (recycledBase, bool) {
	recycledMu.Lock()
	defer recycledMu.Unlock()
	if len(recycledBases) < 2 || time.Since(recycledBases[0].freedAt) < recycleSettle {
		return recycledBase{}, false
	}
	r := recycledBases[0]
	recycledBases = recycledBases[1:]
	return r, true
}

func giveBackBase(r recycledBase) {
	recycledMu.Lock()
	defer recycledMu.Unlock()
	recycledBases = append(recycledBases, r)
}

// returnUnusedBase puts r, a base takeBase gave to a stack that may not
// use it (reusableBase), back first: emptied still, the oldest.
func returnUnusedBase(r recycledBase) {
	recycledMu.Lock()
	defer recycledMu.Unlock()
	recycledBases = append([]recycledBase{r}, recycledBases...)
}

// useBase tells whether the stack with cfg on srv, given base by takeBase
// (recycled, or a new one: nil), may reuse it and leave it to a later stack
// (reusableBase). A recycled base it may not use goes back, and a stack
// that kept it as its TEMPORAL_TASK_QUEUE gets a new one instead.
func useBase(srv *temporaltest.Server, cfg *config.Config, base string, recycled *recycledBase) bool {
	reusable := reusableBase(srv, *cfg, base)
	if recycled != nil && !reusable {
		returnUnusedBase(*recycled)
		if cfg.TemporalTaskQueue == base {
			cfg.TemporalTaskQueue = "pix-credit-" + randomSuffix()
		}
	}
	return reusable
}

// recycleLast registers the cleanup that gives the stack's base back
// (recycleBase, once set in the func it returns) first, so that it runs
// last: a cleanup that fails the test (a database's drop, the API
// contract's check) runs before it and keeps the base from being reused.
func recycleLast(t *testing.T) *func() {
	var recycle func()
	t.Cleanup(func() {
		if recycle != nil {
			recycle()
		}
	})
	return &recycle
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
// its queues terminated (emptyBase). A failed test's base, or one not
// emptied, is left as it is.
func (s *stack) recycleBase() {
	if s.t.Failed() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	base, queues := s.cfg.TemporalTaskQueue, s.queuesFilter()
	if err := withClient(ctx, func(c client.Client) error { return emptyBase(ctx, c, base, queues) }); err != nil {
		s.t.Logf("task queue base %s not recycled: %v", base, err)
		return
	}
	giveBackBase(recycledBase{base: base, queues: queues, t: s.t, freedAt: time.Now()})
}

// withClient runs f with a client of the shared server's namespace (the
// default one, as every recycled base's: reusableBase).
func withClient(ctx context.Context, f func(client.Client) error) error {
	c, err := client.DialContext(ctx, client.Options{HostPort: shared.Address, Namespace: config.Default().TemporalNamespace})
	if err != nil {
		return err
	}
	defer c.Close()
	return f(c)
}

// emptyPause is the pause between two of emptyBase's visibility reads:
// a listing lags the runs' starts and ends.
const emptyPause = 300 * time.Millisecond

// emptyBase deletes base's Schedules, checks that none remains, and
// terminates every run open on its queues (the visibility filter queues)
// until two counts emptyPause apart find none open.
func emptyBase(ctx context.Context, c client.Client, base, queues string) error {
	if err := deleteSchedules(ctx, c, base); err != nil {
		return err
	}
	open := queues + " AND ExecutionStatus = 'Running'"
	var notFound *serviceerror.NotFound
	for empty := 0; empty < 2; {
		n, err := c.CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{Query: open})
		if err != nil {
			return err
		}
		if n.GetCount() == 0 {
			empty++
		} else {
			empty = 0
			runs, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: open})
			if err != nil {
				return err
			}
			for _, e := range runs.Executions {
				err := c.TerminateWorkflow(ctx, e.GetExecution().GetWorkflowId(), e.GetExecution().GetRunId(), "the e2e test ended: its task queues are recycled")
				if err != nil && !errors.As(err, &notFound) {
					return err
				}
			}
		}
		if empty < 2 {
			select {
			case <-ctx.Done():
				return fmt.Errorf("runs still open on %s's queues: %w", base, ctx.Err())
			case <-time.After(emptyPause):
			}
		}
	}
	return nil
}

// deleteSchedules deletes every Schedule of base (the sagas' own, and any
// other whose ID ends in it), then checks that each describes as deleted:
// the listing lags, a description does not.
func deleteSchedules(ctx context.Context, c client.Client, base string) error {
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
	for _, id := range ids {
		_, err := c.ScheduleClient().GetHandle(ctx, id).Describe(ctx)
		if err == nil {
			return fmt.Errorf("schedule %s remains after its deletion", id)
		}
		if !errors.As(err, &notFound) {
			return err
		}
	}
	return nil
}
