package rows

import (
	"context"
	"time"
)

// Due is an open row whose workflow must be (re)started: its saga's row
// (Key is the row's key: an end_to_end_id, a transfer or refund id). A
// queue's claim returns each field as the column its db tag names
// (db.QueueSpec builds the statements from them).
type Due struct {
	Key      string `db:"key"`
	Attempts int    `db:"attempts"`
	// Drive is the row's drive when it was claimed (always 1 for a
	// transfer): the dispatcher's records of this claim are fenced by it.
	Drive int `db:"drive"`
	// Dispatched is true when a run of the row's current drive was started.
	Dispatched bool `db:"dispatched"`
	// What the run is listed under in the Temporal UI: the PIX's
	// end_to_end_id, account (nil while an API Pix key is unresolved),
	// amount, status, PSP (nil for an unsigned notification and for
	// transfers) and memo (the payer, or the payee's key).
	EndToEndID  string         `db:"end_to_end_id"`
	AccountID   *string        `db:"account_id"`
	AmountCents int64          `db:"amount_cents"`
	Status      string         `db:"status"`
	PSP         *string        `db:"psp"`
	Memo        map[string]any `db:"memo"`
	// Since is when the row was committed (received_at, created_at): the
	// first start of a first drive measures the dispatch lag from it.
	Since time.Time `db:"since"`
	// Traceparent is the trace context the row was created in (the W3C
	// traceparent of the request's span; nil: none): its workflow is
	// started under it, continuing that trace.
	Traceparent *string `db:"traceparent"`
}

// FirstStart reports whether starting the row's workflow now is its first
// start ever (no earlier drive, no attempt): the start that the dispatch lag
// measures.
func (d Due) FirstStart() bool { return !d.Dispatched && d.Attempts == 0 }

// Queue is a saga's due rows, in the database (db.DueQueue).
type Queue interface {
	// Channel is the notification channel that says rows came due.
	Channel() string
	// Claim claims up to limit due rows, pushing their due time lease
	// ahead so that concurrent dispatchers skip them; if the claimer dies
	// before recording the outcome, they come due again after the lease.
	Claim(ctx context.Context, limit int, lease time.Duration) ([]Due, error)
	// MarkDispatched and DeferDispatch record the outcome of claimed rows'
	// starts, fenced by the drive each row was claimed in: a record that
	// arrives after the row was re-driven changes nothing. MarkDispatched
	// takes the rows whose start began a run (started) and those whose run
	// was open already (open); both come due again as recheck says. A
	// deferred row comes due again after delay.
	MarkDispatched(ctx context.Context, started, open []Due, recheck Recheck) error
	DeferDispatch(ctx context.Context, claimed []Due, delay time.Duration) error
}

// Recheck is when a row whose run was started comes due again, to make
// sure its run still exists. After a start that began the run, it waits
// After; after a recheck that found the run open, as long as the run has
// been open (since the start that began it), never less than After nor
// more than Max. The rechecks of one run then come at about 2, 4, 8, 16,
// 32 minutes, then every Max: a run merely queued behind a
// backlog is not started again every After, a run that ended without its
// row (terminated, lost, given up) is started again at most Max after, and
// a young run (a new one after a run gave up) is rechecked After its start.
type Recheck struct {
	After, Max time.Duration
}
