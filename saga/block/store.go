package block

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

// The statuses of a block: active while it holds; returning once its
// devolução is recorded, until that devolução ends; then released or
// returned, once.
const (
	StatusActive    = "active"
	StatusReturning = "returning"
	StatusReleased  = "released"
	StatusReturned  = "returned"
)

// Why a block ended (Block.EndCause).
const (
	CauseOperator      = "operator"
	CauseExpired       = "expired"
	CauseReturnNotMade = "return_not_made"
	CauseReturned      = "returned"
)

// HoldKind is the kind of a block's hold (db.NewHold.Kind).
const HoldKind = "cautionary_block"

// Duration is how long a block may hold: 72 hours (Resolução BCB
// 147/2021). Its saga releases it then.
const Duration = 72 * time.Hour

// DueChannel is the notification channel that says blocks are due for
// dispatch (their saga's run to start).
const DueChannel = "pix_block_due"

//go:embed blocks.sql
var queryFiles embed.FS

// blockSQL holds the statements of blocks.sql.
var blockSQL struct{ CreditOf, Create, Get, Lock, OfPIX, Returning, End, Open string }

func init() { db.BindQueries(queryFiles, "blocks.sql", &blockSQL) }

// queue is the blocks whose run must be going: the open ones (active, or
// returning until their devolução ends).
var queue = db.DeclareQueue(db.QueueSpec{
	Name: "block", Table: "pix_blocks", Key: "id", KeyType: "uuid", Channel: DueChannel,
	Open:     "m.dispatch_due_at IS NOT NULL",
	Attempts: "0",
	Drive:    "1",
	Listing: db.Listing{
		EndToEndID: "m.end_to_end_id", AccountID: "m.account_id", AmountCents: "m.amount_cents",
		Status: "m.status", PSP: "NULL::text",
		Memo:  "jsonb_strip_nulls(jsonb_build_object('expires_at', m.expires_at, 'refund_id', m.refund_id))",
		Since: "m.created_at", Traceparent: "m.traceparent",
	},
})

// Block is a cautionary block as the API shows it.
type Block struct {
	ID          uuid.UUID `json:"id"`
	EndToEndID  string    `json:"end_to_end_id"`
	AccountID   string    `json:"account_id"`
	HoldID      uuid.UUID `json:"hold_id"`
	AmountCents int64     `json:"amount_cents"`
	// Reason is the operator's: shown to operators only (the customer's
	// view of a credit leaves it out).
	Reason   string  `json:"reason"`
	Status   string  `json:"status"`
	EndCause *string `json:"end_cause"`
	// ExpiresAt is when its saga releases it, unless it ended before.
	ExpiresAt time.Time `json:"expires_at"`
	// RefundID is the devolução that returns it (GET
	// /pix/credits/{id}/refunds).
	RefundID    *string    `json:"refund_id"`
	RequestedBy string     `json:"requested_by"`
	EndedBy     *string    `json:"ended_by"`
	CreatedAt   time.Time  `json:"created_at"`
	EndedAt     *time.Time `json:"ended_at"`
}

// Open reports whether the block still waits on something: its time (or
// a decision), or its devolução.
func (b Block) Open() bool { return b.Status == StatusActive || b.Status == StatusReturning }

// row is a pix_blocks row as its statements return it (*), read by
// column name.
type row struct {
	ID             uuid.UUID  `db:"id"`
	EndToEndID     string     `db:"end_to_end_id"`
	AccountID      string     `db:"account_id"`
	HoldID         uuid.UUID  `db:"hold_id"`
	AmountCents    int64      `db:"amount_cents"`
	Reason         string     `db:"reason"`
	Status         string     `db:"status"`
	EndCause       *string    `db:"end_cause"`
	ExpiresAt      time.Time  `db:"expires_at"`
	RefundID       *string    `db:"refund_id"`
	RequestedBy    string     `db:"requested_by"`
	IdempotencyKey *uuid.UUID `db:"idempotency_key"`
	EndedBy        *string    `db:"ended_by"`
	Traceparent    *string    `db:"traceparent"`
	CreatedAt      time.Time  `db:"created_at"`
	UpdatedAt      time.Time  `db:"updated_at"`
	EndedAt        *time.Time `db:"ended_at"`
	DispatchDueAt  *time.Time `db:"dispatch_due_at"`
	DispatchedAt   *time.Time `db:"dispatched_at"`
}

