package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/cenkalti/backoff/v5"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/workflow"
	"golang.org/x/sync/errgroup"

	"github.com/pixbank/pix/internal/broker"
	"github.com/pixbank/pix/internal/buildinfo"
	"github.com/pixbank/pix/internal/durable"
	"github.com/pixbank/pix/internal/metrics"
	"github.com/pixbank/pix/internal/outbox"
	"github.com/pixbank/pix/saga/registry"
	"github.com/pixbank/pix/worker"
	"github.com/pixbank/pix/workflows"
)

// Dispatchers builds the dispatchers the configuration describes, one per
// saga with a durable start (registry.All), each starting its runs on its
// family's task queue, and one per saga with durable wake-ups (signals to
// its open runs, which start nothing).
func (a *App) Dispatchers() []*durable.Dispatcher {
	env := a.sagaEnv()
	var ds []*durable.Dispatcher
	for _, d := range registry.All {
		if d.Source == nil {
			continue
		}
		c := a.Temporal
		if a.Cfg.WorkerVersioning && d.Versioning == workflow.VersioningBehaviorPinned {
			// A draining build's dispatchers must not pin new runs to it.
			c = worker.StartsOnTheCurrentBuild(c)
		}
		ds = append(ds, a.dispatcher(d.Source(env, env.Queues.Of(d.Family)), c))
		if d.Wakes != nil {
			ds = append(ds, a.dispatcher(d.Wakes(env), a.Temporal))
		}
	}
	return ds
}

func (a *App) dispatcher(src durable.Source, c client.Client) *durable.Dispatcher {
	var observer durable.Observer
	if a.workerMetrics != nil {
		observer = a.workerMetrics
	}
	return durable.New(a.Store, src, c, durable.Options{
		PollInterval:  a.Cfg.DispatchPollInterval,
		BatchSize:     a.Cfg.DispatchBatchSize,
		Concurrency:   a.Cfg.DispatchConcurrency,
		RecheckAfter:  a.Cfg.DispatchRecheckAfter,
		RecheckMax:    a.Cfg.DispatchRecheckMax,
		RetryMaxDelay: a.Cfg.DispatchRetryMaxDelay,
		Metrics:       observer,
	}, a.Log)
}

// RunWorker runs the Temporal workers (one per workflow family, on the
// family's task queue), the dispatchers (when enabled) and the outbox relay
// (when enabled) and the store's waker until ctx ends. The dispatchers share the workers' client,
// so that their starts are eager: a new run's first task goes straight to
// this process's worker of its family. The relay needs no Temporal: it runs while
// the worker waits for it.
func (a *App) RunWorker(ctx context.Context) error {
	g, ctx := errgroup.WithContext(ctx)
	if a.Cfg.OutboxRelayEnabled {
		relay, stop, err := a.OutboxRelay()
		if err != nil {
			return err
		}
		defer stop()
		g.Go(func() error { return relay.Run(ctx) })
	}
	g.Go(func() error { return a.runTemporalWorker(ctx) })
	if a.Cfg.WorkerMetricsAddr != "" {
		g.Go(func() error { return a.serveWorkerMetrics(ctx) })
	}
	// The activities' commits (credits, events) wake the relays and the
	// dispatchers through the store's waker, until the last activity ended.
	return a.withWaker(ctx, func(context.Context) error { return g.Wait() })
}

// serveWorkerMetrics serves the process's /metrics on WORKER_METRICS_ADDR
// (a worker has no API to serve them) until ctx ends.
func (a *App) serveWorkerMetrics(ctx context.Context) error {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", metrics.Handler(a.Metrics))
	srv := &http.Server{Addr: a.Cfg.WorkerMetricsAddr, Handler: mux, ReadHeaderTimeout: 5 * time.Second, WriteTimeout: 10 * time.Second}
	ln, err := net.Listen("tcp", a.Cfg.WorkerMetricsAddr)
	if err != nil {
		return fmt.Errorf("WORKER_METRICS_ADDR %s: %w", a.Cfg.WorkerMetricsAddr, err)
	}
	a.Log.Info("worker metrics listening", "addr", ln.Addr().String())
	go func() {
		<-ctx.Done()
		shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdownCtx) //nolint:errcheck // best effort on the way out
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve worker metrics: %w", err)
	}
	return nil
}

// scheduleKeepInterval is how often a versioned worker asks whether its
// build is current (a build an operator promotes writes its settings this
// soon) and, while it is, compares the Schedules with its configuration
// (reads: it writes them only at its start and its build's promotion).
const scheduleKeepInterval = 15 * time.Second

