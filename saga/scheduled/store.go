package scheduled

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/internal/rowscan"
	"github.com/pixbank/pix/internal/tracing"
	"github.com/pixbank/pix/saga/sagakit"
)

// The statuses of a scheduled PIX: scheduled until it concludes, once, as
// executed (its transfer made), failed (nothing debited) or cancelled.
const (
	StatusScheduled = "scheduled"
	StatusExecuted  = "executed"
	StatusFailed    = "failed"
	StatusCancelled = "cancelled"
)

// DueChannel is the notification channel that says scheduled PIX are due
// for dispatch (their saga's run to start).
const DueChannel = "pix_scheduled_due"

// WakeChannel is the notification channel that says cancels are due for
// their run's wake-up (WakeSource).
const WakeChannel = "pix_scheduled_cancel_wake_due"

//go:embed queries.sql
var queryFiles embed.FS

// scheduledSQL holds the statements of queries.sql.
var scheduledSQL struct {
	AccountStatus, CountPending, Create, Get, Lock, ListByAccount, ListByAccountStatus, Conclude,
	AddCancelWake, EndCancelWake, Pending string
}

func init() { db.BindQueries(queryFiles, "queries.sql", &scheduledSQL) }

// queue is the scheduled PIX whose run must be going: those still
// scheduled. A run waits until run_at on purpose, so it is not rechecked
// before (NotBefore): a PIX scheduled 30 days ahead costs no start until
// its date; one whose run was lost is started again then.
var queue = db.DeclareQueue(db.QueueSpec{
	Name: "scheduled", Table: "pix_scheduled", Key: "id", KeyType: "uuid", Channel: DueChannel,
	Open:      "m.dispatch_due_at IS NOT NULL",
	Attempts:  "0",
	Drive:     "1",
	NotBefore: "run_at",
	Listing: db.Listing{
		EndToEndID: "COALESCE(m.end_to_end_id, '')", AccountID: "m.account_id", AmountCents: "m.amount_cents",
		Status: "m.status", PSP: "NULL::text",
		Memo:  "jsonb_build_object('payee_pix_key', m.pix_key, 'scheduled_for', to_char(m.scheduled_for, 'YYYY-MM-DD'))",
		Since: "m.created_at", Traceparent: "m.traceparent",
	},
})

// wakeQueue is the cancels whose run must be woken (a signal: WakeSource),
// a queue of its own (pix_scheduled_cancel_wakes, 0060), apart from
// pix_scheduled's: a build before it, which starts a run for any row due
// in pix_scheduled whatever its status, never sees a wake-up (a rollback,
// a rolling upgrade). An entry is written once, by the cancel that
// concluded its row, and deleted when its signal was delivered or no run
// is open: its drive is always 1. Its listing names the cancelled row only
// by its key (the scheduled id): a wake starts nothing to list.
var wakeQueue = db.DeclareQueue(db.QueueSpec{
	Name: "scheduled_cancel_wake", Table: "pix_scheduled_cancel_wakes", Key: "scheduled_id", KeyType: "uuid",
	Channel:  WakeChannel,
	Open:     "m.dispatch_due_at IS NOT NULL",
	Attempts: "0",
	Drive:    "1",
	Listing: db.Listing{
		EndToEndID: "''", AccountID: "NULL::text", AmountCents: "0::bigint", Status: "'cancelled'::text",
		PSP: "NULL::text", Memo: "NULL::jsonb", Since: "m.created_at", Traceparent: "NULL::text",
	},
})

