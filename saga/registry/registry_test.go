package registry_test

import (
	"io"
	"log/slog"
	"reflect"
	"slices"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	temporalclient "go.temporal.io/sdk/client"
	"go.temporal.io/sdk/workflow"

	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/internal/config"
	"github.com/pixbank/pix/internal/durable"
	"github.com/pixbank/pix/internal/metrics"
	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/internal/psp"
	"github.com/pixbank/pix/internal/runconf"
	"github.com/pixbank/pix/saga"
	"github.com/pixbank/pix/saga/registry"
)

// env is an Env with every dependency set, built offline: no PostgreSQL
// (the pool is never used), no PSP (never called).
func env(t *testing.T) saga.Env {
	t.Helper()
	cfg := config.Default()
	client, err := psp.New(cfg.PSP())
	require.NoError(t, err)
	registry := prometheus.NewRegistry()
	temporal, err := temporalclient.NewLazyClient(temporalclient.Options{HostPort: "127.0.0.1:1"}) // never dialled
	require.NoError(t, err)
	e := saga.Env{Store: db.NewStore(nil), PSP: client, Cfg: cfg, Queues: cfg.TaskQueues(),
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Metrics: metrics.NewWorker(registry),
		Temporal: temporal, Lookup: func(string) (string, bool) { return "", false }, Process: saga.NewProcess()}
	// Every field is set, so that a nil dependency below is a saga's
	// wiring, not this test's (a new field of Env must be set here).
	require.Empty(t, nilFields(reflect.ValueOf(e)), "set every field of the test's Env")
	return e
}

// nilFields are the pointer, interface, func, map, chan or slice fields of
// the struct v (or *v) that hold nothing: an interface holding a nil
// pointer counts as nil (a nil *psp.HTTPClient as a psp.Client).
func nilFields(v reflect.Value) []string {
	if v.Kind() == reflect.Pointer {
		v = v.Elem()
	}
	var out []string
	for i := range v.NumField() {
		f := v.Field(i)
		if f.Kind() == reflect.Interface && !f.IsNil() {
			f = f.Elem()
		}
		switch f.Kind() {
		case reflect.Pointer, reflect.Interface, reflect.Func, reflect.Map, reflect.Chan, reflect.Slice:
			if f.IsNil() {
				out = append(out, v.Type().Name()+"."+v.Type().Field(i).Name)
			}
		}
	}
	return out
}

// recorder records what a saga registers.
type recorder struct {
	workflows          []string
	activities, absent int
}

func (r *recorder) RegisterWorkflowWithOptions(_ any, o workflow.RegisterOptions) {
	r.workflows = append(r.workflows, o.Name)
}

func (r *recorder) RegisterActivity(a any) {
	if a == nil || reflect.ValueOf(a).IsNil() {
		r.absent++
		return
	}
	r.activities++
}

