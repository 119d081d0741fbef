package db_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/db/dbtest"
	"github.com/pixbank/pix/internal/groupcommit"
	"github.com/pixbank/pix/internal/pix"
)

// inboxRow is what a test reads of an inbox row.
type inboxRow struct {
	amount     int64
	account    string
	deliveries int
	status     string
}

func inboxRows(t *testing.T, s *db.Store) map[string]inboxRow {
	t.Helper()
	rows, err := s.Pool().Query(context.Background(), `SELECT end_to_end_id, amount_cents, COALESCE(account_id, ''), deliveries, status FROM inbox_messages`)
	require.NoError(t, err)
	defer rows.Close()
	out := map[string]inboxRow{}
	for rows.Next() {
		var id string
		var r inboxRow
		require.NoError(t, rows.Scan(&id, &r.amount, &r.account, &r.deliveries, &r.status))
		out[id] = r
	}
	require.NoError(t, rows.Err())
	return out
}

// One group, every kind of call: a new PIX and its copy, a mismatch of it,
// an API Pix request whose second item fails its statement (the inbox's
// check: an amount no webhook validation would let through), and another
// new PIX. Each call is answered as it would be alone, in the group's order;
// the failing request's other item is not stored, and the others commit.
func TestAGroupAnswersEachCallAsAlone(t *testing.T) {
	ctx := context.Background()
	s := dbtest.New(t)
	x, y, z, w := dbtest.E2EID(1), dbtest.E2EID(2), dbtest.E2EID(3), dbtest.E2EID(4)
	invalid := dbtest.Notice(z, "", -5)
	invalid.Source = pix.SourceAPIPix
	invalid.PixKey = "k@example.com"
	calls := []*db.ReceiveCallForTest{
		{Notifications: []pix.Notification{dbtest.Notice(x, "acc-1", 1_000)}},                              // new
		{Notifications: []pix.Notification{dbtest.Notice(x, "acc-1", 1_000)}},                              // its copy
		{Notifications: []pix.Notification{dbtest.Notice(x, "acc-1", 2_000)}},                              // a mismatch
		{Notifications: []pix.Notification{apiPixNote(y, "k@example.com", "", 700), invalid}, Batch: true}, // fails at its second item
		{Notifications: []pix.Notification{dbtest.Notice(w, "acc-2", 300)}},                                // new
	}
	db.ReceiveGroupForTest(ctx, s, calls)

	require.NoError(t, calls[0].Err)
	require.Equal(t, []pix.Receipt{{EndToEndID: x, Status: pix.StatusPending}}, calls[0].Receipts)
	require.NoError(t, calls[1].Err)
	require.True(t, calls[1].Receipts[0].Duplicate)
	require.ErrorIs(t, calls[2].Err, pix.ErrPayloadMismatch)
	var item *pix.ItemError
	require.ErrorAs(t, calls[3].Err, &item)
	require.Equal(t, 1, item.Index, "the failing item, by its place in its request")
	require.False(t, pix.IsRefusal(calls[3].Err), "a statement's error, not a refusal")
	require.Nil(t, calls[3].Receipts)
	require.NoError(t, calls[4].Err)
	require.Equal(t, []pix.Receipt{{EndToEndID: w, Status: pix.StatusPending}}, calls[4].Receipts)

	rows := inboxRows(t, s)
	require.Equal(t, map[string]inboxRow{
		x: {amount: 1_000, account: "acc-1", deliveries: 2, status: pix.StatusPending},
		w: {amount: 300, account: "acc-2", deliveries: 1, status: pix.StatusPending},
	}, rows, "the failing request stored nothing; the mismatch changed nothing")
	require.Equal(t, []string{db.DueChannel}, db.PendingWakes(s), "one wake for the group")
}

// An API Pix request refused for one item (a payload mismatch) in a group:
// its other items, written in the group's transaction, are not committed;
// it is answered alone, as without group commit; the others commit.
func TestAGroupTakesOutARefusedBatch(t *testing.T) {
	ctx := context.Background()
	s := dbtest.New(t)
	x, y, w := dbtest.E2EID(1), dbtest.E2EID(2), dbtest.E2EID(3)
	_, err := s.Receive(ctx, apiPixNote(x, "k@example.com", "", 500))
	require.NoError(t, err)
	calls := []*db.ReceiveCallForTest{
		{Notifications: []pix.Notification{apiPixNote(y, "k@example.com", "", 100), apiPixNote(x, "k@example.com", "", 999)}, Batch: true},
		{Notifications: []pix.Notification{dbtest.Notice(w, "acc-2", 300)}},
		{Notifications: []pix.Notification{apiPixNote(y, "k@example.com", "", 100)}, Batch: true}, // y again, from another request
	}
	db.ReceiveGroupForTest(ctx, s, calls)

	var item *pix.ItemError
	require.ErrorAs(t, calls[0].Err, &item)
	require.Equal(t, 1, item.Index)
	require.ErrorIs(t, calls[0].Err, pix.ErrPayloadMismatch)
	require.NoError(t, calls[1].Err)
	require.NoError(t, calls[2].Err)
	require.False(t, calls[2].Receipts[0].Duplicate, "y is the third request's: the refused request's y was never committed")
	rows := inboxRows(t, s)
	require.Len(t, rows, 3)
	require.Equal(t, 1, rows[y].deliveries)
	require.Equal(t, 1, rows[x].deliveries, "the refused item changed nothing")
}