// Scheduled is a scheduled PIX as the API shows it.
type Scheduled struct {
	ID          uuid.UUID `json:"id"`
	AccountID   string    `json:"account_id"`
	AmountCents int64     `json:"amount_cents"`
	PixKey      string    `json:"pix_key"`
	Description *string   `json:"description"`
	// ScheduledFor is the date (YYYY-MM-DD, America/Sao_Paulo); RunAt the
	// instant it runs.
	ScheduledFor string    `json:"scheduled_for"`
	RunAt        time.Time `json:"run_at"`
	Status       string    `json:"status"`
	// FailureReason is the error code of a failed one (insufficient_funds,
	// account_closed).
	FailureReason *string `json:"failure_reason"`
	// TransferID and EndToEndID are the outgoing transfer an executed one
	// made (GET /pix/transfers/{id}).
	TransferID  *uuid.UUID `json:"transfer_id"`
	EndToEndID  *string    `json:"end_to_end_id"`
	CreatedAt   time.Time  `json:"created_at"`
	ConcludedAt *time.Time `json:"concluded_at"`
	// RequestedBy is who asked for it (the token's subject); not shown.
	RequestedBy *string `json:"-"`
}

// row is a pix_scheduled row as its statements return it (*), read by
// column name.
type row struct {
	ID             uuid.UUID  `db:"id"`
	AccountID      string     `db:"account_id"`
	AmountCents    int64      `db:"amount_cents"`
	PixKey         string     `db:"pix_key"`
	Description    *string    `db:"description"`
	ScheduledFor   time.Time  `db:"scheduled_for"`
	RunAt          time.Time  `db:"run_at"`
	Status         string     `db:"status"`
	FailureReason  *string    `db:"failure_reason"`
	TransferID     *uuid.UUID `db:"transfer_id"`
	EndToEndID     *string    `db:"end_to_end_id"`
	IdempotencyKey *uuid.UUID `db:"idempotency_key"`
	RequestedBy    *string    `db:"requested_by"`
	Traceparent    *string    `db:"traceparent"`
	CreatedAt      time.Time  `db:"created_at"`
	UpdatedAt      time.Time  `db:"updated_at"`
	ConcludedAt    *time.Time `db:"concluded_at"`
	DispatchDueAt  *time.Time `db:"dispatch_due_at"`
	DispatchedAt   *time.Time `db:"dispatched_at"`
}

func (r row) scheduled() Scheduled {
	return Scheduled{ID: r.ID, AccountID: r.AccountID, AmountCents: r.AmountCents, PixKey: r.PixKey, Description: r.Description,
		ScheduledFor: r.ScheduledFor.Format(dateLayout), RunAt: r.RunAt, Status: r.Status, FailureReason: r.FailureReason,
		TransferID: r.TransferID, EndToEndID: r.EndToEndID, CreatedAt: r.CreatedAt, ConcludedAt: r.ConcludedAt, RequestedBy: r.RequestedBy}
}

// one reads the one scheduled PIX rs returns: ErrNotFound when none.
func one(rs pgx.Rows, err error) (Scheduled, error) {
	r, err := sagakit.One[row](rs, err, ErrNotFound)
	if err != nil {
		return Scheduled{}, err
	}
	return r.scheduled(), nil
}

// Store is the saga's store, over the service's (db's exported core).
type Store struct {
	store *db.Store
	// maxPending is the most scheduled PIX still to run one account may
	// hold.
	maxPending int
	// now is the clock run_at is decided by, on both sides: the date a
	// request may name (Clock, the API's) and whether the run is due
	// (Run, the worker's, read in its transaction). The database's
	// (db.Now), as the block's and MED's deadlines: the API's and the
	// worker's own clocks may disagree (one whose clock is ahead runs a
	// scheduled PIX early, one behind holds it late).
	now db.Clock
}

// NewStore returns the saga's store over s, an account holding at most
// DefaultMaxPending scheduled PIX still to run.
func NewStore(s *db.Store) *Store {
	return &Store{store: s, maxPending: DefaultMaxPending, now: db.Now}
}

// WithMaxPending is the store with another limit of scheduled PIX still to
// run per account.
func (s *Store) WithMaxPending(n int) *Store {
	return &Store{store: s.store, maxPending: n, now: s.now}
}

// WithClock is the store with another clock for run_at (a test's), in
// place of the database's.
func (s *Store) WithClock(now func() time.Time) *Store {
	return &Store{store: s.store, maxPending: s.maxPending, now: db.ClockOf(now)}
}