// Every saga in registry.All is wired: it has a family with a worker, it
// registers workflows and activities, its activities get every
// dependency, and something starts its runs (a durable source or a
// Schedule); every family has a saga, and every due queue of the store is
// one saga's source. This is what catches a saga added, or a part of it
// removed, without its wiring: nothing else does before the integration
// tests.
func TestEveryDescriptorIsWired(t *testing.T) {
	e := env(t)
	names := map[string]bool{}
	workflowNames := map[string]string{}
	sourceOf := map[string][]string{} // queue channel -> sagas
	kinds := map[string]string{}
	for _, d := range registry.All {
		require.NotEmpty(t, d.Name, "a saga without a name (family %q)", d.Family)
		require.False(t, names[d.Name], "two sagas named %q", d.Name)
		names[d.Name] = true
		require.Contains(t, runconf.Families, d.Family, "%s: its family has no worker (runconf.Families)", d.Name)
		for _, f := range d.AlsoOn {
			require.Contains(t, runconf.Families, f, "%s: also on a family with no worker", d.Name)
			require.NotEqual(t, d.Family, f, "%s: also on its own family", d.Name)
		}

		// Something starts its runs.
		require.True(t, d.Source != nil || d.Schedule != nil, "%s: no source: neither a durable source nor a Schedule starts its runs", d.Name)
		// Each durable queue it dispatches (its start's, its wake-ups'):
		// a kind of its own, labelling the dispatch metrics.
		dispatched := func(what string, src durable.Source) {
			require.NotNil(t, src.Queue, "%s: its %s has no queue", d.Name, what)
			require.NotNil(t, src.Start, "%s: its %s has no Start", d.Name, what)
			require.NotEmpty(t, src.Kind, "%s: its %s has no kind", d.Name, what)
			require.NotContains(t, kinds, src.Kind, "%s: %s kind %q is %s's too (it labels the dispatch metrics)", d.Name, what, src.Kind, kinds[src.Kind])
			kinds[src.Kind] = d.Name
			sourceOf[src.Queue.Channel()] = append(sourceOf[src.Queue.Channel()], d.Name)
		}
		if d.Source != nil {
			dispatched("source", d.Source(e, e.Queues.Of(d.Family)))
		}
		if d.Wakes != nil {
			require.NotNil(t, d.Source, "%s: wake-ups without a durable source", d.Name)
			dispatched("wake-ups", d.Wakes(e))
		}

		// How its runs follow a new build: a versioned worker refuses a
		// workflow without it (panics at registration).
		require.Contains(t, []workflow.VersioningBehavior{workflow.VersioningBehaviorPinned, workflow.VersioningBehaviorAutoUpgrade}, d.Versioning,
			"%s: no Versioning (saga.Descriptor.Versioning)", d.Name)

		// Its worker registers workflows and activities.
		require.NotNil(t, d.Deps, "%s: no activities' dependencies", d.Name)
		require.NotNil(t, d.Activities, "%s: no activities", d.Name)
		r := &recorder{}
		d.Register(r, e)
		require.NotEmpty(t, r.workflows, "%s: no workflow registered", d.Name)
		require.Positive(t, r.activities, "%s: no activity registered", d.Name)
		require.Zero(t, r.absent, "%s: a nil activity registered", d.Name)
		for _, name := range r.workflows {
			require.NotContains(t, workflowNames, name, "%s: workflow %s is registered by %s too", d.Name, name, workflowNames[name])
			workflowNames[name] = d.Name
		}

		// Its activities get every dependency.
		deps := reflect.ValueOf(d.Deps(e))
		require.Equal(t, reflect.Pointer, deps.Kind(), "%s: Deps builds a %s, not a pointer to a struct", d.Name, deps.Kind())
		require.Empty(t, nilFields(deps), "%s: a nil dependency of its activities", d.Name)
	}

	for _, f := range runconf.Families {
		require.True(t, slices.ContainsFunc(registry.All, func(d saga.Descriptor) bool { return d.Family == f }),
			"family %q has no saga in registry.All: its worker would register nothing", f)
	}

	// Every due queue declared (db.DeclareQueue, by package db or a saga's
	// own) is the source of exactly one saga: a queue nobody dispatches is
	// rows that never start.
	queues := e.Store.DueQueues()
	require.GreaterOrEqual(t, len(queues), 3, "the declared queues were not found (inbox, transfers, refunds)")
	for _, q := range queues {
		require.Len(t, sourceOf[q.Channel()], 1, "the queue on channel %s is the source of %d sagas %v, not of exactly one",
			q.Channel(), len(sourceOf[q.Channel()]), sourceOf[q.Channel()])
	}
	require.Len(t, sourceOf, len(queues), "a saga's source is on a queue no one declared")
}

