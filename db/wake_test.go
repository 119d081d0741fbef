package db_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/db/dbtest"
)

// A commit that made work asks to wake its channels; a redelivery, which
// made none, asks nothing. (The store's waker is not running here, so the
// wakes wait in its pending set.)
func TestCommitsAskToWakeTheirChannels(t *testing.T) {
	ctx := context.Background()
	s := dbtest.NewWithAccount(t, "acc-1", 0)
	db.PendingWakes(s)

	_, err := s.Receive(ctx, dbtest.Notice(dbtest.E2EID(1), "acc-1", 100))
	require.NoError(t, err)
	require.Equal(t, []string{db.DueChannel}, db.PendingWakes(s), "a new PIX wakes the dispatchers")

	_, err = s.Receive(ctx, dbtest.Notice(dbtest.E2EID(1), "acc-1", 100))
	require.NoError(t, err)
	require.Empty(t, db.PendingWakes(s), "a redelivery wakes nobody")

	_, err = s.Credit(ctx, dbtest.E2EID(1), 1, 1)
	require.NoError(t, err)
	require.Equal(t, []string{db.OutboxChannel}, db.PendingWakes(s), "a credit's event wakes the relays")

	debit(t, s, "acc-1", 10)
	require.Equal(t, []string{db.OutboxChannel, db.TransferDueChannel}, db.PendingWakes(s), "a transfer wakes its dispatchers and the relays")
}

// The running waker turns the wakes into notifications that a LISTEN hears.
func TestWakerNotifiesListeners(t *testing.T) {
	s := dbtest.New(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	woken := make(chan struct{}, 16)
	go func() { _ = s.Listen(ctx, db.OutboxChannel, func() { woken <- struct{}{} }) }()
	time.Sleep(200 * time.Millisecond) // the LISTEN is in place
	go func() { _ = s.RunWaker(ctx, slog.New(slog.NewJSONHandler(io.Discard, nil))) }()

	dbtest.OpenAccount(t, s, "acc-1", 0)
	_, err := s.Receive(ctx, dbtest.Notice(dbtest.E2EID(1), "acc-1", 100))
	require.NoError(t, err)
	_, err = s.Credit(ctx, dbtest.E2EID(1), 1, 1)
	require.NoError(t, err)
	select {
	case <-woken:
	case <-time.After(5 * time.Second):
		t.Fatal("the relays' channel was not notified")
	}
}

// A wake asked just before the waker stops is sent on its way out.
func TestWakerFlushesOnTheWayOut(t *testing.T) {
	s := dbtest.New(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	woken := make(chan struct{}, 16)
	go func() { _ = s.Listen(ctx, db.TransferDueChannel, func() { woken <- struct{}{} }) }()
	time.Sleep(200 * time.Millisecond) // the LISTEN is in place

	dbtest.OpenAccount(t, s, "acc-1", 1_000)
	debit(t, s, "acc-1", 10) // asks to wake; no waker runs yet
	wakerCtx, stop := context.WithCancel(context.Background())
	stop() // stopped before it ever ran: only its way out sends
	require.NoError(t, s.RunWaker(wakerCtx, slog.New(slog.NewJSONHandler(io.Discard, nil))))
	select {
	case <-woken:
	case <-time.After(5 * time.Second):
		t.Fatal("the pending wake was dropped")
	}
}