// Clock is the clock run_at is decided by (the database's), read through
// the pool: the routes check a request's date by it.
func (s *Store) Clock(ctx context.Context) (time.Time, error) {
	now, err := s.now(ctx, s.store.Pool())
	return now, db.Classify(err)
}

// Queue is the scheduled PIX whose run must be going, for the saga's
// dispatcher.
func (s *Store) Queue() db.DueQueue { return s.store.DueQueue(queue) }

// WakeQueue is the cancels whose run must be woken, for the saga's wake
// dispatcher (WakeSource).
func (s *Store) WakeQueue() db.DueQueue { return s.store.DueQueue(wakeQueue) }

// EndCancelWake ends the wake-up of the cancelled scheduled PIX id: its
// run was woken, or has none open (never started, or closed). An entry
// ended already (a late or second dispatcher's end) is no error.
func (s *Store) EndCancelWake(ctx context.Context, id string) error {
	if _, err := s.store.Pool().Exec(ctx, scheduledSQL.EndCancelWake, id); err != nil {
		return db.Classify(fmt.Errorf("end the cancel's wake-up of scheduled pix %s: %w", id, err))
	}
	return nil
}

// New is a scheduled PIX about to be recorded.
type New struct {
	ID uuid.UUID
	pix.TransferRequest
	ScheduledFor string
	RunAt        time.Time
}

// Create records the scheduled PIX and the Idempotency-Key's answer (201,
// render's body) in one transaction, and wakes its dispatchers on commit.
// Nothing is debited. Refusals, with nothing changed: pix.ErrAccountNotFound
// and pix.ErrAccountClosed, ErrLimitReached; pix.ErrRequestInProgress when
// the reservation was taken over meanwhile.
func (s *Store) Create(ctx context.Context, r db.Reservation, n New, render func(Scheduled) ([]byte, error)) (Scheduled, error) {
	var out Scheduled
	err := db.InTx(ctx, s.store.Pool(), func(tx pgx.Tx) error {
		var status string
		var pending int
		err := tx.QueryRow(ctx, scheduledSQL.AccountStatus, n.AccountID).Scan(&status)
		if err == nil && status == pix.AccountActive {
			err = tx.QueryRow(ctx, scheduledSQL.CountPending, n.AccountID).Scan(&pending)
		}
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			return fmt.Errorf("%w: %s", pix.ErrAccountNotFound, n.AccountID)
		case err != nil:
			return fmt.Errorf("read account: %w", err)
		case status != pix.AccountActive:
			return fmt.Errorf("%w: %s", pix.ErrAccountClosed, n.AccountID)
		case pending >= s.maxPending:
			return fmt.Errorf("%w: %d scheduled PIX of %s still to run", ErrLimitReached, pending, n.AccountID)
		}
		out, err = one(tx.Query(ctx, scheduledSQL.Create, n.ID, n.AccountID, n.AmountCents, n.PixKey, n.Description,
			n.ScheduledFor, n.RunAt, r.Key, r.Caller, tracing.Traceparent(ctx)))
		if err != nil {
			return fmt.Errorf("record scheduled pix: %w", err)
		}
		return db.RecordCreated(ctx, tx, r, out, render)
	})
	if err != nil {
		return Scheduled{}, db.Classify(err)
	}
	s.store.Wake(DueChannel, db.OutboxChannel)
	return out, nil
}

// Get returns one scheduled PIX; ErrNotFound when there is none.
func (s *Store) Get(ctx context.Context, id uuid.UUID) (Scheduled, error) {
	out, err := one(s.store.Pool().Query(ctx, scheduledSQL.Get, id))
	if err != nil && !errors.Is(err, ErrNotFound) {
		return Scheduled{}, db.Classify(fmt.Errorf("get scheduled pix: %w", err))
	}
	return out, err
}