func (r row) block() Block {
	return Block{ID: r.ID, EndToEndID: r.EndToEndID, AccountID: r.AccountID, HoldID: r.HoldID, AmountCents: r.AmountCents,
		Reason: r.Reason, Status: r.Status, EndCause: r.EndCause, ExpiresAt: r.ExpiresAt, RefundID: r.RefundID,
		RequestedBy: r.RequestedBy, EndedBy: r.EndedBy, CreatedAt: r.CreatedAt, EndedAt: r.EndedAt}
}

// one reads the one block rs returns: ErrNotFound when none.
func one(rs pgx.Rows, err error) (Block, error) {
	r, err := sagakit.One[row](rs, err, ErrNotFound)
	if err != nil {
		return Block{}, err
	}
	return r.block(), nil
}

// Store is the saga's store, over the service's (db's exported core).
type Store struct {
	store *db.Store
	// now is the clock the 72 hours are checked by (Expire, Return), read
	// in the deciding transaction: the database's (db.Now), the one
	// expires_at was written by (its hold's created_at, now(), plus 72
	// hours), never the worker's, which may run ahead.
	now db.Clock
}

// NewStore returns the saga's store over s.
func NewStore(s *db.Store) *Store { return &Store{store: s, now: db.Now} }

// WithClock is the store with another clock for the 72 hours' checks (a
// test's), in place of the database's.
func (s *Store) WithClock(now func() time.Time) *Store {
	return &Store{store: s.store, now: db.ClockOf(now)}
}

// Queue is the blocks whose run must be going, for the saga's dispatcher.
func (s *Store) Queue() db.DueQueue { return s.store.DueQueue(queue) }

// New is a block asked for.
type New struct {
	ID          uuid.UUID
	EndToEndID  string
	AmountCents int64
	Reason      string
	// RequestedBy is the operator (the caller's subject).
	RequestedBy string
}

// Create holds the block's amount of the PIX (db.Hold: the money is not
// spendable once this commits), records the block and its event (the
// customer's notice) and the Idempotency-Key's answer (201, render's
// body), in one transaction; then wakes its dispatcher and the outbox.
// Refusals, with nothing changed: pix.ErrPixNotCredited (no such PIX),
// ErrExceedsCredit (the PIX's active holds and devoluções leave less),
// ErrNotAvailable (the available balance is less), pix.ErrAccountClosed;
// pix.ErrRequestInProgress when the reservation was taken over meanwhile.
func (s *Store) Create(ctx context.Context, r *db.Reservation, n New, render func(Block) ([]byte, error)) (Block, error) {
	var out Block
	err := db.InTx(ctx, s.store.Pool(), func(tx pgx.Tx) error {
		var account string
		err := tx.QueryRow(ctx, blockSQL.CreditOf, n.EndToEndID).Scan(&account)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			return fmt.Errorf("%w: %s", pix.ErrPixNotCredited, n.EndToEndID)
		case err != nil:
			return fmt.Errorf("read credit: %w", err)
		}
		hold, _, err := db.Hold(ctx, tx, db.NewHold{Ref: "block:" + n.ID.String(), AccountID: account, EndToEndID: n.EndToEndID,
			AmountCents: n.AmountCents, Kind: HoldKind, Reason: holdReason})
		if err != nil {
			return holdRefusal(err)
		}
		var key *uuid.UUID
		if r != nil {
			key = &r.Key
		}
		out, err = one(tx.Query(ctx, blockSQL.Create, n.ID, n.EndToEndID, account, hold.ID, hold.AmountCents, n.Reason,
			hold.CreatedAt.Add(Duration), n.RequestedBy, key, tracing.Traceparent(ctx)))
		if err != nil {
			return fmt.Errorf("record block: %w", err)
		}
		if r == nil {
			return nil
		}
		return db.RecordCreated(ctx, tx, *r, out, render)
	})
	if err != nil {
		return Block{}, db.Classify(err)
	}
	s.store.Wake(DueChannel, db.OutboxChannel)
	return out, nil
}

// holdReason is the reason of a block's hold: not the operator's, which
// is shown to operators only (the block's row), while the hold's goes out
// in pix.hold.created, beside the customer's notice.
const holdReason = "bloqueio cautelar"