// The group commit under load: many concurrent requests of every kind
// (new, copies, mismatches, API Pix batches sharing ids, requests that
// fail), through a Receiver with several writers. Every answer is checked
// against the rows, and the rows against the answers: a request answered
// stored has its rows; a refused or failed one has nothing of its own; the
// deliveries of a row are the acknowledged requests that carried it; each
// row's first acknowledgement alone says duplicate=false.
func TestReceiverUnderConcurrency(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	s := dbtest.New(t)
	var mu sync.Mutex
	largest := 0 // calls in the largest group
	r, err := db.NewReceiver(s, groupcommit.Options{Writers: 3, MaxRows: 16, Window: time.Millisecond, QueueRows: 4096, WriteTimeout: 10 * time.Second,
		Observe: func(calls, _ int) { mu.Lock(); largest = max(largest, calls); mu.Unlock() }})
	require.NoError(t, err)
	ran := make(chan error, 1)
	go func() { ran <- r.Run(ctx) }()
	defer func() {
		cancel()
		require.NoError(t, <-ran)
	}()

	const ids, requests = 40, 600
	amount := func(id int) int64 { return int64(100 + id) }
	// The even ids (native and API Pix) were received before: a mismatch is
	// sent only for them, so that it is one whatever the order.
	before := map[string]bool{}
	for id := 0; id < 2*ids; id += 2 {
		n := dbtest.Notice(dbtest.E2EID(id), "acc-1", amount(id))
		if id >= ids {
			n = apiPixNote(dbtest.E2EID(id), "k@example.com", "", amount(id))
		}
		_, err := s.Receive(ctx, n)
		require.NoError(t, err)
		before[n.EndToEndID] = true
	}
	rng := rand.New(rand.NewPCG(1, 2))
	type request struct {
		ns       []pix.Notification
		batch    bool
		receipts []pix.Receipt
		err      error
	}
	reqs := make([]*request, requests)
	for i := range reqs {
		id := rng.IntN(ids)
		switch k := rng.IntN(10); {
		case k < 5: // a native delivery (a copy once its id was taken)
			reqs[i] = &request{ns: []pix.Notification{dbtest.Notice(dbtest.E2EID(id), "acc-1", amount(id))}}
		case k < 6: // a mismatch of a PIX received before
			id -= id % 2
			reqs[i] = &request{ns: []pix.Notification{dbtest.Notice(dbtest.E2EID(id), "acc-1", amount(id)+1)}}
		case k < 7: // a delivery that fails its statement
			reqs[i] = &request{ns: []pix.Notification{dbtest.Notice(dbtest.E2EID(id), "acc-1", -1)}}
		default: // an API Pix request of 1 to 4 ids (other ids: apiPix ones)
			var ns []pix.Notification
			for range 1 + rng.IntN(4) {
				j := ids + rng.IntN(ids)
				a := amount(j)
				if rng.IntN(8) == 0 {
					j -= j % 2
					a = amount(j) + 1 // a mismatch: the whole request refused
				}
				ns = append(ns, apiPixNote(dbtest.E2EID(j), "k@example.com", "", a))
			}
			reqs[i] = &request{ns: ns, batch: true}
		}
	}
	var wg sync.WaitGroup
	for _, q := range reqs {
		wg.Go(func() {
			if q.batch {
				q.receipts, q.err = r.ReceiveBatch(ctx, q.ns)
				return
			}
			var rec pix.Receipt
			rec, q.err = r.Receive(ctx, q.ns[0])
			if q.err == nil {
				q.receipts = []pix.Receipt{rec}
			}
		})
	}
	wg.Wait()

	mu.Lock()
	t.Logf("the largest group held %d calls", largest)
	require.Greater(t, largest, 1, "600 requests at once, 3 writers: calls were grouped")
	mu.Unlock()

	acknowledged := map[string]int{} // deliveries acknowledged per id
	firsts := map[string]int{}       // acknowledgements with duplicate=false
	for _, q := range reqs {
		for _, n := range q.ns {
			bad := n.AmountCents != amount(idOf(t, n.EndToEndID))
			if q.err == nil {
				require.False(t, bad, "a request carrying a mismatch or an invalid amount was acknowledged: %+v", q.ns)
			}
		}
		if q.err != nil {
			require.Nil(t, q.receipts)
			// A refusal or a statement's error; never unavailable.
			require.False(t, errors.Is(q.err, pix.ErrUnavailable), "%v", q.err)
			continue
		}
		for i, n := range q.ns {
			acknowledged[n.EndToEndID]++
			if !q.receipts[i].Duplicate {
				firsts[n.EndToEndID]++
			}
		}
	}
	rows := inboxRows(t, s)
	for id := range before {
		acknowledged[id]++ // the delivery before
		firsts[id]++
	}
	require.Len(t, rows, len(acknowledged), "a row for every acknowledged id, none other")
	for id, n := range acknowledged {
		row, ok := rows[id]
		require.True(t, ok, id)
		require.Equal(t, n, row.deliveries, "%s: its deliveries are its acknowledged requests", id)
		require.Equal(t, amount(idOf(t, id)), row.amount)
		require.Equal(t, 1, firsts[id], "%s: one first delivery", id)
	}
}

