package db_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/db/dbtest"
	"github.com/pixbank/pix/internal/groupcommit"
	"github.com/pixbank/pix/internal/pix"
)

// Found by the attack review of the group commit: an API Pix request of
// ONE item refused for a payload mismatch is a *pix.ItemError (index 0: the
// handler logs "api pix webhook refused" and answers "pix[0]: ... nothing
// in the batch was stored"); the first version of receiveTogether answered
// it as a native webhook's, a bare ErrPayloadMismatch. Both on
// Store.ReceiveBatch (no group at all) and through a group.
func TestSingleItemAPIPixMismatchKeepsItsItemError(t *testing.T) {
	ctx := context.Background()
	s := dbtest.New(t)
	x := dbtest.E2EID(1)
	_, err := s.ReceiveBatch(ctx, []pix.Notification{apiPixNote(x, "k@example.com", "", 500)})
	require.NoError(t, err)

	_, err = s.ReceiveBatch(ctx, []pix.Notification{apiPixNote(x, "k@example.com", "", 999)})
	require.ErrorIs(t, err, pix.ErrPayloadMismatch)
	var item *pix.ItemError
	require.True(t, errors.As(err, &item), "Store.ReceiveBatch of one mismatched item: want *pix.ItemError{Index:0}, got %T %v", err, err)
}

func TestSingleItemAPIPixMismatchInAGroupKeepsItsItemError(t *testing.T) {
	ctx := context.Background()
	s := dbtest.New(t)
	x := dbtest.E2EID(1)
	_, err := s.ReceiveBatch(ctx, []pix.Notification{apiPixNote(x, "k@example.com", "", 500)})
	require.NoError(t, err)
	calls := []*db.ReceiveCallForTest{
		{Notifications: []pix.Notification{apiPixNote(x, "k@example.com", "", 999)}, Batch: true},
		{Notifications: []pix.Notification{dbtest.Notice(dbtest.E2EID(2), "acc-1", 100)}},
	}
	db.ReceiveGroupForTest(ctx, s, calls)
	require.ErrorIs(t, calls[0].Err, pix.ErrPayloadMismatch)
	var item *pix.ItemError
	require.True(t, errors.As(calls[0].Err, &item), "grouped API Pix request of one mismatched item: want *pix.ItemError, got %T %v", calls[0].Err, calls[0].Err)
}

