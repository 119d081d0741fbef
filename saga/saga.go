package saga

import (
	"context"
	"log/slog"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/workflow"

	"github.com/pixbank/pix/activities"
	"github.com/pixbank/pix/api"
	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/internal/config"
	"github.com/pixbank/pix/internal/durable"
	"github.com/pixbank/pix/internal/metrics"
	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/internal/psp"
	"github.com/pixbank/pix/internal/runconf"
	"github.com/pixbank/pix/saga/sagakit"
	"github.com/pixbank/pix/workflows"
)

// Env is what every saga's activities, durable source and Schedule are
// built from: the process's shared dependencies, one of each.
type Env struct {
	Store *db.Store
	// PSP is the one PSP client every activity that calls the PSP shares
	// (*psp.HTTPClient in pixd).
	PSP PSP
	Cfg config.Config
	// Queues are the families' task queues (Cfg.TaskQueues() in pixd; a
	// test isolates its runs with a base of its own).
	Queues runconf.TaskQueues
	Log    *slog.Logger
	// Metrics counts what the activities and dispatchers did.
	Metrics *metrics.Worker
	// Temporal is the process's Temporal client (a saga's routes signal
	// its runs).
	Temporal client.Client
	// Lookup reads a saga's own settings from the environment
	// (os.LookupEnv in pixd).
	Lookup func(key string) (string, bool)
	// Schedules brings a saga's Schedules to the configuration (Schedule).
	Schedules workflows.ScheduleSync
	// Process keeps what a saga builds once per process (Kept): its
	// metrics, which its activities count into and its Collectors
	// register. One per process (per app.App: a test may run several).
	Process *Process
}

// Process is what the sagas keep per process, each value built once.
type Process struct {
	mu   sync.Mutex
	kept map[any]any
}

// NewProcess is a process with nothing kept yet.
func NewProcess() *Process { return &Process{kept: map[any]any{}} }