// holdRefusal answers a refusal of db.Hold as the block's own: the core's
// hold kinds have no HTTP answer, and the account's is worded for a
// transfer. The core's error is kept as text, not wrapped: its kind would
// match first.
func holdRefusal(err error) error {
	switch {
	case errors.Is(err, pix.ErrHoldExceedsCredit):
		return fmt.Errorf("%w (%v)", ErrExceedsCredit, err)
	case errors.Is(err, pix.ErrInsufficientFunds):
		return fmt.Errorf("%w (%v)", ErrNotAvailable, err)
	}
	return err
}

// Get returns one block; ErrNotFound when there is none.
func (s *Store) Get(ctx context.Context, id uuid.UUID) (Block, error) {
	out, err := one(s.store.Pool().Query(ctx, blockSQL.Get, id))
	if err != nil && !errors.Is(err, ErrNotFound) {
		return Block{}, db.Classify(fmt.Errorf("get block: %w", err))
	}
	return out, err
}

// ListKey is the sort key of a PIX's list of blocks: by creation, then
// id. A page's cursor holds its last row's.
type ListKey struct {
	CreatedAt time.Time `json:"created_at"`
	ID        uuid.UUID `json:"id"`
}

// Valid says whether k is a key of the list.
func (k ListKey) Valid() bool { return !k.CreatedAt.IsZero() && k.ID != uuid.Nil }

// ListKeyOf is the sort key of b in its PIX's list.
func ListKeyOf(b Block) ListKey { return ListKey{CreatedAt: b.CreatedAt, ID: b.ID} }

// OfPIX returns a PIX's blocks, oldest first, at most limit, those after
// the key after (nil: from the first).
func (s *Store) OfPIX(ctx context.Context, endToEndID string, after *ListKey, limit int) ([]Block, error) {
	var at *time.Time
	var id *uuid.UUID
	if after != nil {
		at, id = &after.CreatedAt, &after.ID
	}
	rs, err := s.store.Pool().Query(ctx, blockSQL.OfPIX, endToEndID, at, id, limit)
	if err != nil {
		return nil, db.Classify(fmt.Errorf("list blocks: %w", err))
	}
	rows, err := pgx.CollectRows(rs, rowscan.ByName[row])
	if err != nil {
		return nil, db.Classify(fmt.Errorf("list blocks: %w", err))
	}
	out := make([]Block, 0, len(rows))
	for _, r := range rows {
		out = append(out, r.block())
	}
	return out, nil
}

// Release releases an active block as an operator (by) asked: its hold
// released (db.Release: the money spendable again), the block ended, with
// its event, in one transaction under the block's lock. One released
// already is returned as it is (a release asked again); one returning or
// returned is ErrReturned (a return took the lock first). It returns
// whether this call released it.
func (s *Store) Release(ctx context.Context, id uuid.UUID, by string) (Block, bool, error) {
	return s.end(ctx, id, func(tx pgx.Tx, cur Block) (Block, bool, error) {
		switch cur.Status {
		case StatusReleased:
			return cur, false, nil
		case StatusReturning, StatusReturned:
			return Block{}, false, fmt.Errorf("%w: it is %s", ErrReturned, cur.Status)
		}
		return release(ctx, tx, cur, CauseOperator, &by)
	})
}

// Expire releases an active block whose 72 hours are over, as its saga's
// timer asks: as Release, the block ending expired. A block that ended or
// is returning is returned as it is, nothing changed (a release or a
// return took the lock first: the fence). One asked before its time by the
// database's clock (the run's timer early, or started by hand) changes
// nothing and is an error: the run asks again.
func (s *Store) Expire(ctx context.Context, id uuid.UUID) (Block, bool, error) {
	return s.end(ctx, id, func(tx pgx.Tx, cur Block) (Block, bool, error) {
		if cur.Status != StatusActive {
			return cur, false, nil
		}
		now, err := s.now(ctx, tx)
		if err != nil {
			return Block{}, false, err
		}
		if now.Before(cur.ExpiresAt) {
			// Never before expires_at by the database's clock, not by a
			// second: the held money is released on a deadline passed.
			// Asked early (Temporal's timer firing before the database's
			// clock reaches expires_at, a run started by hand), it
			// releases nothing and is an error, retried (the activity's
			// policy: 1 s doubling to 1 min, without end), so the block
			// is released within a minute of expires_at.
			return Block{}, false, fmt.Errorf("block %s expires at %s, %s from now: not yet", id,
				cur.ExpiresAt.Format(time.RFC3339Nano), cur.ExpiresAt.Sub(now))
		}
		return release(ctx, tx, cur, CauseExpired, nil)
	})
}