func (a *App) runTemporalWorker(ctx context.Context) error {
	env := a.sagaEnv()
	queues := env.Queues
	opts := worker.Options{
		StopTimeout:             a.Cfg.WorkerStopTimeout,
		MaxConcurrentActivities: a.Cfg.WorkerMaxActivities,
		WorkflowTaskPollers:     a.Cfg.WorkerWorkflowTaskPollers,
	}
	if a.Cfg.WorkerVersioning {
		opts.Version = worker.ThisBuild(queues)
		if buildinfo.Read().Revision == "unknown" {
			// Every build without a VCS stamp nor a link-time revision
			// (an image built without its build args) has the build id
			// "devel": two such releases would be one version, and a new
			// one's workers would take the old one's pinned runs.
			a.Log.Error("worker build id names no revision: builds made this way share it; build with make image or make compose-build (docs/cli.md#build-identity)",
				"build_id", opts.Version.BuildID)
		}
	}
	workers := worker.New(a.Temporal, registry.All, env, opts)
	schedules := worker.Schedules{Client: a.Temporal, Sagas: registry.All, Env: env}
	ready, err := setUpWhileReachable(ctx, a.Log, a.waitForTemporal, func(ctx context.Context) error {
		if err := workflows.CheckSearchAttributes(ctx, a.Temporal, a.Cfg.TemporalNamespace); err != nil {
			return err
		}
		if a.Cfg.WorkerVersioning {
			return nil // the current build's worker keeps them (below)
		}
		return schedules.Sync(ctx)
	})
	if !ready {
		return err // nil: stopped while starting
	}
	registry.Started(env)
	a.Log.Info("worker running", "task_queues", queues.All(), "temporal_address", a.Cfg.TemporalAddress,
		"dispatcher", a.Cfg.DispatcherEnabled, "psp_url", a.Cfg.PSPURL,
		"deployment", opts.Version.DeploymentName, "build_id", opts.Version.BuildID)
	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error { return worker.Run(ctx, workers...) })
	if a.Cfg.WorkerVersioning {
		g.Go(func() error { return worker.Promote(ctx, a.Temporal, opts.Version, a.Cfg.WorkerPromote, a.Log) })
		g.Go(func() error {
			return worker.KeepSchedules(ctx, schedules, opts.Version, scheduleKeepInterval)
		})
	}
	if a.Cfg.DispatcherEnabled {
		for _, d := range a.Dispatchers() {
			g.Go(func() error { return d.Run(ctx) })
		}
	}
	return g.Wait()
}

// OutboxRelay builds the outbox relay on the broker at NATS_URL (required:
// config.CheckWorker). stop closes the connection.
func (a *App) OutboxRelay() (relay *outbox.Relay, stop func(), err error) {
	if err := a.Cfg.CheckWorker(); err != nil {
		return nil, nil, err
	}
	nc, err := broker.Connect(a.Cfg.NATSURL, "pixd outbox relay")
	if err != nil {
		return nil, nil, err
	}
	pub, err := broker.NewPublisher(nc, 5*time.Second, broker.StreamLimits{MaxAge: a.Cfg.NATSStreamMaxAge, MaxBytes: a.Cfg.NATSStreamMaxBytes},
		broker.WithTracing(a.tracing))
	if err != nil {
		nc.Close()
		return nil, nil, err
	}
	relay = outbox.New(a.Store, pub.Publish, outbox.Options{BatchSize: a.Cfg.OutboxBatchSize, PollInterval: a.Cfg.OutboxPollInterval, GatherWindow: a.Cfg.OutboxGatherWindow}, a.Log)
	return relay, nc.Close, nil
}

// waitForTemporal returns true once Temporal answers, false when ctx ends
// first. A worker started while Temporal is down waits for it instead of
// exiting (the SDK's worker start fails outright when it can't reach the
// server).
func (a *App) waitForTemporal(ctx context.Context) bool {
	// Asked again after 1 s, doubling up to 30 s.
	wait := &backoff.ExponentialBackOff{InitialInterval: time.Second, Multiplier: 2, MaxInterval: 30 * time.Second}
	_, err := backoff.Retry(ctx, func() (struct{}, error) {
		// GetSearchAttributes rather than CheckHealth: any workflow-service
		// call loads the server's capabilities into the client, and it must
		// happen once before the dispatcher's concurrent starts (the SDK
		// reads them unsynchronized for eager start; found by -race).
		checkCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		_, err := a.Temporal.GetSearchAttributes(checkCtx)
		return struct{}{}, err
	}, backoff.WithBackOff(wait), backoff.WithMaxElapsedTime(0), backoff.WithNotify(func(err error, next time.Duration) {
		a.Log.Warn("Temporal unreachable; the worker waits for it", "temporal_address", a.Cfg.TemporalAddress,
			"error", err, "retry_in", next.String())
	}))
	return err == nil
}

// setUpWhileReachable runs the worker's set-up against Temporal once
// waitForTemporal found it up, again from the wait if Temporal went away
// meanwhile (unreachable or timing out: a restart, a deploy), until it is
// done (ready) or fails for good (a search attribute missing: err). A stop
// while starting is no failure: not ready, and no error.
func setUpWhileReachable(ctx context.Context, log *slog.Logger, waitForTemporal func(context.Context) bool, setUp func(context.Context) error) (ready bool, err error) {
	for {
		if !waitForTemporal(ctx) {
			return false, nil // stopped while waiting
		}
		err := setUp(ctx)
		switch {
		case err == nil:
			return true, nil
		case ctx.Err() != nil:
			return false, nil // stopped while setting up
		case !temporalUnreachable(err):
			return false, err
		}
		log.Warn("Temporal went away while the worker was setting up; it waits for it again", "error", err)
	}
}

// temporalUnreachable reports whether err is Temporal not answering (down,
// restarting, too slow), not Temporal refusing.
func temporalUnreachable(err error) bool {
	var unavailable *serviceerror.Unavailable
	var deadline *serviceerror.DeadlineExceeded
	return errors.As(err, &unavailable) || errors.As(err, &deadline) || errors.Is(err, context.DeadlineExceeded)
}