// Found by the attack review of the group commit (head-of-line blocking):
// a redelivery of a PIX whose inbox row is locked (the credit activity
// holds it while it waits for a hot account; any long lock) shares a group
// with an unrelated new PIX. The whole group waited for the lock, the
// write timeout fired, and the unrelated webhook was answered 503, though
// alone it would have been stored at once. Now a group's statement waits
// at most groupLockTimeout for a row: the waiting call is written alone,
// by its own request, and the others commit.
func TestALockedRowNeverFailsItsGroup(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	s := dbtest.New(t)
	w, x, y := dbtest.E2EID(1), dbtest.E2EID(2), dbtest.E2EID(3)
	for _, id := range []string{w, x} {
		_, err := s.Receive(ctx, dbtest.Notice(id, "acc-1", 100))
		require.NoError(t, err)
	}
	r, err := db.NewReceiver(s, groupcommit.Options{Writers: 1, MaxRows: 64, QueueRows: 4096, WriteTimeout: 1500 * time.Millisecond})
	require.NoError(t, err)
	ran := make(chan error, 1)
	go func() { ran <- r.Run(ctx) }()
	defer func() { cancel(); require.NoError(t, <-ran) }()

	lockRow := func(id string) func() {
		tx, err := s.Pool().Begin(ctx)
		require.NoError(t, err)
		_, err = tx.Exec(ctx, `SELECT 1 FROM inbox_messages WHERE end_to_end_id = $1 FOR UPDATE`, id)
		require.NoError(t, err)
		return func() { _ = tx.Rollback(ctx) }
	}
	releaseW := lockRow(w) // holds the one writer on a group of its own
	var releaseOnce sync.Once
	lockedX := lockRow(x) // the row the redelivery in the next group needs
	releaseX := func() { releaseOnce.Do(lockedX) }
	defer releaseX()

	wDone := make(chan error, 1)
	go func() { _, err := r.Receive(ctx, dbtest.Notice(w, "acc-1", 100)); wDone <- err }()
	require.Eventually(t, func() bool {
		var n int
		require.NoError(t, s.Pool().QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()`).Scan(&n))
		return n >= 1
	}, 10*time.Second, 5*time.Millisecond)

	xDone, yDone := make(chan error, 1), make(chan error, 1)
	go func() { _, err := r.Receive(ctx, dbtest.Notice(x, "acc-1", 100)); xDone <- err }() // a redelivery of the locked row
	require.Eventually(t, func() bool { return db.ReceiverQueued(r) == 1 }, 5*time.Second, time.Millisecond)
	go func() { _, err := r.Receive(ctx, dbtest.Notice(y, "acc-2", 700)); yDone <- err }() // an unrelated new PIX
	require.Eventually(t, func() bool { return db.ReceiverQueued(r) == 2 }, 5*time.Second, time.Millisecond)
	releaseW() // the writer now takes x and y together
	require.NoError(t, <-wDone)

	errY := <-yDone
	t.Logf("unrelated new PIX y answered: %v", errY)
	require.NoError(t, errY, "y's webhook must not fail because it shared a group with a redelivery of a locked row")
	releaseX() // x, written alone by its request, gets its row now
	require.NoError(t, <-xDone)
	rows := inboxRows(t, s)
	require.Equal(t, 2, rows[x].deliveries, "the redelivery of x is counted once")
	require.Equal(t, 1, rows[y].deliveries)
}

// Found by the attack review of the group commit (work amplification):
// each API Pix request refused for one item (a mismatch: trivially sent by
// a PSP) made the group roll back and run again without it, one at a
// time, although all the refusals are known after the first pass: a
// 64-row group ran 848 statements. Now every refused request is taken out
// at once, and a group is written at most groupPasses times. Counted by a
// statement-level trigger bumping a sequence (sequences ignore rollback).
func TestRefusedBatchesAreTakenOutTogether(t *testing.T) {
	ctx := context.Background()
	s := dbtest.New(t)
	_, err := s.Pool().Exec(ctx, `CREATE SEQUENCE receive_statements;
CREATE FUNCTION count_receive_statements() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN PERFORM nextval('receive_statements'); RETURN NULL; END$$;
CREATE TRIGGER count_receive_statements BEFORE INSERT ON inbox_messages FOR EACH STATEMENT EXECUTE FUNCTION count_receive_statements();`)
	require.NoError(t, err)
	const good, refused = 32, 16
	var calls []*db.ReceiveCallForTest
	for i := range refused {
		old := dbtest.E2EID(1000 + i)
		_, err := s.ReceiveBatch(ctx, []pix.Notification{apiPixNote(old, "k@example.com", "", 500)})
		require.NoError(t, err)
		calls = append(calls, &db.ReceiveCallForTest{Batch: true, Notifications: []pix.Notification{
			apiPixNote(dbtest.E2EID(2000+i), "k@example.com", "", 100), apiPixNote(old, "k@example.com", "", 999)}})
	}
	for i := range good {
		calls = append(calls, &db.ReceiveCallForTest{Notifications: []pix.Notification{dbtest.Notice(dbtest.E2EID(i), "acc-1", 100)}})
	}
	var before int64
	require.NoError(t, s.Pool().QueryRow(ctx, `SELECT COALESCE((SELECT last_value FROM receive_statements WHERE is_called), 0)`).Scan(&before))
	start := time.Now()
	db.ReceiveGroupForTest(ctx, s, calls)
	elapsed := time.Since(start)
	var after int64
	require.NoError(t, s.Pool().QueryRow(ctx, `SELECT last_value FROM receive_statements`).Scan(&after))
	for _, c := range calls[refused:] {
		require.NoError(t, c.Err)
	}
	rows := good + 2*refused
	t.Logf("a group of %d rows (%d refused requests): %d Receive statements executed in %s (%d rows + %d alone = %d without the re-runs)",
		rows, refused, after-before, elapsed, rows, 2*refused, rows+2*refused)
	require.LessOrEqual(t, after-before, int64(2*(rows+2*refused)), "re-runs multiply the group's work")
}

// Two copies of a failed PIX in one group, and two copies of a credited
// PIX whose inbox row the retention deleted: answered as one after the
// other (from the attack review of the group commit).
func TestRedriveAndCreditedBeforeInAGroup(t *testing.T) {
	ctx := context.Background()
	s := dbtest.New(t)
	f := dbtest.Notice(dbtest.E2EID(1), "acc-1", 100)
	_, err := s.Receive(ctx, f)
	require.NoError(t, err)
	_, err = s.MarkFailed(ctx, f.EndToEndID, 1, 5, "AccountNotFound")
	require.NoError(t, err)
	dbtest.OpenAccount(t, s, "acc-2", 0)
	c := dbtest.Notice(dbtest.E2EID(2), "acc-2", 300)
	_, err = s.Receive(ctx, c)
	require.NoError(t, err)
	_, err = s.Credit(ctx, c.EndToEndID, 1, 1)
	require.NoError(t, err)
	_, err = s.Pool().Exec(ctx, `DELETE FROM inbox_messages WHERE end_to_end_id = $1`, c.EndToEndID)
	require.NoError(t, err)

	calls := []*db.ReceiveCallForTest{
		{Notifications: []pix.Notification{f}}, {Notifications: []pix.Notification{f}},
		{Notifications: []pix.Notification{c}}, {Notifications: []pix.Notification{c}},
	}
	db.ReceiveGroupForTest(ctx, s, calls)
	for _, x := range calls {
		require.NoError(t, x.Err)
	}
	require.True(t, calls[0].Receipts[0].Redriven)
	require.False(t, calls[1].Receipts[0].Redriven)
	require.True(t, calls[0].Receipts[0].Duplicate && calls[1].Receipts[0].Duplicate)
	for _, x := range calls[2:] {
		require.Equal(t, pix.Receipt{EndToEndID: c.EndToEndID, Status: pix.StatusDone, Duplicate: true}, x.Receipts[0])
	}
	var drive int
	require.NoError(t, s.Pool().QueryRow(ctx, `SELECT drive FROM inbox_messages WHERE end_to_end_id = $1`, f.EndToEndID).Scan(&drive))
	require.Equal(t, 2, drive)
	var n int
	require.NoError(t, s.Pool().QueryRow(ctx, `SELECT count(*) FROM inbox_messages WHERE end_to_end_id = $1`, c.EndToEndID).Scan(&n))
	require.Zero(t, n, "a credited PIX is not brought back")
}
