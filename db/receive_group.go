package db

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/pixbank/pix/internal/groupcommit"
	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/internal/tracing"
)

// receiveCall is one request's deliveries: a native webhook's one
// notification, or an API Pix request's (batch: all or none, its refusal
// an *pix.ItemError). A group's write fills in receipts or err, or sets
// alone: the call is to be written by itself, by its caller.
type receiveCall struct {
	notifications []pix.Notification
	batch         bool
	traceparent   *string
	// span is the request's span (a no-op one when tracing is off): a
	// group's statements are traced under its first call's.
	span trace.Span

	receipts []pix.Receipt
	err      error
	alone    bool
}

// itemErr is the error a delivery of c answers: an API Pix request's names
// the item by its place in the request.
func (c *receiveCall) itemErr(i int, err error) error {
	if c.batch {
		return &pix.ItemError{Index: i, Err: err}
	}
	return err
}

// errCulprits stops a group's transaction because some calls' deliveries
// failed it: receiveTogether names them.
var errCulprits = errors.New("calls failed the group's transaction")

// groupLockTimeout bounds how long a group commit's writer waits for a row
// another transaction holds (a credit, a re-drive, another group): past
// it, the call waiting is taken out and written alone, by its own request,
// so that one locked PIX never holds a group, or its writer, up. It is the
// writers' connections' lock_timeout (Receiver.writerConn).
const groupLockTimeout = 500 * time.Millisecond

// receiveTogether stores the deliveries of calls in one transaction, one
// round trip of Receive statements in the byte order of their
// end_to_end_ids (as ReceiveBatch: the lock order; copies in arrival
// order, the first of them the new one), and one commit. It answers each
// call (receipts or err) only once the transaction committed.
//
// The group is written as if its calls had come one after the other in
// that order. A call whose one delivery is refused without writing
// anything (a payload mismatch: its one statement changed nothing) is
// answered its refusal, and the others commit. The calls whose deliveries
// fail the transaction (API Pix requests refused for an item while their
// other items were written: all of them, found in one pass; or the first
// statement that failed: an error of its own, or, on a writer's
// connection, a lock waited for beyond groupLockTimeout) are the culprits:
// nothing is committed, and the caller writes the group again without
// them. err is a failure of the whole transaction (begin, commit, the
// connection, contention beyond InTx's retries): no call's answer is known
// but that nothing of the group committed.
func (s *Store) receiveTogether(ctx context.Context, db Beginner, calls []*receiveCall) (culprits []*receiveCall, err error) {
	type delivery struct {
		call  *receiveCall
		index int
	}
	var deliveries []delivery
	for _, c := range calls {
		for i := range c.notifications {
			deliveries = append(deliveries, delivery{c, i})
		}
	}
	slices.SortStableFunc(deliveries, func(a, b delivery) int {
		return strings.Compare(a.call.notifications[a.index].EndToEndID, b.call.notifications[b.index].EndToEndID)
	})
	receipts := make(map[*receiveCall][]pix.Receipt, len(calls))
	refused := make(map[*receiveCall]error)
	failed := make(map[*receiveCall]error) // the culprits, with their errors
	err = InTx(ctx, db, func(tx pgx.Tx) error {
		// Run again by InTx after contention: nothing from an earlier try.
		clear(refused)
		clear(failed)
		for _, c := range calls {
			receipts[c] = make([]pix.Receipt, len(c.notifications))
		}
		batch := &pgx.Batch{}
		for _, d := range deliveries {
			batch.Queue(creditSQL.Receive, receiveArgs(d.call.notifications[d.index], d.call.traceparent)...)
		}
		results := tx.SendBatch(ctx, batch)
		// A delivery that stored nothing is looked up in pix_credits once
		// the batch's results are read (one conversation at a time on the
		// transaction's connection).
		var unstored []delivery
		for _, d := range deliveries {
			n := d.call.notifications[d.index]
			r, stored, err := scanReceipt(results.QueryRow(), n)
			if err != nil {
				// The first failure in execution order is the cause; the
				// statements after it only found the transaction aborted.
				results.Close() //nolint:errcheck // the delivery's error is the one to report
				if isContention(err) || errors.Is(err, pix.ErrUnavailable) {
					return err // the group's (contention: InTx tries it again), not the call's
				}
				failed[d.call] = d.call.itemErr(d.index, err)
				return errCulprits
			}
			if !stored {
				unstored = append(unstored, d)
				continue
			}
			receipts[d.call][d.index] = r
		}
		if err := results.Close(); err != nil {
			return err
		}
		for _, d := range unstored {
			if failed[d.call] != nil {
				continue // refused for an earlier item already
			}
			r, err := creditedBefore(ctx, tx, d.call.notifications[d.index])
			switch {
			case err == nil:
				receipts[d.call][d.index] = r
			case len(d.call.notifications) == 1 && pix.IsRefusal(err):
				// Its one statement changed nothing: answered, and the
				// others commit.
				refused[d.call] = d.call.itemErr(d.index, err)
			case pix.IsRefusal(err):
				failed[d.call] = d.call.itemErr(d.index, err) // its other items must not commit
			default:
				return err // a statement of the look-up failed: the transaction is the group's
			}
		}
		if len(failed) > 0 {
			return errCulprits
		}
		return nil
	})
	if errors.Is(err, errCulprits) {
		for _, c := range calls {
			if cause, ok := failed[c]; ok {
				c.err = cause
				culprits = append(culprits, c)
			}
		}
		return culprits, nil
	}
	if err != nil {
		return nil, err
	}
	for _, c := range calls {
		if c.err = refused[c]; c.err == nil {
			c.receipts = receipts[c]
		}
	}
	return nil, nil
}

