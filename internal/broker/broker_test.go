package broker_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/internal/broker"
	"github.com/pixbank/pix/internal/tooling/natstest"
)

// ownNATS is a NATS server of the test's own, and a JetStream context on it.
func ownNATS(t *testing.T) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	n := natstest.StartT(t)
	nc, err := nats.Connect(n.URL)
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	return nc, js
}

func event(i int) db.Event {
	return db.Event{ID: fmt.Sprintf("00000000-0000-4000-8000-%012d", i), Seq: int64(i), AggregateType: db.AggregateCredit,
		AggregateID: fmt.Sprintf("E12345678202612011000%011d", i), Type: db.EventCreditSettled,
		Payload: []byte(`{"schema_version": 1}`), CreatedAt: time.Now()}
}

// A stream created by an earlier version (no limits, the default discard
// policy) is updated in place: the limits set, its events kept.
func TestEnsureStreamUpdatesTheStreamInPlace(t *testing.T) {
	ctx := context.Background()
	nc, js := ownNATS(t)
	_, err := js.CreateStream(ctx, jetstream.StreamConfig{
		Name: broker.StreamName, Subjects: []string{broker.SubjectPrefix + ">"}, Storage: jetstream.FileStorage,
		Duplicates: broker.DuplicateWindow,
	})
	require.NoError(t, err)
	pub, err := broker.NewPublisher(nc, 5*time.Second, broker.DefaultStreamLimits)
	require.NoError(t, err)
	ok, err := pub.Publish(ctx, []db.Event{event(1), event(2), event(3)})
	require.NoError(t, err)
	require.Equal(t, []bool{true, true, true}, ok)

	limits := broker.StreamLimits{MaxAge: 30 * 24 * time.Hour, MaxBytes: 256 << 20}
	s, err := broker.EnsureStream(ctx, js, limits)
	require.NoError(t, err)
	info, err := s.Info(ctx)
	require.NoError(t, err)
	require.Equal(t, limits.MaxAge, info.Config.MaxAge)
	require.Equal(t, limits.MaxBytes, info.Config.MaxBytes)
	require.Equal(t, jetstream.DiscardNew, info.Config.Discard)
	require.Equal(t, broker.DuplicateWindow, info.Config.Duplicates)
	require.EqualValues(t, 3, info.State.Msgs, "the events stay")
	require.EqualValues(t, 1, info.State.FirstSeq)

	// And again, to other limits (a changed NATS_STREAM_MAX_*).
	limits = broker.StreamLimits{MaxAge: 7 * 24 * time.Hour, MaxBytes: 64 << 20}
	s, err = broker.EnsureStream(ctx, js, limits)
	require.NoError(t, err)
	info, err = s.Info(ctx)
	require.NoError(t, err)
	require.Equal(t, limits.MaxAge, info.Config.MaxAge)
	require.Equal(t, limits.MaxBytes, info.Config.MaxBytes)
	require.EqualValues(t, 3, info.State.Msgs)
}

// A full stream refuses a new event, which the publisher reports unpublished
// (the relay keeps it in the outbox), and drops none of those it holds: a
// consumer behind still reads them.
func TestAFullStreamRefusesNewEventsAndKeepsTheOld(t *testing.T) {
	ctx := context.Background()
	nc, js := ownNATS(t)
	pub, err := broker.NewPublisher(nc, 5*time.Second, broker.StreamLimits{MaxAge: time.Hour, MaxBytes: 2048})
	require.NoError(t, err)
	var accepted int
	var refusal error
	for i := 1; i <= 50 && refusal == nil; i++ {
		ok, err := pub.Publish(ctx, []db.Event{event(i)})
		if ok[0] {
			accepted++
		}
		refusal = err
	}
	require.Error(t, refusal, "2 KiB hold fewer than 50 events")
	require.ErrorContains(t, refusal, "maximum bytes exceeded")
	require.Positive(t, accepted)

	s, err := js.Stream(ctx, broker.StreamName)
	require.NoError(t, err)
	info, err := s.Info(ctx)
	require.NoError(t, err)
	require.EqualValues(t, accepted, info.State.Msgs)
	require.EqualValues(t, 1, info.State.FirstSeq, "the oldest event is still there")

	// Still refused while the stream is full; accepted once room is made.
	ok, err := pub.Publish(ctx, []db.Event{event(100)})
	require.Error(t, err)
	require.Equal(t, []bool{false}, ok)
	require.NoError(t, s.Purge(ctx))
	ok, err = pub.Publish(ctx, []db.Event{event(100)})
	require.NoError(t, err)
	require.Equal(t, []bool{true}, ok)
}

// A reader opens the stream as it is, never changing the limits the
// service set; with no stream yet, it creates none (the relay owns it).
func TestOpenStreamKeepsTheServiceLimits(t *testing.T) {
	ctx := context.Background()
	_, js := ownNATS(t)
	_, err := broker.OpenStream(ctx, js)
	require.ErrorIs(t, err, jetstream.ErrStreamNotFound)
	_, err = js.Stream(ctx, broker.StreamName)
	require.ErrorIs(t, err, jetstream.ErrStreamNotFound, "the reader created no stream")

	limits := broker.StreamLimits{MaxAge: 3 * time.Hour, MaxBytes: 8 << 20}
	_, err = broker.EnsureStream(ctx, js, limits)
	require.NoError(t, err)
	s, err := broker.OpenStream(ctx, js)
	require.NoError(t, err)
	info, err := s.Info(ctx)
	require.NoError(t, err)
	require.Equal(t, limits.MaxAge, info.Config.MaxAge)
	require.Equal(t, limits.MaxBytes, info.Config.MaxBytes)
	require.Equal(t, jetstream.DiscardNew, info.Config.Discard)
}

// Limits the broker cannot keep are refused before anything is asked.
func TestStreamLimitsAreChecked(t *testing.T) {
	nc, js := ownNATS(t)
	for _, l := range []broker.StreamLimits{
		{MaxAge: 0, MaxBytes: 1 << 20},
		{MaxAge: broker.DuplicateWindow - time.Second, MaxBytes: 1 << 20},
		{MaxAge: time.Hour, MaxBytes: 0},
	} {
		_, err := broker.EnsureStream(context.Background(), js, l)
		require.ErrorContains(t, err, "MaxAge must be at least the duplicate window", "%+v", l)
		_, err = broker.NewPublisher(nc, time.Second, l)
		require.Error(t, err, "%+v", l)
	}
}
