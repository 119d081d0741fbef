package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/db/dbtest"
	"github.com/pixbank/pix/internal/broker"
	"github.com/pixbank/pix/internal/tooling/natstest"
)

// eventsEnv is an outbox in a schema of its own, a broker, the suite's
// consumer of it, and a publisher that can misbehave.
type eventsEnv struct {
	store *db.Store
	log   *eventLog
	js    jetstream.JetStream
	pub   *broker.Publisher
}

func newEventsEnv(t *testing.T) *eventsEnv {
	t.Helper()
	store := dbtest.New(t)
	n, err := natstest.Start(t.TempDir())
	require.NoError(t, err)
	t.Cleanup(n.Stop)
	l, err := consumeEvents(t.Context(), n.URL)
	require.NoError(t, err)
	t.Cleanup(l.close)
	nc, err := nats.Connect(n.URL)
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	pub, err := broker.NewPublisher(nc, 5*time.Second, broker.DefaultStreamLimits)
	require.NoError(t, err)
	return &eventsEnv{store: store, log: l, js: js, pub: pub}
}

// write inserts an outbox event of aggregate, published or not, and
// returns it as the relay would read it.
func (e *eventsEnv) write(t *testing.T, aggregate string, published bool) db.Event {
	t.Helper()
	ev := db.Event{AggregateType: db.AggregateTransfer, AggregateID: aggregate, Type: db.EventTransferDebited, Payload: []byte(`{"schema_version":1}`)}
	var at *time.Time
	if published {
		now := time.Now()
		at = &now
	}
	require.NoError(t, e.store.Pool().QueryRow(t.Context(), `
		INSERT INTO outbox_events (aggregate_type, aggregate_id, event_type, payload, published_at)
		VALUES ($1, $2, $3, $4, $5) RETURNING id::text, seq, created_at`,
		ev.AggregateType, ev.AggregateID, ev.Type, ev.Payload, at).Scan(&ev.ID, &ev.Seq, &ev.CreatedAt))
	return ev
}

// publish publishes events as the relay does (Nats-Msg-Id = event id).
func (e *eventsEnv) publish(t *testing.T, events ...db.Event) {
	t.Helper()
	ok, err := e.pub.Publish(t.Context(), events)
	require.NoError(t, err)
	for _, o := range ok {
		require.True(t, o)
	}
}

// publishCopy publishes ev under another message id, which the broker's
// deduplication does not catch: a second copy in the stream.
func (e *eventsEnv) publishCopy(t *testing.T, ev db.Event) {
	t.Helper()
	body, err := json.Marshal(broker.Envelope{ID: ev.ID, Type: ev.Type, AggregateType: ev.AggregateType, AggregateID: ev.AggregateID,
		Seq: ev.Seq, OccurredAt: ev.CreatedAt, Data: ev.Payload})
	require.NoError(t, err)
	msg := &nats.Msg{Subject: broker.Subject(ev.Type), Data: body, Header: nats.Header{}}
	msg.Header.Set(jetstream.MsgIDHeader, ev.ID+"-copy")
	_, err = e.js.PublishMsg(t.Context(), msg)
	require.NoError(t, err)
}

func (e *eventsEnv) check(t *testing.T, afterSeq int64) (eventReport, []string) {
	t.Helper()
	// Drain errors are what check reports in detail: wait, then check.
	_ = e.log.drainEvents(t.Context(), e.store.Pool(), afterSeq, 2*time.Second) //nolint:errcheck // see above
	rep, v, err := e.log.check(context.Background(), e.store.Pool(), afterSeq, time.Now())
	require.NoError(t, err)
	return rep, v
}

func TestEventsOnceAndInOrderPass(t *testing.T) {
	e := newEventsEnv(t)
	a1, a2, b1 := e.write(t, "a", true), e.write(t, "a", true), e.write(t, "b", true)
	e.publish(t, a1, b1)
	e.publish(t, a1, a2) // a relay that died before marking a1 publishes it again
	rep, v := e.check(t, 0)
	require.Empty(t, v)
	require.Equal(t, eventReport{rows: 3, received: 3, lastPublished: rep.lastPublished}, rep)
}

func TestEventsCheckCatchesEachViolation(t *testing.T) {
	e := newEventsEnv(t)
	dup := e.write(t, "dup", true)
	late1, late2 := e.write(t, "late", true), e.write(t, "late", true)
	lost := e.write(t, "lost", true)
	e.write(t, "never", false)

	e.publish(t, dup)
	e.publishCopy(t, dup)
	e.publish(t, late2) // the second event of "late" before its first
	e.publish(t, late1)
	_ = lost // marked published, never sent

	_, v := e.check(t, 0)
	joined := strings.Join(v, "\n")
	for _, want := range []string{
		"1 outbox events never published",
		"1 published events the consumer never received: " + lost.ID,
		"1 events in the stream more than once: " + dup.ID,
		"1 aggregates whose events reached the consumer out of order: pix_transfer/late",
	} {
		require.Contains(t, joined, want)
	}
	require.Len(t, v, 4, joined)

	// afterSeq bounds the rows checked.
	_, v = e.check(t, lost.Seq)
	require.Len(t, v, 1)
	require.Contains(t, v[0], "1 outbox events never published")
}