// groupPasses bounds how often a group is written again without its
// culprits: a group that still fails after that is written call by call,
// by the callers, so that no input can make a group cost more than a few
// passes.
const groupPasses = 3

// receiveGroup writes a group of calls that a group commit gathered, on a
// writer's connection (whose lock_timeout is groupLockTimeout): a native
// webhook alone in its group as without group commit (one statement, its
// own commit); any other group in one transaction (receiveTogether). Calls
// that fail the transaction are taken out and the rest written again, at
// most groupPasses times; each call taken out (and, after the last pass,
// every call left), and a lone webhook that waited for a lock too long, is
// marked alone: its caller writes it by itself, as without group commit,
// so that its answer is its own and never depends on the calls it was
// grouped with, and the writer is free meanwhile. One wake for the group.
func (s *Store) receiveGroup(ctx context.Context, conn *pgxpool.Conn, calls []*receiveCall) {
	ctx = traceGroup(ctx, calls)
	if len(calls) == 1 && !calls[0].batch {
		c := calls[0]
		r, err := s.receive(ctx, conn, c.notifications[0], c.traceparent)
		if isLockTimeout(err) {
			c.alone = true
		} else {
			c.receipts, c.err = []pix.Receipt{r}, err
		}
	} else {
		group := slices.Clone(calls)
		for pass := 1; len(group) > 0; pass++ {
			if pass > groupPasses {
				for _, c := range group {
					c.alone = true
				}
				break
			}
			culprits, err := s.receiveTogether(ctx, conn, group)
			if culprits == nil {
				if err != nil {
					for _, c := range group {
						c.receipts, c.err = nil, err
					}
				}
				break
			}
			for _, c := range culprits {
				c.receipts, c.err, c.alone = nil, nil, true
			}
			group = slices.DeleteFunc(group, func(c *receiveCall) bool { return c.alone })
		}
	}
	if slices.ContainsFunc(calls, (*receiveCall).madeDue) {
		s.Wake(DueChannel)
	}
}

// isLockTimeout reports whether err is a statement that waited for a lock
// beyond its lock_timeout (55P03): nothing it did stands.
func isLockTimeout(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "55P03"
}

// madeDue reports whether c's answer made a row due for dispatch.
func (c *receiveCall) madeDue() bool {
	return !c.alone && c.err == nil && slices.ContainsFunc(c.receipts, pix.Receipt.MadeDue)
}

// traceGroup puts the first call's span in ctx, so that the group's
// statements are traced in the first request's trace, and links the
// others' spans to it: each request's trace says which transaction
// stored it. Nothing when tracing is off.
func traceGroup(ctx context.Context, calls []*receiveCall) context.Context {
	first := calls[0].span
	if first == nil || !first.IsRecording() {
		return ctx
	}
	if len(calls) == 1 {
		return trace.ContextWithSpan(ctx, first)
	}
	first.SetAttributes(attribute.Int("pix.group_commit.requests", len(calls)))
	for _, c := range calls[1:] {
		if c.span != nil && c.span.IsRecording() {
			c.span.AddLink(trace.Link{SpanContext: first.SpanContext(),
				Attributes: []attribute.KeyValue{attribute.String("pix.group_commit", "stored in the transaction of this request's group")}})
		}
	}
	return trace.ContextWithSpan(ctx, first)
}