// Return hands an active block's amount to the devolução saga: in one
// transaction under the block's lock, the devolução of the PIX recorded
// with its debit, capturing the block's hold (db.RecordRefund: the held
// money leaves the account), and the block returning, with its event.
// One returning or returned already is returned as it is (a return asked
// again: one devolução, never two); one released is ErrReleased (a release
// or the expiry took the lock first), as is one past its expires_at (its
// expiry late), by the database's clock before the locks and after the
// last, before a refusal of the devolução is answered. Refusals of the
// devolução (pix.ErrRefundWindowClosed, pix.ErrAccountClosed) change
// nothing: the block stays active. It returns whether this call recorded
// the return.
func (s *Store) Return(ctx context.Context, id uuid.UUID, by string) (Block, bool, error) {
	out, changed, err := s.end(ctx, id, func(tx pgx.Tx, cur Block) (Block, bool, error) {
		switch cur.Status {
		case StatusReturning, StatusReturned:
			return cur, false, nil
		case StatusReleased:
			return Block{}, false, fmt.Errorf("%w: it is released (%s)", ErrReleased, deref(cur.EndCause))
		}
		if err := s.beforeExpiry(ctx, tx, cur); err != nil {
			return Block{}, false, err
		}
		refund, err := db.RecordRefund(ctx, tx, db.NewRefund{ID: pix.NewRefundID(), Hold: cur.HoldID,
			RefundRequest: pix.RefundRequest{EndToEndID: cur.EndToEndID, AmountCents: cur.AmountCents, Reason: returnReason}}, nil, by)
		if k := pix.KindOf(err); k != nil && k.Refusal {
			// A refusal of the devolução decided after the same lock waits
			// (the PIX's 90-day window ends during them too) answers only
			// for a block still within its 72 hours: one past them is the
			// expiry's, ErrReleased (409), as any late return (attack
			// review r10 LOW-2). A refusal is no SQL error: the
			// transaction reads on.
			if err := s.beforeExpiry(ctx, tx, cur); err != nil {
				return Block{}, false, err
			}
		}
		if err != nil {
			return Block{}, false, fmt.Errorf("return block %s: %w", id, err)
		}
		out, err := one(tx.Query(ctx, blockSQL.Returning, id, refund.ID, by, tracing.Traceparent(ctx)))
		if err != nil {
			return Block{}, false, fmt.Errorf("mark block returning: %w", err)
		}
		// Again after the last lock (RecordRefund waited for the PIX's
		// credit, the account, the hold): 72 hours that ended during those
		// waits refuse the return as they would have before them.
		if err := s.beforeExpiry(ctx, tx, cur); err != nil {
			return Block{}, false, err
		}
		return out, true, nil
	})
	if changed {
		s.store.Wake(db.RefundDueChannel)
	}
	return out, changed, err
}

// beforeExpiry refuses the return of the locked block cur past its 72
// hours (ErrReleased): past them the block is its run's to release (late:
// a worker down), never to return, the money the customer's again. By the
// database's clock read now (s.now), in tx after every lock taken so far,
// so a return checks it after its last lock too.
func (s *Store) beforeExpiry(ctx context.Context, tx pgx.Tx, cur Block) error {
	now, err := s.now(ctx, tx)
	if err != nil {
		return err
	}
	if !now.Before(cur.ExpiresAt) {
		return fmt.Errorf("%w: its 72 hours ended at %s, its release is due", ErrReleased, cur.ExpiresAt.Format(time.RFC3339))
	}
	return nil
}

// returnReason is the reason of a block's devolução (its descricao at the
// PSP).
const returnReason = "bloqueio cautelar: devolução"

