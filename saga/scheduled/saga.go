package scheduled

import (
	"errors"
	"net/http"

	"go.temporal.io/sdk/workflow"

	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/internal/durable"
	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/internal/runconf"
	"github.com/pixbank/pix/saga"
)

// The saga's business refusals, declared once with their answers (Kinds).
var (
	// ErrNotFound: no scheduled PIX with the id (or another customer's).
	ErrNotFound = errors.New("scheduled pix not found")
	// ErrAlreadyRan: the scheduled PIX ran (executed or failed) before it
	// was cancelled.
	ErrAlreadyRan = errors.New("scheduled pix already ran")
	// ErrLimitReached: the account holds the most scheduled PIX still to
	// run (a scheduled PIX costs nothing until its date: without a bound,
	// one customer could fill the table and the timers).
	ErrLimitReached = errors.New("too many scheduled pix still to run")
)

// Kinds are the saga's business errors, added to pix.Kinds.
var Kinds = pix.DeclareKinds(
	&pix.Kind{Err: ErrNotFound, Refusal: true,
		Status: http.StatusNotFound, Code: "scheduled_pix_not_found", Message: "no scheduled PIX with this id",
		TemporalType: "ScheduledPixNotFound"},
	&pix.Kind{Err: ErrAlreadyRan, Refusal: true,
		Status: http.StatusConflict, Code: "scheduled_pix_already_ran",
		Message: "the scheduled PIX already ran (see its status): it can't be cancelled"},
	&pix.Kind{Err: ErrLimitReached, Refusal: true,
		Status: http.StatusUnprocessableEntity, Code: "scheduled_pix_limit_reached",
		Message: "the account holds the most scheduled PIX still to run; cancel one, or wait for one to run"},
)

// Event types of the saga, each of the aggregate pix_scheduled (its id),
// with one payload (internal/broker/schemas/pix.scheduled.*.json).
const (
	EventCreated   = "pix.scheduled.created"
	EventConcluded = "pix.scheduled.concluded"
	Aggregate      = "pix_scheduled"
)

// Events are the saga's event types, added to db.EventTypes.
var Events = db.DeclareEvents(map[string]string{EventCreated: Aggregate, EventConcluded: Aggregate})

// Saga is the scheduled PIX, declared once: listed in saga/registry.
var Saga = saga.Descriptor{
	Name: "scheduled",
	// The scheduled PIX is an outgoing PIX: its runs sleep on the
	// transfers' queue and hand over to the transfer saga there.
	Family:    runconf.Transfers,
	Workflows: map[string]any{WorkflowName: Workflow},
	// AutoUpgrade: a run sleeps until its date, beyond any release's
	// drain; its changes replay the histories before them (replay_test.go).
	// The debit's saga it hands over to, the transfer, is pinned.
	Versioning: workflow.VersioningBehaviorAutoUpgrade,
	Deps: func(env saga.Env) any {
		return &Activities{Store: NewStore(env.Store), BankISPB: env.Cfg.BankISPB, Log: env.Log}
	},
	Activities: func(deps any) []any { return []any{deps.(*Activities)} },
	Source: func(env saga.Env, taskQueue string) durable.Source {
		return Source(NewStore(env.Store).Queue(), taskQueue)
	},
	Wakes: func(env saga.Env) durable.Source {
		store := NewStore(env.Store)
		return WakeSource(store.WakeQueue(), store)
	},
	Kinds:      Kinds,
	Events:     Events,
	HTTP:       httpOf,
	Collectors: collectors,
}