// ListKey is the sort key of an account's list of scheduled PIX (List):
// by date, then id. A page's cursor holds its last row's.
type ListKey struct {
	ScheduledFor string    `json:"scheduled_for"`
	ID           uuid.UUID `json:"id"`
}

// Valid says whether k is a key of the list: a date and an id.
func (k ListKey) Valid() bool {
	_, err := time.Parse(dateLayout, k.ScheduledFor)
	return err == nil && k.ID != uuid.Nil
}

// ListKeyOf is the sort key of s in its account's list.
func ListKeyOf(s Scheduled) ListKey { return ListKey{ScheduledFor: s.ScheduledFor, ID: s.ID} }

// List returns an account's scheduled PIX by date, then id, of status ("":
// any), at most limit, those after the key after in that order (nil: from
// the first): a page of the list, read from an index whatever its depth.
func (s *Store) List(ctx context.Context, accountID, status string, after *ListKey, limit int) ([]Scheduled, error) {
	var date *string
	var id *uuid.UUID
	if after != nil {
		date, id = &after.ScheduledFor, &after.ID
	}
	var rs pgx.Rows
	var err error
	if status == "" {
		rs, err = s.store.Pool().Query(ctx, scheduledSQL.ListByAccount, accountID, date, id, limit)
	} else {
		rs, err = s.store.Pool().Query(ctx, scheduledSQL.ListByAccountStatus, accountID, status, date, id, limit)
	}
	if err != nil {
		return nil, db.Classify(fmt.Errorf("list scheduled pix: %w", err))
	}
	rows, err := pgx.CollectRows(rs, rowscan.ByName[row])
	if err != nil {
		return nil, db.Classify(fmt.Errorf("list scheduled pix: %w", err))
	}
	out := make([]Scheduled, 0, len(rows))
	for _, r := range rows {
		out = append(out, r.scheduled())
	}
	return out, nil
}

// Cancel cancels a scheduled PIX that has not run, with its event; one
// cancelled already is returned as it is (a cancel whose answer was lost,
// asked again). One that ran (executed or failed) is ErrAlreadyRan: the
// run took the row's lock first. It returns whether this call cancelled it.
// The cancel that concludes the row writes, in its transaction, the
// durable wake-up of its run (pix_scheduled_cancel_wakes, WakeSource): the
// caller's own wake (the route's) may be lost.
func (s *Store) Cancel(ctx context.Context, id uuid.UUID) (out Scheduled, cancelled bool, err error) {
	err = db.InTx(ctx, s.store.Pool(), func(tx pgx.Tx) error {
		cur, err := one(tx.Query(ctx, scheduledSQL.Lock, id))
		if err != nil {
			return err
		}
		switch cur.Status {
		case StatusCancelled:
			out, cancelled = cur, false
			return nil
		case StatusScheduled:
			if out, err = conclude(ctx, tx, id, StatusCancelled, nil, nil, nil); err != nil {
				return err
			}
			if _, err = tx.Exec(ctx, scheduledSQL.AddCancelWake, id); err != nil {
				return fmt.Errorf("add the cancel's wake-up of scheduled pix %s: %w", id, err)
			}
			cancelled = true
			return nil
		default:
			return fmt.Errorf("%w: it is %s", ErrAlreadyRan, cur.Status)
		}
	})
	if err != nil {
		return Scheduled{}, false, db.Classify(err)
	}
	if cancelled {
		s.store.Wake(WakeChannel, db.OutboxChannel)
	}
	return out, cancelled, nil
}