// Settle ends a returning block when its devolução has ended: returned
// when the PSP returned the money; released when the devolução was not
// made (its reversal credited the money back, available: the hold, which
// ended captured, is not released again). A devolução still open, or a
// block not returning, changes nothing. It returns whether this call
// ended it.
//
// The devolução is read before the block's transaction, not in it: read
// through the pool inside, it would want a second connection while the
// transaction holds one, and as many Settles at once as the pool has
// connections would wait on each other. Its ended status is final, so
// the block, locked then, is ended only if it still is returning with it.
func (s *Store) Settle(ctx context.Context, id uuid.UUID) (Block, bool, error) {
	cur, err := s.Get(ctx, id)
	if err != nil || cur.Status != StatusReturning {
		return cur, false, err
	}
	refund, err := s.store.GetRefund(ctx, deref(cur.RefundID))
	if err != nil {
		return Block{}, false, db.Classify(fmt.Errorf("read the devolução of block %s: %w", id, err))
	}
	var status, cause string
	switch refund.Status {
	case pix.RefundReturned:
		status, cause = StatusReturned, CauseReturned
	case pix.RefundReversed:
		status, cause = StatusReleased, CauseReturnNotMade
	default:
		return cur, false, nil
	}
	return s.end(ctx, id, func(tx pgx.Tx, cur Block) (Block, bool, error) {
		if cur.Status != StatusReturning || deref(cur.RefundID) != refund.ID {
			return cur, false, nil
		}
		return end(ctx, tx, cur, status, cause, nil)
	})
}

// end runs decide on the block id locked, in one transaction, and wakes
// the outbox after a change.
func (s *Store) end(ctx context.Context, id uuid.UUID, decide func(tx pgx.Tx, cur Block) (Block, bool, error)) (out Block, changed bool, err error) {
	// A hold released fills the account's holds that lack (a MED's): told
	// after the commit (db.Store.InTx), after the outbox's wake.
	err = s.store.InTx(ctx, func(tx pgx.Tx) error {
		cur, err := one(tx.Query(ctx, blockSQL.Lock, id))
		if err != nil {
			return err
		}
		out, changed, err = decide(tx, cur)
		if err == nil && changed {
			db.WakeOnCommit(tx, db.OutboxChannel)
		}
		return err
	})
	if err != nil {
		return Block{}, false, db.Classify(err)
	}
	return out, changed, nil
}

// release releases the locked active block's hold and ends it as cause.
// The hold ends under the block's lock only, so it is active: a hold found
// ended is a fault, not a decision.
func release(ctx context.Context, tx pgx.Tx, cur Block, cause string, by *string) (Block, bool, error) {
	hold, released, err := db.Release(ctx, tx, cur.HoldID, "block "+cause)
	if err != nil {
		return Block{}, false, fmt.Errorf("release the hold of block %s: %w", cur.ID, err)
	}
	if !released {
		return Block{}, false, fmt.Errorf("block %s is active, its hold %s is %s: not released", cur.ID, hold.ID, hold.Status)
	}
	return end(ctx, tx, cur, StatusReleased, cause, by)
}

// end ends the locked block, as it was read (cur), as status for cause.
func end(ctx context.Context, tx pgx.Tx, cur Block, status, cause string, by *string) (Block, bool, error) {
	out, err := one(tx.Query(ctx, blockSQL.End, cur.ID, cur.Status, status, cause, by, tracing.Traceparent(ctx)))
	if err != nil {
		return Block{}, false, fmt.Errorf("end block %s as %s: %w", cur.ID, status, err)
	}
	return out, true, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// OpenCounts are the open blocks by age, what the active ones hold, and
// the active ones past their 72 hours by more than a margin (Store.Open).
type OpenCounts struct {
	ByAge      [4]int64 // under 24 h, 24 to 48, 48 to 72, over 72
	HeldCents  int64
	PastExpiry int64
}

// Open reads the gauges: the open blocks by age, the centavos the active
// ones hold, those active more than late past their 72 hours.
func (s *Store) Open(ctx context.Context, late time.Duration) (OpenCounts, error) {
	var c OpenCounts
	err := s.store.Pool().QueryRow(ctx, blockSQL.Open, late).Scan(&c.ByAge[0], &c.ByAge[1], &c.ByAge[2], &c.ByAge[3], &c.HeldCents, &c.PastExpiry)
	return c, db.Classify(err)
}
