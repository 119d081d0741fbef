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

// A commit that made work wakes the listeners of its channel through the
// store's waker; a redelivery, which made none, does not.
func TestCommitsWakeTheirChannels(t *testing.T) {
	s := dbtest.New(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = s.RunWaker(ctx, slog.New(slog.NewJSONHandler(io.Discard, nil))) }()
	woken := map[string]chan struct{}{db.DueChannel: make(chan struct{}, 16), db.OutboxChannel: make(chan struct{}, 16)}
	for channel, c := range woken {
		listening := make(chan struct{})
		go func() {
			close(listening)
			_ = s.Listen(ctx, channel, func() { c <- struct{}{} })
		}()
		<-listening
	}
	time.Sleep(200 * time.Millisecond) // the LISTENs are in place
	wait := func(channel string) bool {
		select {
		case <-woken[channel]:
			return true
		case <-time.After(2 * time.Second):
			return false
		}
	}

	openAccount(t, s, "acc-1", 0)
	_, err := s.Receive(ctx, note(e2eID(1), "acc-1", 100))
	require.NoError(t, err)
	require.True(t, wait(db.DueChannel), "a new PIX wakes the dispatchers")

	_, err = s.Receive(ctx, note(e2eID(1), "acc-1", 100))
	require.NoError(t, err)
	require.False(t, wait(db.DueChannel), "a redelivery wakes nobody")

	_, err = s.Credit(ctx, e2eID(1), 1, 1)
	require.NoError(t, err)
	require.True(t, wait(db.OutboxChannel), "a credit's event wakes the relays")
}