// Kept is p's value of key (a saga's own unexported type), built by build
// the first time it is asked for. A nil p keeps nothing: each call builds
// anew (an Env of a test that registers no metrics).
func Kept[T any](p *Process, key any, build func() T) T {
	if p == nil {
		return build()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if v, ok := p.kept[key]; ok {
		return v.(T)
	}
	v := build()
	p.kept[key] = v
	return v
}

// FinishedOf is env's process's counter of a saga's runs ended, by
// outcome (sagakit.Finished), named name: built once per process (Kept),
// what the saga's activities count into (its Deps) and its Collectors
// register.
func FinishedOf(env Env, name, help string) *sagakit.Finished {
	return Kept(env.Process, finishedKey(name), func() *sagakit.Finished { return sagakit.NewFinished(name, help) })
}

// finishedKey keeps a FinishedOf counter by its name, which Prometheus
// holds unique in a registry.
type finishedKey string

// PSP is what the sagas' activities ask of the PSP.
type PSP interface {
	psp.Client
	psp.RefundClient
	psp.ReceivedLister
}

// Registry is what workflows and activities are registered on: a worker,
// a test environment, a recording fake.
type Registry interface {
	WorkflowRegistry
	RegisterActivity(any)
}

// WorkflowRegistry is what workflows alone are registered on: a replayer.
type WorkflowRegistry interface {
	RegisterWorkflowWithOptions(any, workflow.RegisterOptions)
}

// Descriptor is one saga, declared once.
type Descriptor struct {
	// Name names the saga in messages and tests ("credit", "refund", ...).
	Name string
	// Family is the saga's family: its workflows and activities are
	// registered on that family's worker, which polls Queues.Of(Family).
	Family runconf.Family
	// AlsoOn are families whose workers register the saga as well, for
	// deploy safety: runs started on a queue before the saga's family had
	// one of its own still find a worker there.
	AlsoOn []runconf.Family
	// Workflows are the saga's workflow functions by their registered
	// name. The names are recorded in every run's history: never change
	// one (the replay tests and worker_test.go pin them).
	Workflows map[string]any
	// Versioning is how the saga's runs follow a new build of the workers
	// (Temporal's Worker Versioning, docs/operations.md "Upgrading the
	// workers"): workflow.VersioningBehaviorPinned keeps a run on the
	// build it started on, to its end, so a change to the saga's workflow
	// code needs no workflow.GetVersion and a rollback strands nothing,
	// but that build's workers must keep running until its runs are done
	// (drained): for a saga whose runs end within a release's drain (hours
	// at most). workflow.VersioningBehaviorAutoUpgrade moves a run to the
	// current build at its next workflow task: for runs that outlive a
	// release (a scheduled PIX sleeps until its date), whose every change
	// must then replay the histories of the builds before it (the saga's
	// replay tests). Every saga sets one: a versioned worker refuses a
	// workflow without it.
	Versioning workflow.VersioningBehavior
	// Settings checks the saga's own settings, read through lookup
	// (Env.Lookup: the process's environment), whose variables
	// config.Variables declares with the roles that use them (pixd help
	// lists them): an error stops pixd at start, in every role, as a
	// wrong variable of config.Load's does (registry.CheckSettings). nil:
	// the saga reads none, or reads them where an error can stop the start
	// (HTTP).
	Settings func(lookup func(string) (string, bool)) error
	// Help is what pixd help says of the saga's settings beyond their
	// names (a choice a deployment must make: MED's DICT); "": nothing.
	Help string
	// Deps builds the struct of the saga's activities' dependencies from
	// env. Every pointer, interface, func or map field of it is set.
	Deps func(env Env) any
	// Activities are what the worker registers with RegisterActivity for
	// deps (what Deps built): method values, or the struct itself, whose
	// exported methods are then each an activity. Their names are
	// recorded: never rename a method.
	Activities func(deps any) []any
	// Source is the saga's durable start (internal/durable), its runs
	// started on taskQueue (Queues.Of(Family)); nil for a saga its
	// Schedule starts.
	Source func(env Env, taskQueue string) durable.Source
	// Wakes is the saga's durable wake-ups of its open runs (signals,
	// never starts), on a queue of their own, dispatched beside Source
	// (kinds apart in the dispatch metrics): a build that predates them
	// never sees one. nil: none.
	Wakes func(env Env) durable.Source
	// Schedule creates or updates the Temporal Schedules that start the
	// saga's runs, when the worker starts (worker.KeepSchedules); nil for
	// a saga with a Source. It writes only through env.Schedules
	// (workflows.ScheduleSync), whose read-only mode the current build's
	// workers check the Schedules with.
	Schedule func(ctx context.Context, c client.Client, env Env) error
	// Kinds are the saga's business errors: its list in package pix
	// (pix.CreditKinds, ...), which pix.Kinds holds with every other
	// saga's and pix.SharedKinds. Nil for a saga that refuses nothing.
	Kinds []*pix.Kind
	// Events are the saga's outbox event types, each with its aggregate
	// type: its map in package db (db.CreditEvents, ...), which
	// db.EventTypes merges with every other saga's. A saga with a Source
	// declares at least one (its outcome is announced); a saga its
	// Schedule starts may declare none.
	Events map[string]string
	// HTTP builds the saga's HTTP side from env: its routes, each under
	// its scope (customer read or write, operator), its hook on the
	// notifications of a received webhook, its section of a credit's view
	// (api.SagaHTTP). An error (a setting of the saga's that is wrong)
	// stops pixd at start. nil: the saga has none.
	HTTP func(env Env) (api.SagaHTTP, error)
	// Collectors are the saga's own Prometheus metrics, built from env
	// once per process and registered on its registry; nil: none.
	Collectors func(env Env) []prometheus.Collector
	// HoldsFilled builds the saga's hook on the holds an inflow filled (a
	// hold of its own that fills, db.NewHold.FillFromCredits: a PIX
	// credited, a transfer refunded, a devolução reversed, another hold
	// released or shrunk), which the store calls after the inflow's commit
	// with every hold it filled (db.Store.InTx; registry.WatchFills
	// sets the hooks up in every process): the saga wakes its runs waiting
	// for the money, and keeps a look of its own as the backstop of a
	// wake-up lost. It never fails the inflow. nil: none.
	HoldsFilled func(env Env) db.FillsHook
	// Started runs once in a worker process, when it has started (its
	// Schedules set up): what the saga says of its settings then, such as
	// a WARN that they work but fall short (registry.Started). nil:
	// nothing.
	Started func(env Env)
}

// Register registers the saga's workflows and activities on r, the
// activities built from env.
func (d Descriptor) Register(r Registry, env Env) {
	d.RegisterWorkflows(r)
	for _, a := range d.Activities(d.Deps(env)) {
		r.RegisterActivity(a)
	}
}

// RegisterWorkflows registers the saga's workflows on r under their
// recorded names, with the saga's versioning behaviour (which an
// unversioned worker and a replayer ignore).
func (d Descriptor) RegisterWorkflows(r WorkflowRegistry) {
	for name, fn := range d.Workflows {
		r.RegisterWorkflowWithOptions(fn, workflow.RegisterOptions{Name: name, VersioningBehavior: d.Versioning})
	}
}

// inAPI is the HTTP side of a saga whose handlers are in package api (the
// sagas before the package form), declared there: it reads api.Deps.Stores,
// not env.
func inAPI(http func() api.SagaHTTP) func(Env) (api.SagaHTTP, error) {
	return func(Env) (api.SagaHTTP, error) { return http(), nil }
}

// sharedActivities are the credit's activities' dependencies.
func sharedActivities(env Env) any {
	return &activities.Activities{Store: env.Store, Logger: env.Log, Metrics: env.Metrics}
}
