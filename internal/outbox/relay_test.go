package outbox_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/db/dbtest"
	"github.com/pixbank/pix/internal/broker"
	"github.com/pixbank/pix/internal/outbox"
	"github.com/pixbank/pix/internal/tooling/natstest"
	"github.com/pixbank/pix/saga/retention"
)

var quiet = slog.New(slog.NewJSONHandler(io.Discard, nil))

func publisher(t testing.TB, n *natstest.Server, ackTimeout time.Duration) (*broker.Publisher, jetstream.JetStream) {
	t.Helper()
	nc, err := broker.Connect(n.URL, t.Name())
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	p, err := broker.NewPublisher(nc, ackTimeout, broker.DefaultStreamLimits)
	require.NoError(t, err)
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	return p, js
}

// writeEvents writes perAggregate events for each of aggregates
// aggregates, interleaved, each in its own transaction, as producers do.
func writeEvents(t testing.TB, s *db.Store, aggregates, perAggregate int) {
	t.Helper()
	for k := range perAggregate {
		for a := range aggregates {
			insertEvent(t, s, fmt.Sprintf("agg-%04d", a), k)
		}
	}
}

// insertEvent writes the event of aggregate id at step, in a transaction
// of its own, outside the store (no notification: a test that needs one
// kicks the relay itself).
func insertEvent(t testing.TB, s *db.Store, id string, step int) {
	t.Helper()
	_, err := s.Pool().Exec(context.Background(), `
		INSERT INTO outbox_events (aggregate_type, aggregate_id, event_type, payload)
		VALUES ('test', $1, 'test.step', jsonb_build_object('step', $2::int))`, id, step)
	require.NoError(t, err)
}

// streamEvents reads every message of the event stream, in stream order.
func streamEvents(t testing.TB, js jetstream.JetStream) []broker.Envelope {
	t.Helper()
	ctx := context.Background()
	stream, err := js.Stream(ctx, broker.StreamName)
	require.NoError(t, err)
	info, err := stream.Info(ctx)
	require.NoError(t, err)
	total := int(info.State.Msgs)
	if total == 0 {
		return nil
	}
	cons, err := stream.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{})
	require.NoError(t, err)
	var out []broker.Envelope
	for len(out) < total {
		batch, err := cons.Fetch(total-len(out), jetstream.FetchMaxWait(5*time.Second))
		require.NoError(t, err)
		for m := range batch.Messages() {
			var e broker.Envelope
			require.NoError(t, json.Unmarshal(m.Data(), &e))
			require.Equal(t, e.ID, m.Headers().Get(jetstream.MsgIDHeader))
			out = append(out, e)
		}
		require.NoError(t, batch.Error())
	}
	return out
}

func lag(t testing.TB, s *db.Store) int64 {
	t.Helper()
	l, err := s.OutboxLag(context.Background())
	require.NoError(t, err)
	return l.Unpublished
}

// inOrder checks that each aggregate's events reached the stream in commit
// (seq) order, each once.
func inOrder(t *testing.T, events []broker.Envelope) {
	t.Helper()
	last := map[string]int64{}
	seen := map[string]bool{}
	for _, e := range events {
		require.False(t, seen[e.ID], "event %s published twice", e.ID)
		seen[e.ID] = true
		require.Greater(t, e.Seq, last[e.AggregateID], "aggregate %s out of order", e.AggregateID)
		last[e.AggregateID] = e.Seq
	}
}

