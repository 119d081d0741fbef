package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/internal/broker"
	"github.com/pixbank/pix/internal/tooling/natstest"
)

// pixctl events tail before the worker's relay made the stream: it says so,
// waits, creates nothing (a stream made by a reader would carry default
// limits), and prints the first event once the relay published it.
func TestEventsTailNeverCreatesTheStream(t *testing.T) {
	t.Parallel()
	n := natstest.StartT(t)
	nc, err := nats.Connect(n.URL)
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	require.NoError(t, err)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out := &lines{want: 1, done: cancel}
	errOut := &lines{want: 1 << 30, done: func() {}}
	tailed := make(chan error, 1)
	go func() {
		tailed <- run(ctx, []string{"events", "tail", "-o", "json", "-nats-url", n.URL}, out, errOut, env(), time.Now)
	}()
	require.Eventually(t, func() bool { return strings.Contains(errOut.String(), "no stream PIX_EVENTS yet") },
		30*time.Second, 20*time.Millisecond, "pixctl says it waits")
	time.Sleep(1500 * time.Millisecond) // more than one of its polls
	_, err = js.Stream(ctx, broker.StreamName)
	require.ErrorIs(t, err, jetstream.ErrStreamNotFound, "pixctl created no stream")

	// The relay's first event: the stream, with the service's limits.
	limits := broker.StreamLimits{MaxAge: 2 * time.Hour, MaxBytes: 4 << 20}
	pub, err := broker.NewPublisher(nc, 5*time.Second, limits)
	require.NoError(t, err)
	var published bool
	require.Eventually(t, func() bool {
		// The tail's consumer takes new events only: publish until one
		// is printed (each a new event, so none is a duplicate).
		ok, err := pub.Publish(ctx, []db.Event{{ID: uuid.NewString(), Seq: 1, AggregateType: db.AggregateCredit, AggregateID: "E1234567820261129120000000000001",
			Type: db.EventCreditSettled, Payload: []byte(`{"schema_version": 1, "amount_cents": 250}`), CreatedAt: time.Now()}})
		published = published || (err == nil && ok[0])
		return out.String() != ""
	}, 30*time.Second, 200*time.Millisecond, "the tail prints the relay's event")
	require.True(t, published)
	require.NoError(t, <-tailed)
	info, err := js.Stream(context.Background(), broker.StreamName)
	require.NoError(t, err)
	require.Equal(t, limits.MaxAge, info.CachedInfo().Config.MaxAge, "the stream has the relay's limits")
}
