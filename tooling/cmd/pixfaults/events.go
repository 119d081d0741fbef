package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/pixbank/pix/internal/broker"
)

// received is one message of the event stream as the consumer got it.
type received struct {
	streamSeq uint64
	env       broker.Envelope
	msgID     string
}

// eventLog is a durable JetStream consumer of the event stream, for the
// whole suite, and what it received: each stream message once (a
// redelivery of the same stream sequence is counted apart), so that two
// messages with one event id are two copies in the stream.
type eventLog struct {
	nc *nats.Conn
	cc jetstream.ConsumeContext

	mu          sync.Mutex
	byStreamSeq map[uint64]received
	byID        map[string][]uint64
	redelivered int
	undecodable int
}

// consumeEvents creates the stream if needed (the suite owns its broker,
// which it starts before the service: the consumer must exist before the
// first event; the relay's publisher sets the service's limits at its
// first event) and a durable consumer of it from its start, and consumes
// it until close.
func consumeEvents(ctx context.Context, url string) (*eventLog, error) {
	nc, err := broker.Connect(url, "pixfaults events")
	if err != nil {
		return nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("jetstream: %w", err)
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	stream, err := broker.EnsureStream(cctx, js, broker.DefaultStreamLimits)
	if err != nil {
		nc.Close()
		return nil, err
	}
	cons, err := stream.CreateOrUpdateConsumer(cctx, jetstream.ConsumerConfig{
		Durable:       "pixfaults",
		DeliverPolicy: jetstream.DeliverAllPolicy,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       30 * time.Second,
	})
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("create consumer: %w", err)
	}
	l := &eventLog{nc: nc, byStreamSeq: map[uint64]received{}, byID: map[string][]uint64{}}
	if l.cc, err = cons.Consume(l.handle); err != nil {
		nc.Close()
		return nil, fmt.Errorf("consume %s: %w", broker.StreamName, err)
	}
	return l, nil
}

func (l *eventLog) handle(m jetstream.Msg) {
	md, err := m.Metadata()
	var env broker.Envelope
	l.mu.Lock()
	switch {
	case err != nil || json.Unmarshal(m.Data(), &env) != nil:
		l.undecodable++
	default:
		if _, seen := l.byStreamSeq[md.Sequence.Stream]; seen {
			l.redelivered++
			break
		}
		id := m.Headers().Get(jetstream.MsgIDHeader)
		l.byStreamSeq[md.Sequence.Stream] = received{streamSeq: md.Sequence.Stream, env: env, msgID: id}
		l.byID[env.ID] = append(l.byID[env.ID], md.Sequence.Stream)
	}
	l.mu.Unlock()
	_ = m.Ack() //nolint:errcheck // an ack lost is a redelivery, which handle counts apart
}

func (l *eventLog) close() {
	l.cc.Stop()
	l.nc.Close()
}

// outboxRow is an outbox event as PostgreSQL holds it.
type outboxRow struct {
	id, aggregateType, aggregateID, eventType string
	seq                                       int64
	published                                 bool
	publishedAt                               *time.Time
	createdAt                                 time.Time
}