func TestTwoRelaysPublishEachEventOnceInOrder(t *testing.T) {
	s := dbtest.New(t)
	n := natstest.StartT(t)
	p, js := publisher(t, n, 5*time.Second)
	writeEvents(t, s, 250, 4)

	var calls atomic.Int64
	counting := func(ctx context.Context, events []db.Event) ([]bool, error) {
		calls.Add(int64(len(events)))
		return p.Publish(ctx, events)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range 2 {
		r := outbox.New(s, counting, outbox.Options{BatchSize: 50, PollInterval: 20 * time.Millisecond}, quiet)
		wg.Go(func() { _ = r.Run(ctx) })
	}
	require.Eventually(t, func() bool { return lag(t, s) == 0 }, 60*time.Second, 50*time.Millisecond)
	cancel()
	wg.Wait()

	require.EqualValues(t, 1000, calls.Load(), "each event handed to the broker once")
	events := streamEvents(t, js)
	require.Len(t, events, 1000)
	inOrder(t, events)
}

// The relay dies after the broker took the events and before it marked
// them: the next round publishes them again and the broker drops the
// copies by their id.
func TestRepublishAfterACrashIsDropped(t *testing.T) {
	ctx := context.Background()
	s := dbtest.New(t)
	n := natstest.StartT(t)
	p, js := publisher(t, n, 5*time.Second)
	writeEvents(t, s, 20, 2)

	crashed := func(ctx context.Context, events []db.Event) ([]bool, error) {
		if _, err := p.Publish(ctx, events); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("relay killed before marking")
	}
	_, err := s.RelayEvents(ctx, 100, crashed)
	require.ErrorContains(t, err, "relay killed")
	require.EqualValues(t, 40, lag(t, s), "nothing marked")
	require.Len(t, streamEvents(t, js), 20, "the heads of the 20 aggregates reached the broker")

	r := outbox.New(s, p.Publish, outbox.Options{BatchSize: 100}, quiet)
	for lag(t, s) > 0 {
		_, err := r.RelayOnce(ctx)
		require.NoError(t, err)
	}
	events := streamEvents(t, js)
	require.Len(t, events, 40, "the re-published heads were dropped as duplicates")
	inOrder(t, events)
}

// The broker is down while events are written: they wait, the relay backs
// off, and all are published, in order, once it is back.
func TestBrokerDownEventsWaitThenPublish(t *testing.T) {
	s := dbtest.New(t)
	n := natstest.StartT(t)
	p, js := publisher(t, n, 300*time.Millisecond)
	writeEvents(t, s, 10, 1)
	r := outbox.New(s, p.Publish, outbox.Options{BatchSize: 100, PollInterval: 20 * time.Millisecond, RetryMaxDelay: 200 * time.Millisecond}, quiet)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = r.Run(ctx); close(done) }()
	require.Eventually(t, func() bool { return lag(t, s) == 0 }, 30*time.Second, 20*time.Millisecond)

	n.Stop()
	writeEvents(t, s, 10, 3)
	time.Sleep(1500 * time.Millisecond) // rounds wait for acknowledgements, fail and back off
	require.EqualValues(t, 30, lag(t, s))
	var attempts int
	require.NoError(t, s.Pool().QueryRow(context.Background(), `SELECT max(attempts) FROM outbox_events WHERE published_at IS NULL`).Scan(&attempts))
	require.Positive(t, attempts, "the failures are recorded on the events")

	require.NoError(t, n.Restart())
	require.Eventually(t, func() bool { return lag(t, s) == 0 }, 60*time.Second, 50*time.Millisecond)
	cancel()
	<-done
	events := streamEvents(t, js)
	require.Len(t, events, 40)
	inOrder(t, events)
}

func TestPublishedEventsAreDeletedAfterRetention(t *testing.T) {
	ctx := context.Background()
	s := dbtest.New(t)
	writeEvents(t, s, 5, 1)
	_, err := s.Pool().Exec(ctx, `UPDATE outbox_events SET published_at = now() - interval '8 days' WHERE aggregate_id IN ('agg-0000', 'agg-0001', 'agg-0002')`)
	require.NoError(t, err)
	_, err = s.Pool().Exec(ctx, `UPDATE outbox_events SET published_at = now() - interval '1 day' WHERE aggregate_id = 'agg-0003'`)
	require.NoError(t, err)

	deleted, err := retention.NewStore(s).DeletePublishedEvents(ctx, 7*24*time.Hour, 2)
	require.NoError(t, err)
	require.EqualValues(t, 2, deleted, "in batches")
	deleted, err = retention.NewStore(s).DeletePublishedEvents(ctx, 7*24*time.Hour, 2)
	require.NoError(t, err)
	require.EqualValues(t, 1, deleted)
	var left int
	require.NoError(t, s.Pool().QueryRow(ctx, `SELECT count(*) FROM outbox_events`).Scan(&left))
	require.Equal(t, 2, left, "a recent published event and an unpublished one stay")
}

// BenchmarkRelay measures the relay's throughput (events/s) from the outbox
// table to an embedded JetStream, one relay, batches of 500.
func BenchmarkRelay(b *testing.B) {
	s := dbtest.New(b)
	n := natstest.StartT(b)
	p, _ := publisher(b, n, 5*time.Second)
	ctx := context.Background()
	r := outbox.New(s, p.Publish, outbox.Options{BatchSize: 500}, quiet)
	const perRound = 5000
	b.ResetTimer()
	var total int
	var elapsed time.Duration
	for b.Loop() {
		b.StopTimer()
		_, err := s.Pool().Exec(ctx, `
			INSERT INTO outbox_events (aggregate_type, aggregate_id, event_type, payload)
			SELECT 'bench', g::text, 'bench.event', jsonb_build_object('n', g) FROM generate_series(1, $1) g`, perRound)
		require.NoError(b, err)
		b.StartTimer()
		start := time.Now()
		for lag(b, s) > 0 {
			k, err := r.RelayOnce(ctx)
			require.NoError(b, err)
			total += k
		}
		elapsed += time.Since(start)
	}
	b.ReportMetric(float64(total)/elapsed.Seconds(), "events/s")
}

