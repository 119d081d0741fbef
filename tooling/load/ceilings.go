package load

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"golang.org/x/sync/errgroup"

	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/internal/pix"
	pixworker "github.com/pixbank/pix/worker"
)

// Ingest is what an ingest ceiling measured.
type Ingest struct {
	PerSecond float64
	Inserts   int64
	// Commits is the transactions committed: Inserts for the single-insert
	// ceiling, Inserts ÷ the batch for the grouped one.
	Commits int64
	// CPU is the machine's CPU time over the measurement (nil without
	// /proc), read before the scratch pool's connections end.
	CPU *CPUUse
}

// IngestCeiling drives the webhook's own inbox insert (db.Store.Receive, the
// code the handler calls) straight at PostgreSQL, without HTTP, from
// concurrency loops for d, one commit per insert, and returns inserts per
// second. It works in a scratch schema of the same database, migrated like
// the real one, so that the running service never sees these rows.
func IngestCeiling(ctx context.Context, databaseURL string, concurrency int, d time.Duration) (Ingest, error) {
	return ingestCeiling(ctx, databaseURL, concurrency, 1, d)
}

// GroupedIngestCeiling is IngestCeiling with the inserts grouped: each loop
// writes batch rows per transaction, the same Receive statement batch times
// in one round trip (db.Store.ReceiveBatch, the API Pix batch's code), in
// the key order every multi-row write keeps. It is the ceiling of a group
// commit at the door: PostgreSQL's cost per row when commits are shared.
func GroupedIngestCeiling(ctx context.Context, databaseURL string, concurrency, batch int, d time.Duration) (Ingest, error) {
	if batch < 2 {
		return Ingest{}, fmt.Errorf("grouped ingest ceiling: a batch of %d rows is no group", batch)
	}
	return ingestCeiling(ctx, databaseURL, concurrency, batch, d)
}

func ingestCeiling(ctx context.Context, databaseURL string, concurrency, batch int, d time.Duration) (Ingest, error) {
	schema := fmt.Sprintf("pixload_ceiling_%d", time.Now().UnixNano())
	admin, err := pgx.Connect(ctx, databaseURL)
	if err != nil {
		return Ingest{}, fmt.Errorf("ingest ceiling: %w", err)
	}
	defer admin.Close(context.WithoutCancel(ctx))
	if _, err := admin.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		return Ingest{}, fmt.Errorf("ingest ceiling: %w", err)
	}
	defer admin.Exec(context.WithoutCancel(ctx), "DROP SCHEMA "+schema+" CASCADE") //nolint:errcheck // best effort on the way out
	url, err := db.SchemaURL(databaseURL, schema)
	if err != nil {
		return Ingest{}, err
	}
	pool, err := db.Open(ctx, url, int32(concurrency))
	if err != nil {
		return Ingest{}, err
	}
	defer pool.Close()
	if _, err := db.Migrate(ctx, pool); err != nil {
		return Ingest{}, err
	}
	store := db.NewStore(pool)

	// Every connection is open before the clock and the CPU accounting start.
	if err := warmPool(ctx, pool, concurrency); err != nil {
		return Ingest{}, fmt.Errorf("ingest ceiling: %w", err)
	}
	var inserts, commits atomic.Int64
	var took time.Duration
	use, err := MeasureCPU(func() error {
		deadline := time.Now().Add(d)
		g, gctx := errgroup.WithContext(ctx)
		start := time.Now()
		for w := range concurrency {
			g.Go(func() error {
				group := make([]pix.Notification, batch)
				for i := 0; time.Now().Before(deadline); {
					for k := range group {
						group[k] = ceilingNotification(w, i)
						i++
					}
					var err error
					if batch == 1 {
						_, err = store.Receive(gctx, group[0])
					} else {
						_, err = store.ReceiveBatch(gctx, group)
					}
					if err != nil {
						return err
					}
					inserts.Add(int64(batch))
					commits.Add(1)
				}
				return nil
			})
		}
		err := g.Wait()
		took = time.Since(start)
		return err
	})
	if err != nil {
		return Ingest{}, fmt.Errorf("ingest ceiling: %w", err)
	}
	return Ingest{PerSecond: float64(inserts.Load()) / took.Seconds(), Inserts: inserts.Load(), Commits: commits.Load(), CPU: use}, nil
}