// Receiver stores the PSPs' deliveries by group commit: the concurrent
// webhooks' inserts share a transaction and its commit (receiveGroup), and
// each request is answered as Store.Receive and Store.ReceiveBatch answer
// it alone, only after the commit that holds it. Run must run while it
// serves.
type Receiver struct {
	store *Store
	group *groupcommit.Committer[*receiveCall]
	// conns are the writers' connections, each a writer's own (from the
	// pool, held while it runs, with lock_timeout groupLockTimeout);
	// nil until its first write, and after one that broke it.
	conns []*pgxpool.Conn
}

// NewReceiver returns a Receiver writing into s.
func NewReceiver(s *Store, opts groupcommit.Options) (*Receiver, error) {
	r := &Receiver{store: s, conns: make([]*pgxpool.Conn, max(opts.Writers, 0))}
	group, err := groupcommit.New(opts, r.write)
	if err != nil {
		return nil, err
	}
	r.group = group
	return r, nil
}

// Run writes the groups until ctx ends (after the API's last request),
// then gives the writers' connections back to the pool.
func (r *Receiver) Run(ctx context.Context) error {
	err := r.group.Run(ctx)
	for w := range r.conns {
		r.dropConn(w)
	}
	return err
}

// write is the committer's write: the group, on writer w's connection.
func (r *Receiver) write(ctx context.Context, w int, calls []*receiveCall) {
	conn, err := r.writerConn(ctx, w)
	if err != nil {
		for _, c := range calls {
			c.err = err
		}
		return
	}
	r.store.receiveGroup(ctx, conn, calls)
	if conn.Conn().IsClosed() {
		r.dropConn(w)
	}
}

// writerConn is writer w's connection, acquired on its first use.
func (r *Receiver) writerConn(ctx context.Context, w int) (*pgxpool.Conn, error) {
	if r.conns[w] != nil {
		return r.conns[w], nil
	}
	conn, err := r.store.pool.Acquire(ctx)
	if err != nil {
		return nil, Classify(fmt.Errorf("acquire a group commit writer's connection: %w", err))
	}
	if _, err := conn.Exec(ctx, creditSQL.SetLockTimeout, fmt.Sprintf("%dms", groupLockTimeout.Milliseconds())); err != nil {
		conn.Release()
		return nil, Classify(fmt.Errorf("set a group commit writer's lock_timeout: %w", err))
	}
	r.conns[w] = conn
	return conn, nil
}

// dropConn gives writer w's connection back to the pool, its lock_timeout
// reset, or closes it when it can't be reset (the pool then drops it).
func (r *Receiver) dropConn(w int) {
	conn := r.conns[w]
	if conn == nil {
		return
	}
	r.conns[w] = nil
	if !conn.Conn().IsClosed() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if _, err := conn.Exec(ctx, creditSQL.ResetLockTimeout); err != nil {
			_ = conn.Conn().Close(ctx) //nolint:errcheck // closing it is the point: the setting must not reach another user
		}
		cancel()
	}
	conn.Release()
}

// Receive is Store.Receive, by group commit.
func (r *Receiver) Receive(ctx context.Context, n pix.Notification) (pix.Receipt, error) {
	c := r.call(ctx, []pix.Notification{n}, false)
	if err := r.do(ctx, c); err != nil {
		return pix.Receipt{}, err
	}
	return c.receipts[0], nil
}

// ReceiveBatch is Store.ReceiveBatch, by group commit: the request's
// deliveries are all committed or none, in a transaction they may share
// with other requests'.
func (r *Receiver) ReceiveBatch(ctx context.Context, ns []pix.Notification) ([]pix.Receipt, error) {
	c := r.call(ctx, ns, true)
	if err := r.do(ctx, c); err != nil {
		return nil, err
	}
	return c.receipts, nil
}

func (r *Receiver) call(ctx context.Context, ns []pix.Notification, batch bool) *receiveCall {
	return &receiveCall{notifications: ns, batch: batch, traceparent: tracing.Traceparent(ctx), span: trace.SpanFromContext(ctx)}
}

// do queues c and waits for its group. A call not written (the queue full,
// the request's deadline passed while it waited, the service stopping) is
// 503: nothing of it was stored. A call its group could not hold is
// written here, alone, within the request's own deadline.
func (r *Receiver) do(ctx context.Context, c *receiveCall) error {
	if err := r.group.Do(ctx, c, max(1, len(c.notifications))); err != nil {
		return fmt.Errorf("%w: %w", pix.ErrUnavailable, err)
	}
	if !c.alone {
		return c.err
	}
	if c.batch {
		c.receipts, c.err = r.store.ReceiveBatch(ctx, c.notifications)
		return c.err
	}
	receipt, err := r.store.Receive(ctx, c.notifications[0])
	c.receipts, c.err = []pix.Receipt{receipt}, err
	return err
}