func outboxRowsAfter(ctx context.Context, pool *pgxpool.Pool, afterSeq int64) ([]outboxRow, error) {
	rows, err := pool.Query(ctx, `
		SELECT id::text, seq, aggregate_type, aggregate_id, event_type, published_at, created_at
		FROM outbox_events WHERE seq > $1 ORDER BY seq`, afterSeq)
	if err != nil {
		return nil, fmt.Errorf("read outbox: %w", err)
	}
	var out []outboxRow
	var r outboxRow
	_, err = pgx.ForEachRow(rows, []any{&r.id, &r.seq, &r.aggregateType, &r.aggregateID, &r.eventType, &r.publishedAt, &r.createdAt}, func() error {
		r.published = r.publishedAt != nil
		out = append(out, r)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read outbox: %w", err)
	}
	return out, nil
}

// lastOutboxSeq is the outbox's highest seq so far (0 when empty).
func lastOutboxSeq(ctx context.Context, pool *pgxpool.Pool) (int64, error) {
	var seq int64
	if err := pool.QueryRow(ctx, `SELECT COALESCE(max(seq), 0) FROM outbox_events`).Scan(&seq); err != nil {
		return 0, fmt.Errorf("read outbox: %w", err)
	}
	return seq, nil
}

// eventReport is what the events of one case came to.
type eventReport struct {
	rows, received int
	// lastPublished is when the last event written before a moment was
	// published (see drainEvents).
	lastPublished time.Time
}

// drainEvents waits (within timeout) until every outbox event written
// after afterSeq is published and has reached the consumer.
func (l *eventLog) drainEvents(ctx context.Context, pool *pgxpool.Pool, afterSeq int64, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		rows, err := outboxRowsAfter(ctx, pool, afterSeq)
		if err == nil {
			missing := 0
			l.mu.Lock()
			for _, r := range rows {
				if _, ok := l.byID[r.id]; !r.published || !ok {
					missing++
				}
			}
			l.mu.Unlock()
			if missing == 0 {
				return nil
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("events: %d of %d not published or not at the consumer after %s", missing, len(rows), timeout)
			}
		} else if time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// check compares the outbox events written after afterSeq with what the
// consumer received: every row published and received, each event id in
// the stream once (the broker drops a re-publish by its Nats-Msg-Id), and
// each aggregate's events in the stream in their seq order. healed is the
// moment the case's fault was healed: the report says when the last event
// written before it was published.
func (l *eventLog) check(ctx context.Context, pool *pgxpool.Pool, afterSeq int64, healed time.Time) (eventReport, []string, error) {
	rows, err := outboxRowsAfter(ctx, pool, afterSeq)
	if err != nil {
		return eventReport{}, nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	rep := eventReport{rows: len(rows)}
	var unpublished, missing, copies, mismatched, outOfOrder []string
	aggregates := map[string]bool{}
	for _, r := range rows {
		if !r.published {
			unpublished = append(unpublished, r.id)
		} else if r.createdAt.Before(healed) && r.publishedAt.After(rep.lastPublished) {
			rep.lastPublished = *r.publishedAt
		}
		seqs := l.byID[r.id]
		switch {
		case len(seqs) == 0:
			if r.published {
				missing = append(missing, r.id)
			}
			continue
		case len(seqs) > 1:
			copies = append(copies, fmt.Sprintf("%s (%d copies)", r.id, len(seqs)))
		}
		rep.received++
		m := l.byStreamSeq[seqs[0]]
		if m.env.Seq != r.seq || m.env.AggregateID != r.aggregateID || m.env.AggregateType != r.aggregateType ||
			m.env.Type != r.eventType || m.msgID != r.id {
			mismatched = append(mismatched, r.id)
		}
		aggregates[r.aggregateType+"/"+r.aggregateID] = true
	}
	// Order per aggregate: its messages by stream sequence carry growing
	// seqs, copies of an event already seen aside (reported above). (The
	// consumer sees the whole stream, earlier cases included.)
	byAggregate := map[string][]received{}
	for _, m := range l.byStreamSeq {
		if k := m.env.AggregateType + "/" + m.env.AggregateID; aggregates[k] {
			byAggregate[k] = append(byAggregate[k], m)
		}
	}
	for k, ms := range byAggregate {
		sort.Slice(ms, func(i, j int) bool { return ms[i].streamSeq < ms[j].streamSeq })
		seen := map[string]bool{}
		var prev *received
		for i := range ms {
			if seen[ms[i].env.ID] {
				continue
			}
			seen[ms[i].env.ID] = true
			if prev != nil && ms[i].env.Seq <= prev.env.Seq {
				outOfOrder = append(outOfOrder, fmt.Sprintf("%s: %s (seq %d) after %s (seq %d)", k, ms[i].env.Type, ms[i].env.Seq, prev.env.Type, prev.env.Seq))
				break
			}
			prev = &ms[i]
		}
	}
	var v []string
	add := func(what string, ids []string) {
		if len(ids) > 0 {
			slices.Sort(ids)
			v = append(v, fmt.Sprintf("%d %s: %s", len(ids), what, abbreviate(ids, 3)))
		}
	}
	add("outbox events never published", unpublished)
	add("published events the consumer never received", missing)
	add("events in the stream more than once", copies)
	add("events whose message differs from the outbox row", mismatched)
	add("aggregates whose events reached the consumer out of order", outOfOrder)
	if l.undecodable > 0 {
		v = append(v, fmt.Sprintf("%d messages the consumer could not decode", l.undecodable))
	}
	return rep, v, nil
}

// abbreviate lists the first n of items and how many more there are.
func abbreviate(items []string, n int) string {
	if len(items) <= n {
		return strings.Join(items, ", ")
	}
	return strings.Join(items[:n], ", ") + fmt.Sprintf(" and %d more", len(items)-n)
}

// publishWatch sees the events as the broker routes them: a plain
// subscription to their subjects on a connection of its own, which gets a
// message as soon as the broker takes it, before the publisher has the
// acknowledgement (a JetStream consumer gets it later, once its pulls
// resume after a broker restart).
type publishWatch struct {
	nc  *nats.Conn
	sub *nats.Subscription
}

func watchPublishes(url string) (*publishWatch, error) {
	nc, err := nats.Connect(url, nats.Name("pixfaults publish watch"))
	if err != nil {
		return nil, fmt.Errorf("connect to nats at %s: %w", url, err)
	}
	sub, err := nc.SubscribeSync(broker.SubjectPrefix + ">")
	if err == nil {
		err = nc.Flush() // the subscription is in place before the first publish
	}
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("subscribe to %s>: %w", broker.SubjectPrefix, err)
	}
	return &publishWatch{nc: nc, sub: sub}, nil
}

// next returns the id of the next event published, within timeout.
func (w *publishWatch) next(timeout time.Duration) (string, bool) {
	m, err := w.sub.NextMsg(timeout)
	if err != nil {
		return "", false
	}
	return m.Header.Get(jetstream.MsgIDHeader), true
}

func (w *publishWatch) close() { w.nc.Close() }

// countUnpublished counts the events among ids whose outbox row is not
// marked published.
func countUnpublished(ctx context.Context, pool *pgxpool.Pool, ids []string) (int, error) {
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM outbox_events WHERE id = ANY($1::uuid[]) AND published_at IS NULL`, ids).Scan(&n); err != nil {
		return 0, fmt.Errorf("read outbox: %w", err)
	}
	return n, nil
}

// unpublished counts the outbox events not marked published.
func unpublished(ctx context.Context, pool *pgxpool.Pool) (int, error) {
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM outbox_events WHERE published_at IS NULL`).Scan(&n); err != nil {
		return 0, fmt.Errorf("read outbox: %w", err)
	}
	return n, nil
}