// ceilingNotification is the i-th PIX of loop w of a ceiling: a webhook's
// notification, with its payload, as the handler stores it.
func ceilingNotification(w, i int) pix.Notification {
	id := fmt.Sprintf("E60701190CEILING%03d%013d", w, i)
	payload, _ := json.Marshal(webhookBody{id, "load-ceiling", 1000, "2026-11-29T12:00:00Z"})
	return pix.Notification{EndToEndID: id, AccountID: "load-ceiling", AmountCents: 1000, Payload: payload}
}

// warmPool opens n connections of pool.
func warmPool(ctx context.Context, pool *pgxpool.Pool, n int) error {
	conns := make([]*pgxpool.Conn, 0, n)
	defer func() {
		for _, c := range conns {
			c.Release()
		}
	}()
	for range n {
		c, err := pool.Acquire(ctx)
		if err != nil {
			return err
		}
		conns = append(conns, c)
	}
	return nil
}

// EngineMode is the shape of the no-op workflow of the engine ceiling.
type EngineMode string

// Engine modes.
const (
	// EngineActivity: a workflow with one (no-op) activity, the shape of the
	// credit workflow.
	EngineActivity EngineMode = "one activity"
	// EngineLocalEager: one local activity, started with eager start.
	EngineLocalEager EngineMode = "one local activity, eager start"
	// EngineLocalEagerVersioned: the same on a worker of a Worker
	// Deployment, its workflow auto-upgrade, as pixd's credits run
	// (TEMPORAL_WORKER_VERSIONING, the default; saga.Credit): what Worker
	// Versioning costs the engine, apart from the service
	// (Engine.StartVersioned).
	EngineLocalEagerVersioned EngineMode = "one local activity, eager start, versioned worker"
)

// Versioned tells the modes that run on a versioned worker.
func (m EngineMode) Versioned() bool { return m == EngineLocalEagerVersioned }

// NoopWorkflow runs one no-op activity and returns when it ran.
func NoopWorkflow(ctx workflow.Context) (int64, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 10 * time.Second})
	var ranAt int64
	err := workflow.ExecuteActivity(ctx, NoopActivity).Get(ctx, &ranAt)
	return ranAt, err
}

// NoopLocalWorkflow runs one no-op local activity and returns when it ran.
func NoopLocalWorkflow(ctx workflow.Context) (int64, error) {
	ctx = workflow.WithLocalActivityOptions(ctx, workflow.LocalActivityOptions{StartToCloseTimeout: 10 * time.Second})
	var ranAt int64
	err := workflow.ExecuteLocalActivity(ctx, NoopActivity).Get(ctx, &ranAt)
	return ranAt, err
}

// NoopActivity does nothing but say when it ran (Unix nanoseconds): the
// engine's counterpart of the credit's commit.
func NoopActivity(context.Context) (int64, error) { return time.Now().UnixNano(), nil }

// Engine measures the Temporal server the service runs on, with a worker of
// its own in this process.
type Engine struct {
	client    client.Client
	taskQueue string
	worker    worker.Worker
	// versioned runs EngineLocalEagerVersioned, once StartVersioned
	// started it.
	versioned *Engine
}

// StartEngine starts the no-op worker on a task queue of its own,
// unversioned: the modes but EngineLocalEagerVersioned.
func StartEngine(c client.Client, runID string) (*Engine, error) {
	return startEngine(c, "pixload-engine-"+runID, worker.DeploymentOptions{})
}

// StartVersioned starts the no-op worker of EngineLocalEagerVersioned, on a
// task queue of its own, as pixd's workers run: the version of a Worker
// Deployment of its own, made its current version, its workflows
// auto-upgrade as the credit's are.
func (e *Engine) StartVersioned(ctx context.Context) error {
	if e.versioned != nil {
		return nil
	}
	tq := e.taskQueue + "-versioned"
	v := worker.WorkerDeploymentVersion{DeploymentName: tq, BuildID: "pixload-noop"}
	ve, err := startEngine(e.client, tq, worker.DeploymentOptions{UseVersioning: true, Version: v})
	if err != nil {
		return err
	}
	// Temporal knows a version from its pollers only: the service's own
	// loop asks again until they polled (or Temporal answers).
	if err := pixworker.SetCurrentVersion(ctx, e.client, v); err != nil {
		ve.Stop()
		return fmt.Errorf("versioned engine worker: %w", err)
	}
	e.versioned = ve
	return nil
}

