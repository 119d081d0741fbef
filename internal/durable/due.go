package durable

import (
	"context"

	"go.temporal.io/sdk/client"

	"github.com/pixbank/pix/internal/durable/rows"
)

// Due, Queue and Recheck are package rows's: the store implements Queue
// without linking the Temporal SDK.
type (
	Due     = rows.Due
	Queue   = rows.Queue
	Recheck = rows.Recheck
)

// Source is one saga's durable starts: its queue and its workflow's start.
type Source struct {
	// Kind names the rows in logs and metrics ("inbox", "transfers", ...).
	Kind  string
	Queue Queue
	// Start starts the row's workflow (StartOnce); started is false when
	// a run of it was already open.
	Start func(ctx context.Context, c client.Client, due Due) (started bool, err error)
	// LogAttrs name the row and its workflow in log lines.
	LogAttrs func(due Due) []any
	// Redrives says the rows' drives change (a failed row re-driven): an
	// open run that the row's current drive did not start is then an older
	// drive's, still closing, and the start is tried again shortly. Without
	// re-drives an open run is the row's own (its start's answer was lost,
	// or its record failed) and is recorded as running.
	Redrives bool
}