// BenchmarkIdleCommitToBroker measures, with the relay idle, the time from
// an event's commit to a consumer receiving it. The relay's poll interval
// is 5 s: what delivers within milliseconds is the NOTIFY, sent after the
// commit as the store's waker sends it. The events come apart by more than
// the default gather window, as after a quiet period: none is held.
func BenchmarkIdleCommitToBroker(b *testing.B) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := dbtest.New(b)
	n := natstest.StartT(b)
	p, js := publisher(b, n, 5*time.Second)
	stream, err := broker.EnsureStream(ctx, js, broker.DefaultStreamLimits)
	require.NoError(b, err)
	cons, err := stream.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverNewPolicy})
	require.NoError(b, err)
	received := make(chan struct{}, 1)
	cc, err := cons.Consume(func(m jetstream.Msg) { received <- struct{}{} })
	require.NoError(b, err)
	defer cc.Stop()
	const window = 50 * time.Millisecond
	r := outbox.New(s, p.Publish, outbox.Options{PollInterval: 5 * time.Second, GatherWindow: window}, quiet)
	done := make(chan struct{})
	go func() { _ = r.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	time.Sleep(200 * time.Millisecond) // the relay's LISTEN is in place

	var lat []time.Duration
	i := 0
	for b.Loop() {
		i++
		b.StopTimer()
		time.Sleep(2 * window)
		b.StartTimer()
		start := time.Now()
		_, err := s.Pool().Exec(ctx, `
			INSERT INTO outbox_events (aggregate_type, aggregate_id, event_type, payload)
			VALUES ('bench', $1, 'bench.event', '{}')`, fmt.Sprint(i))
		require.NoError(b, err)
		_, err = s.Pool().Exec(ctx, `SELECT pg_notify($1, '')`, db.OutboxChannel)
		require.NoError(b, err)
		select {
		case <-received:
		case <-time.After(10 * time.Second):
			b.Fatal("the event did not reach the consumer within 10 s")
		}
		lat = append(lat, time.Since(start))
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
}

// batchRecorder is a Publish that records the size of each round's batch.
type batchRecorder struct {
	mu      sync.Mutex
	batches []int
	next    outbox.Publish
}

func (b *batchRecorder) publish(ctx context.Context, events []db.Event) ([]bool, error) {
	b.mu.Lock()
	b.batches = append(b.batches, len(events))
	b.mu.Unlock()
	return b.next(ctx, events)
}

func (b *batchRecorder) sizes() []int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.batches)
}

// ownChannel is a notification channel for one test: the tests' schemas
// share one database, where another package's store notifies the outbox's
// channel, and a stray notification would start (and hold) a round.
func ownChannel() string {
	return fmt.Sprintf("pix_outbox_test_%d", time.Now().UnixNano())
}

// runRelay runs r until the test ends, and returns a stop that waits for it.
// It returns after the relay's first round (at once, on an empty outbox),
// so that what the test writes next is relayed by a later one.
func runRelay(t *testing.T, r *outbox.Relay) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = r.Run(ctx); close(done) }()
	time.Sleep(200 * time.Millisecond)
	stop = func() {
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("the relay did not stop within 10 s of its context ending")
		}
	}
	t.Cleanup(stop)
	return stop
}

// gatheringRelay starts, for one test, a relay with options opts (on a
// channel of its own) over a fresh outbox and broker, recording each
// round's batch, and returns after its first round.
func gatheringRelay(t *testing.T, opts outbox.Options) (*db.Store, *outbox.Relay, *batchRecorder, jetstream.JetStream, func()) {
	t.Helper()
	s := dbtest.New(t)
	n := natstest.StartT(t)
	p, js := publisher(t, n, 5*time.Second)
	rec := &batchRecorder{next: p.Publish}
	opts.Channel = ownChannel()
	r := outbox.New(s, rec.publish, opts, quiet)
	stop := runRelay(t, r)
	return s, r, rec, js, stop
}