// Run runs a scheduled PIX on its date, in one transaction under its row's
// lock: it debits the account and hands the outgoing transfer over to the
// transfer saga (db.RecordTransfer), then marks it executed; or, when the
// account refuses the debit (insufficient funds, closed), marks it failed
// with the refusal's code, nothing debited. A scheduled PIX concluded
// already (cancelled first, or run by an attempt whose answer was lost) is
// returned as it is and nothing changes: concluded says whether this call
// concluded it. bankISPB starts the transfer's end_to_end_id.
func (s *Store) Run(ctx context.Context, id uuid.UUID, bankISPB string) (out Scheduled, concluded bool, err error) {
	err = db.InTx(ctx, s.store.Pool(), func(tx pgx.Tx) error {
		cur, err := one(tx.Query(ctx, scheduledSQL.Lock, id))
		if err != nil {
			return err
		}
		if cur.Status != StatusScheduled {
			out, concluded = cur, false
			return nil
		}
		// By the database's clock, read after the row's lock (db.Now),
		// never the worker's own: a worker whose clock runs ahead would
		// run it early, one behind would hold it late.
		now, err := s.now(ctx, tx)
		if err != nil {
			return err
		}
		if now.Before(cur.RunAt) {
			// Never before run_at by the database's clock, not by a
			// second: run_at is 00:00 São Paulo of the date by default
			// (PIX_SCHEDULED_HOUR), and a minute early is the day
			// before, the PIX debited before its date or failed for
			// good for a balance the date would have covered. A run
			// asked early (Temporal's timer firing before the
			// database's clock reaches run_at, a run started by hand)
			// debits nothing and is an error, retried (the activity's
			// policy: 1 s doubling to 1 min, without end), so it runs
			// within a minute of run_at; one still not run 15 minutes
			// after is PixScheduledOverdue.
			return fmt.Errorf("scheduled pix %s runs at %s, %s from now: not yet", id, cur.RunAt.Format(time.RFC3339Nano), cur.RunAt.Sub(now))
		}
		req := pix.TransferRequest{AccountID: cur.AccountID, AmountCents: cur.AmountCents, PixKey: cur.PixKey}
		if cur.Description != nil {
			req.Description = *cur.Description
		}
		debit, err := db.DebitAccount(ctx, tx, cur.AccountID, cur.AmountCents)
		if pix.IsRefusal(err) {
			// The account refused before anything was written: the row
			// fails with the refusal's code.
			reason := pix.KindOf(err).Code
			out, err = conclude(ctx, tx, id, StatusFailed, &reason, nil, nil)
			concluded = err == nil
			return err
		}
		if err != nil {
			return err
		}
		requestedBy := ""
		if cur.RequestedBy != nil {
			requestedBy = *cur.RequestedBy
		}
		transferID := uuid.New()
		t, err := db.RecordTransfer(ctx, tx, db.NewTransfer{ID: transferID, EndToEndID: pix.NewEndToEndID(bankISPB, debit.At),
			TransferRequest: req}, nil, requestedBy, debit)
		if err != nil {
			return err
		}
		out, err = conclude(ctx, tx, id, StatusExecuted, nil, &transferID, &t.EndToEndID)
		concluded = err == nil
		return err
	})
	if err != nil {
		return Scheduled{}, false, db.Classify(err)
	}
	if concluded {
		s.store.Wake(db.TransferDueChannel, db.OutboxChannel)
	}
	return out, concluded, nil
}

// conclude concludes the locked row, still scheduled, as status.
func conclude(ctx context.Context, tx pgx.Tx, id uuid.UUID, status string, reason *string, transferID *uuid.UUID, endToEndID *string) (Scheduled, error) {
	out, err := one(tx.Query(ctx, scheduledSQL.Conclude, id, status, reason, transferID, endToEndID))
	if err != nil {
		return Scheduled{}, fmt.Errorf("conclude scheduled pix as %s: %w", status, err)
	}
	return out, nil
}

// Pending counts the scheduled PIX still to run, those past their time by
// more than late, and the cancels whose run was not woken (their entry in
// the wake queue) for more than wakeLate.
func (s *Store) Pending(ctx context.Context, late, wakeLate time.Duration) (pending, overdue, wakesLate int64, err error) {
	err = s.store.Pool().QueryRow(ctx, scheduledSQL.Pending, late, wakeLate).Scan(&pending, &overdue, &wakesLate)
	return pending, overdue, wakesLate, db.Classify(err)
}