// idOf is e2eID's inverse.
func idOf(t *testing.T, e2e string) int {
	t.Helper()
	var n int
	_, err := fmt.Sscanf(e2e[len(e2e)-11:], "%d", &n)
	require.NoError(t, err)
	return n
}

// A full queue sheds at once: 503 (pix.ErrUnavailable), nothing stored,
// while the calls queued before it are written once the writer is free.
// The writer is held here waiting for a connection: the test holds the
// pool's.
func TestReceiverShedsWhenItsQueueIsFull(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	s := dbtest.New(t)
	r, err := db.NewReceiver(s, groupcommit.Options{Writers: 1, MaxRows: 1, QueueRows: 2, WriteTimeout: 30 * time.Second})
	require.NoError(t, err)

	var held []*pgxpool.Conn
	release := sync.OnceFunc(func() {
		for _, c := range held {
			c.Release()
		}
	})
	// Released before the pool closes (cleanups run last first) when an
	// assertion fails: a pool closing over held connections waits for them
	// for ever, and hides the failure behind the test binary's timeout.
	t.Cleanup(release)
	for range s.Pool().Config().MaxConns {
		c, err := s.Pool().Acquire(ctx)
		require.NoError(t, err)
		held = append(held, c)
	}
	answers := make(chan error, 3)
	// The first delivery is queued before the writer runs, and taken when
	// it does: the writer then waits for a connection. (The pool's count of
	// acquires that waited can't tell: it counts those that succeeded, this
	// test's own among them. Waiting on it let the fourth delivery in
	// before the writer took the first, on a slow machine.)
	go func() { _, err := r.Receive(ctx, dbtest.Notice(dbtest.E2EID(1), "acc-1", 100)); answers <- err }()
	require.Eventually(t, func() bool { return db.ReceiverQueued(r) == 1 }, 10*time.Second, time.Millisecond, "the first delivery is queued")
	ran := make(chan error, 1)
	go func() { ran <- r.Run(ctx) }()
	defer func() {
		release() // else a failure waits out the writer's WriteTimeout here
		cancel()
		require.NoError(t, <-ran)
	}()
	require.Eventually(t, func() bool { return db.ReceiverQueued(r) == 0 }, 10*time.Second, time.Millisecond, "the writer took it")
	for i := 2; i <= 3; i++ { // the queue's two rows
		go func() { _, err := r.Receive(ctx, dbtest.Notice(dbtest.E2EID(i), "acc-1", 100)); answers <- err }()
	}
	require.Eventually(t, func() bool { return db.ReceiverQueued(r) == 2 }, 10*time.Second, time.Millisecond)
	_, err = r.Receive(ctx, dbtest.Notice(dbtest.E2EID(4), "acc-1", 100))
	require.ErrorIs(t, err, pix.ErrUnavailable, "the fourth delivery is shed: 503")
	require.ErrorIs(t, err, groupcommit.ErrQueueFull, "%v (queued now: %d)", err, db.ReceiverQueued(r))

	release()
	for range 3 {
		require.NoError(t, <-answers)
	}
	require.Len(t, inboxRows(t, s), 3, "the shed delivery stored nothing")
}