// Every business error kind (pix.Kinds) and every event type
// (db.EventTypes) is owned: each kind by exactly one saga or by
// pix.SharedKinds, each event type by exactly one saga, and a saga
// declares nothing the registries lack. Every saga with a durable source
// declares an event type. The registries are built from the sagas' lists
// in packages pix and db, which cannot import this package: this is what
// catches a list left out of them, or one no descriptor names.
func TestEveryKindAndEventIsASagas(t *testing.T) {
	kindOwner := map[*pix.Kind]string{}
	own := func(owner string, k *pix.Kind) {
		require.NotNil(t, k, "%s: a nil kind", owner)
		require.NotContains(t, kindOwner, k, "%s: kind %v is %s's too", owner, k.Err, kindOwner[k])
		require.Contains(t, pix.Kinds, k, "%s: kind %v is not in pix.Kinds (add its list to the Concat there, or declare it with pix.DeclareKinds)", owner, k.Err)
		kindOwner[k] = owner
	}
	eventOwner := map[string]string{}
	for _, d := range registry.All {
		for _, k := range d.Kinds {
			own(d.Name, k)
		}
		if d.Source != nil {
			require.NotEmpty(t, d.Events, "%s: a saga with a durable source declares no event type (its Events: db.<Saga>Events)", d.Name)
		}
		for typ, aggregate := range d.Events {
			require.NotContains(t, eventOwner, typ, "%s: event type %s is %s's too", d.Name, typ, eventOwner[typ])
			require.Contains(t, db.EventTypes, typ, "%s: event type %s is not in db.EventTypes (add its map to mergeEventTypes there, or declare it with db.DeclareEvents)", d.Name, typ)
			require.Equal(t, db.EventTypes[typ], aggregate, "%s: event type %s with another aggregate than db.EventTypes's", d.Name, typ)
			eventOwner[typ] = d.Name
		}
	}
	for _, k := range pix.SharedKinds {
		own("shared (pix.SharedKinds)", k)
	}
	for _, k := range pix.Kinds {
		require.Contains(t, kindOwner, k, "kind %v is in pix.Kinds but in no saga's Kinds nor in pix.SharedKinds", k.Err)
	}
	for typ := range db.EventTypes {
		require.Contains(t, eventOwner, typ, "event type %s is in db.EventTypes but in no saga's Events", typ)
	}
}

// Every variable a saga reads in its own package (saga.Descriptor.Settings)
// is declared in config.Variables, which pixd's help lists and
// docs/configuration.md documents (config's own test holds them to it),
// and registry.CheckSettings names a wrong one as config.Load does. Each
// saga's defaults pass but for the choices a deployment must make
// (chosen): MED's DICT, configured or disabled, never left to a default.
func TestSagasReadOnlyDeclaredVariables(t *testing.T) {
	chosen := map[string]string{"MED_DICT_DISABLED": "true"}
	declared := map[string]bool{}
	for _, v := range config.Variables {
		declared[v.Name] = true
	}
	read := map[string]string{}
	for _, d := range registry.All {
		if d.Settings == nil {
			continue
		}
		require.NoError(t, d.Settings(func(name string) (string, bool) {
			read[name] = d.Name
			v, ok := chosen[name]
			return v, ok
		}), "%s: its defaults", d.Name)
	}
	require.NotEmpty(t, read, "no saga reads a setting")
	for name, saga := range read {
		require.True(t, declared[name], "%s reads %s, which config.Variables does not declare (pixd help and docs/configuration.md list it from there)", saga, name)
	}

	wrong := map[string]string{"PSP_CATCHUP_OVERLAP": "never", "MED_DICT_DISABLED": "true"}
	err := registry.CheckSettings(config.LookupIn(wrong))
	require.EqualError(t, err, `configuration: PSP_CATCHUP_OVERLAP: "never" is not a duration of 0 or more, such as 10m (0: no wait)`)
	require.NoError(t, registry.CheckSettings(config.LookupIn(chosen)))
	require.ErrorContains(t, registry.CheckSettings(func(string) (string, bool) { return "", false }),
		"configuration: MED_DICT_URL: not set")
}
