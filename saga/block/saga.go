package block

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
// The core's refusals a block meets (a hold's) are answered as the
// block's own: the core's hold kinds carry no HTTP answer.
var (
	// ErrNotFound: no block with the id on the PIX.
	ErrNotFound = errors.New("block not found")
	// ErrReturned: the block was returned (or is being returned): it can't
	// be released.
	ErrReturned = errors.New("block returned")
	// ErrReleased: the block was released: it can't be returned.
	ErrReleased = errors.New("block released")
	// ErrExceedsCredit: the PIX's active holds and devoluções leave less
	// than the block asks.
	ErrExceedsCredit = errors.New("block exceeds what the pix has left")
	// ErrNotAvailable: the account's available balance does not cover the
	// block (the customer spent the money already).
	ErrNotAvailable = errors.New("block exceeds the available balance")
)

// Kinds are the saga's business errors, added to pix.Kinds.
var Kinds = pix.DeclareKinds(
	&pix.Kind{Err: ErrNotFound, Refusal: true,
		Status: http.StatusNotFound, Code: "block_not_found", Message: "no block with this id on this PIX",
		TemporalType: "BlockNotFound"},
	&pix.Kind{Err: ErrReturned, Refusal: true,
		Status: http.StatusConflict, Code: "block_returned",
		Message: "the block is returned, or being returned, to the payer: it can't be released"},
	&pix.Kind{Err: ErrReleased, Refusal: true,
		Status: http.StatusConflict, Code: "block_released",
		Message: "the block was released (by an operator, or at its 72 hours): it can't be returned"},
	&pix.Kind{Err: ErrExceedsCredit, Refusal: true,
		Status: http.StatusUnprocessableEntity, Code: "block_exceeds_credit",
		Message: "the PIX's credit, less what is held or returned of it already, does not cover the block"},
	&pix.Kind{Err: ErrNotAvailable, Refusal: true,
		Status: http.StatusUnprocessableEntity, Code: "block_exceeds_available",
		Message: "the account's available balance does not cover the block; nothing was held"},
)

// Event types of the saga, each of the aggregate pix_block (its id), with
// one payload (internal/broker/schemas/pix.block.*.json). created is the
// customer's notice.
const (
	EventCreated   = "pix.block.created"
	EventReturning = "pix.block.returning"
	EventReleased  = "pix.block.released"
	EventReturned  = "pix.block.returned"
	Aggregate      = "pix_block"
)

// Events are the saga's event types, added to db.EventTypes.
var Events = db.DeclareEvents(map[string]string{EventCreated: Aggregate, EventReturning: Aggregate,
	EventReleased: Aggregate, EventReturned: Aggregate})

// Saga is the cautionary block, declared once: listed in saga/registry.
var Saga = saga.Descriptor{
	Name: "block",
	// A block holds a PIX received and hands its return to the devolução
	// saga: its runs are on the devoluções' queue.
	Family:    runconf.Refunds,
	Workflows: map[string]any{WorkflowName: Workflow},
	// AutoUpgrade: a run sleeps 72 hours, beyond a release's drain; its
	// changes replay the histories before them.
	Versioning: workflow.VersioningBehaviorAutoUpgrade,
	Deps: func(env saga.Env) any {
		return &Activities{Store: NewStore(env.Store), Log: env.Log}
	},
	Activities: func(deps any) []any { return []any{deps.(*Activities)} },
	Source: func(env saga.Env, taskQueue string) durable.Source {
		return Source(NewStore(env.Store).Queue(), taskQueue)
	},
	Kinds:      Kinds,
	Events:     Events,
	HTTP:       httpOf,
	Collectors: collectors,
}