func startEngine(c client.Client, tq string, deployment worker.DeploymentOptions) (*Engine, error) {
	w := worker.New(c, tq, worker.Options{DeploymentOptions: deployment})
	var opts workflow.RegisterOptions
	if deployment.UseVersioning {
		opts.VersioningBehavior = workflow.VersioningBehaviorAutoUpgrade // the credit's
	}
	w.RegisterWorkflowWithOptions(NoopWorkflow, opts)
	w.RegisterWorkflowWithOptions(NoopLocalWorkflow, opts)
	w.RegisterActivity(NoopActivity)
	if err := w.Start(); err != nil {
		return nil, fmt.Errorf("engine worker: %w", err)
	}
	return &Engine{client: c, taskQueue: tq, worker: w}, nil
}

// Stop stops the no-op workers.
func (e *Engine) Stop() {
	if e.versioned != nil {
		e.versioned.Stop()
	}
	e.worker.Stop()
}

// run runs one no-op workflow and returns when its activity ran.
func (e *Engine) run(ctx context.Context, mode EngineMode, id string) (time.Time, error) {
	if mode.Versioned() {
		if e.versioned == nil {
			return time.Time{}, fmt.Errorf("engine mode %q: the versioned worker was not started (StartVersioned)", mode)
		}
		return e.versioned.run(ctx, EngineLocalEager, id)
	}
	opts := client.StartWorkflowOptions{ID: id, TaskQueue: e.taskQueue}
	var wf any = NoopWorkflow
	if mode == EngineLocalEager {
		opts.EnableEagerStart = true
		wf = NoopLocalWorkflow
	}
	run, err := e.client.ExecuteWorkflow(ctx, opts, wf)
	if err != nil {
		return time.Time{}, err
	}
	var ranAt int64
	if err := run.Get(ctx, &ranAt); err != nil {
		return time.Time{}, err
	}
	return time.Unix(0, ranAt), nil
}

// Throughput runs n no-op workflows from concurrency starters and returns
// completed workflows per second.
func (e *Engine) Throughput(ctx context.Context, mode EngineMode, n, concurrency int) (float64, error) {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(concurrency)
	start := time.Now()
	prefix := fmt.Sprintf("pixload-engine-%d-", start.UnixNano())
	for i := range n {
		g.Go(func() error {
			_, err := e.run(gctx, mode, fmt.Sprint(prefix, i))
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return 0, fmt.Errorf("engine ceiling (%s): %w", mode, err)
	}
	return float64(n) / time.Since(start).Seconds(), nil
}

// Latency runs n no-op workflows one after the other and returns the
// median time from the start call to the activity's run: the engine's part
// of the service's acknowledgement → credited. With every > 0 the runs are
// paced, one starting every interval, as the PIX of an idle phase arrive:
// a server and a worker that have been quiet for a while answer slower than
// back to back, and the idle phase is measured in that state.
func (e *Engine) Latency(ctx context.Context, mode EngineMode, n int, every time.Duration) (time.Duration, error) {
	var took []time.Duration
	prefix := fmt.Sprintf("pixload-engine-latency-%d-", time.Now().UnixNano())
	next := time.Now()
	for i := range n {
		if every > 0 {
			select {
			case <-ctx.Done():
				return 0, ctx.Err()
			case <-time.After(time.Until(next)):
			}
			next = next.Add(every)
		}
		start := time.Now()
		ranAt, err := e.run(ctx, mode, fmt.Sprint(prefix, i))
		if err != nil {
			return 0, fmt.Errorf("engine latency (%s): %w", mode, err)
		}
		took = append(took, ranAt.Sub(start))
	}
	slices.Sort(took)
	return took[len(took)/2], nil
}