// Events committed one at a time, as credits write them, share a round
// when they come within the gather window of the round before: one
// transaction for both instead of one each.
func TestEventsWithinTheGatherWindowShareARound(t *testing.T) {
	const window = 2 * time.Second
	s, r, rec, js, _ := gatheringRelay(t, outbox.Options{PollInterval: time.Hour, GatherWindow: window})

	insertEvent(t, s, "agg-a", 0)
	r.Kick()
	require.Eventually(t, func() bool { return len(rec.sizes()) == 1 }, 10*time.Second, 5*time.Millisecond)
	published := time.Now()
	// Within the window of that round: two events, notified apart.
	insertEvent(t, s, "agg-b", 0)
	r.Kick()
	time.Sleep(100 * time.Millisecond)
	insertEvent(t, s, "agg-c", 0)
	r.Kick()
	if time.Since(published) > window*3/4 {
		t.Skip("the machine took most of the window to write two events; the test can't tell a gathered round from two")
	}
	require.Eventually(t, func() bool { return lag(t, s) == 0 }, window+10*time.Second, 10*time.Millisecond)

	require.Equal(t, []int{1, 2}, rec.sizes(), "the two later events were relayed in one round")
	require.Len(t, streamEvents(t, js), 3)
}

// A notification within the window of the round before waits for the
// window's end, and is relayed then (not at the next poll).
func TestAHeldNotificationIsRelayedWhenTheWindowEnds(t *testing.T) {
	s, r, rec, _, _ := gatheringRelay(t, outbox.Options{PollInterval: time.Hour, GatherWindow: time.Second})

	insertEvent(t, s, "agg-a", 0)
	r.Kick()
	require.Eventually(t, func() bool { return len(rec.sizes()) == 1 }, 10*time.Second, 5*time.Millisecond)
	insertEvent(t, s, "agg-b", 0)
	r.Kick()
	time.Sleep(300 * time.Millisecond)
	require.EqualValues(t, 1, lag(t, s), "the second event waits for the window of the round before")
	require.Eventually(t, func() bool { return lag(t, s) == 0 }, 10*time.Second, 10*time.Millisecond,
		"the held event is relayed when the window ends, not at the hour's poll")
	require.Equal(t, []int{1, 1}, rec.sizes())
}

// A notification after a quiet period is relayed at once, whatever the
// window; a relay told to stop while it holds one stops at once (the event
// stays in the outbox for the next relay).
func TestTheFirstNotificationIsNotHeldAndAHoldEndsWithTheRelay(t *testing.T) {
	s, r, rec, _, stop := gatheringRelay(t, outbox.Options{PollInterval: 2 * time.Hour, GatherWindow: time.Hour})

	insertEvent(t, s, "agg-a", 0)
	r.Kick()
	require.Eventually(t, func() bool { return lag(t, s) == 0 }, 10*time.Second, 10*time.Millisecond,
		"the first event is relayed at once, not after the hour's window")

	insertEvent(t, s, "agg-b", 0)
	r.Kick()
	time.Sleep(300 * time.Millisecond)
	require.EqualValues(t, 1, lag(t, s), "the second event is held by the hour's window")
	stop() // fails the test unless Run returns within 10 s
	require.Equal(t, []int{1}, rec.sizes())
	require.EqualValues(t, 1, lag(t, s), "the held event stays for the next relay")
}

// A notified round that found nothing holds the window too: with several
// relays, the one whose claim lost the event holds as the one that took it.
func TestANotifiedRoundThatFoundNothingHolds(t *testing.T) {
	s, r, rec, _, _ := gatheringRelay(t, outbox.Options{PollInterval: time.Hour, GatherWindow: time.Second})

	r.Kick() // another relay took the event
	time.Sleep(100 * time.Millisecond)
	insertEvent(t, s, "agg-a", 0)
	r.Kick()
	time.Sleep(300 * time.Millisecond)
	require.EqualValues(t, 1, lag(t, s), "the event waits for the window of the empty notified round")
	require.Eventually(t, func() bool { return lag(t, s) == 0 }, 10*time.Second, 10*time.Millisecond)
	require.Equal(t, []int{1}, rec.sizes())
}

// An aggregate's events committed together are published one round each
// (a claim takes only each aggregate's earliest): the rounds after the
// first come a window apart, without a notification, not a poll apart.
func TestAnAggregatesNextEventFollowsWithinTheWindow(t *testing.T) {
	s, r, rec, js, _ := gatheringRelay(t, outbox.Options{PollInterval: time.Hour, GatherWindow: 100 * time.Millisecond})

	for step := range 3 {
		insertEvent(t, s, "agg-chain", step)
	}
	r.Kick() // one notification for the three, as the waker coalesces them
	require.Eventually(t, func() bool { return lag(t, s) == 0 }, 10*time.Second, 10*time.Millisecond,
		"the aggregate's later events are published without waiting for the hour's poll")
	require.Equal(t, []int{1, 1, 1}, rec.sizes())
	events := streamEvents(t, js)
	require.Len(t, events, 3)
	inOrder(t, events)
}
