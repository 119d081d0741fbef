package db

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/pixbank/pix/internal/groupcommit"
	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/internal/tracing"
)

// receiveCall is one request's deliveries: a native webhook's one
// notification, or an API Pix request's (batch: all or none, its refusal
// an *pix.ItemError). A write fills in receipts, or err.
type receiveCall struct {
	notifications []pix.Notification
	batch         bool
	traceparent   *string

	receipts []pix.Receipt
	err      error
	// groupErr is why this call failed a group's transaction (set by
	// receiveTogether when it names the call the culprit).
	groupErr error
}

// itemErr is the error a delivery of c answers: an API Pix request's names
// the item by its place in the request.
func (c *receiveCall) itemErr(i int, err error) error {
	if c.batch {
		return &pix.ItemError{Index: i, Err: err}
	}
	return err
}

// errCulprit stops a group's transaction because one call's delivery
// failed it: receiveTogether names that call.
var errCulprit = errors.New("a call failed the group's transaction")

// receiveTogether stores the deliveries of calls in one transaction, one
// round trip of Receive statements in the byte order of their
// end_to_end_ids (as ReceiveBatch: the lock order; copies in arrival
// order, the first of them the new one), and one commit. It answers each
// call (receipts or err) only once the transaction committed.
//
// The group is written as if its calls had come one after the other in
// that order. A call whose delivery is refused without writing anything
// (a native webhook's payload mismatch: its one statement changed
// nothing) is answered its refusal, and the others commit. A call whose
// delivery fails the transaction (a statement's error, or an API Pix
// request's refusal when its other items were written) is the culprit:
// nothing is committed, it is returned with its own error in groupErr, and
// the caller writes the group again without it. err is a failure of the
// whole transaction (begin, commit, contention beyond inTx's retries): no
// call's answer is known but that nothing of the group committed.
func (s *Store) receiveTogether(ctx context.Context, calls []*receiveCall) (culprit *receiveCall, err error) {
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
	err = inTx(ctx, s.pool, func(tx pgx.Tx) error {
		// Run again by inTx after contention: nothing from an earlier try.
		culprit = nil
		clear(refused)
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
				if isContention(err) {
					return err // the group's, not the call's: inTx tries the group again
				}
				culprit, d.call.groupErr = d.call, d.call.itemErr(d.index, err)
				return errCulprit
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
			r, err := creditedBefore(ctx, tx, d.call.notifications[d.index])
			switch {
			case err == nil:
				receipts[d.call][d.index] = r
			case len(d.call.notifications) == 1 && pix.IsRefusal(err):
				refused[d.call] = err // its one statement changed nothing
			case isContention(err):
				return err
			default:
				culprit, d.call.groupErr = d.call, d.call.itemErr(d.index, err)
				return errCulprit
			}
		}
		return nil
	})
	if errors.Is(err, errCulprit) {
		return culprit, nil
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

// receiveGroup writes a group of calls that a group commit gathered: all
// of them in one transaction (receiveTogether); a call that fails the
// transaction is taken out and the rest written again (at most once per
// call), and each call taken out is then written alone, as it would have
// been without group commit, so that its answer is its own and never
// depends on the calls it was grouped with. One wake for the whole group.
func (s *Store) receiveGroup(ctx context.Context, calls []*receiveCall) {
	group := slices.Clone(calls)
	var alone []*receiveCall
	for len(group) > 0 {
		culprit, err := s.receiveTogether(ctx, group)
		if culprit == nil {
			for _, c := range group {
				if err != nil {
					c.receipts, c.err = nil, err
				}
			}
			break
		}
		alone = append(alone, culprit)
		group = slices.DeleteFunc(group, func(c *receiveCall) bool { return c == culprit })
	}
	for _, c := range alone {
		if c.batch {
			c.receipts, c.err = s.receiveBatch(ctx, c.notifications, c.traceparent)
			continue
		}
		r, err := s.receive(ctx, c.notifications[0], c.traceparent)
		c.receipts, c.err = []pix.Receipt{r}, err
	}
	if slices.ContainsFunc(calls, func(c *receiveCall) bool {
		return c.err == nil && slices.ContainsFunc(c.receipts, pix.Receipt.MadeDue)
	}) {
		s.wake(DueChannel)
	}
}

// Receiver stores the PSPs' deliveries by group commit: the concurrent
// webhooks' inserts share a transaction and its commit (receiveGroup), and
// each request is answered as Store.Receive and Store.ReceiveBatch answer
// it alone, only after the commit that holds it. Run must run while it
// serves.
type Receiver struct {
	store *Store
	group *groupcommit.Committer[*receiveCall]
}

// NewReceiver returns a Receiver writing into s.
func NewReceiver(s *Store, opts groupcommit.Options) (*Receiver, error) {
	r := &Receiver{store: s}
	group, err := groupcommit.New(opts, s.receiveGroup)
	if err != nil {
		return nil, err
	}
	r.group = group
	return r, nil
}

// Run writes the groups until ctx ends (after the API's last request).
func (r *Receiver) Run(ctx context.Context) error { return r.group.Run(ctx) }

// Receive is Store.Receive, by group commit.
func (r *Receiver) Receive(ctx context.Context, n pix.Notification) (pix.Receipt, error) {
	c := &receiveCall{notifications: []pix.Notification{n}, traceparent: tracing.Traceparent(ctx)}
	if err := r.do(ctx, c); err != nil {
		return pix.Receipt{}, err
	}
	return c.receipts[0], nil
}

// ReceiveBatch is Store.ReceiveBatch, by group commit: the request's
// deliveries are all committed or none, in a transaction they may share
// with other requests'.
func (r *Receiver) ReceiveBatch(ctx context.Context, ns []pix.Notification) ([]pix.Receipt, error) {
	c := &receiveCall{notifications: ns, batch: true, traceparent: tracing.Traceparent(ctx)}
	if err := r.do(ctx, c); err != nil {
		return nil, err
	}
	return c.receipts, nil
}

// do queues c and waits for its group. A call not written (the queue full,
// the request's deadline passed while it waited, the service stopping) is
// 503: nothing of it was stored.
func (r *Receiver) do(ctx context.Context, c *receiveCall) error {
	if err := r.group.Do(ctx, c, max(1, len(c.notifications))); err != nil {
		return fmt.Errorf("%w: %w", pix.ErrUnavailable, err)
	}
	return c.err
}
