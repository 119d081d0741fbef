package broker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/internal/tracing"
)

// The stream of the service's events.
const (
	StreamName    = "PIX_EVENTS"
	SubjectPrefix = "pix.events."
	// DuplicateWindow is how long the broker remembers an event id: a
	// re-publish within it is dropped. It must exceed the longest time a
	// relay can take between publishing and marking (one batch, seconds).
	DuplicateWindow = 10 * time.Minute
)

// Subject is the subject an event type is published on.
func Subject(eventType string) string { return SubjectPrefix + eventType }

// Envelope is the message body of an event: its identity and order, and
// the payload as the producer wrote it.
type Envelope struct {
	ID            string          `json:"id"`
	Type          string          `json:"type"`
	AggregateType string          `json:"aggregate_type"`
	AggregateID   string          `json:"aggregate_id"`
	Seq           int64           `json:"seq"`
	OccurredAt    time.Time       `json:"occurred_at"`
	Data          json.RawMessage `json:"data"`
}

// Connect dials NATS, retrying the first connection and reconnecting
// forever: a worker starts while the broker is down, and events wait in
// the outbox meanwhile.
func Connect(url, name string) (*nats.Conn, error) {
	nc, err := nats.Connect(url, nats.Name(name), nats.RetryOnFailedConnect(true), nats.MaxReconnects(-1),
		nats.ReconnectWait(500*time.Millisecond))
	if err != nil {
		return nil, fmt.Errorf("connect to nats at %s: %w", url, err)
	}
	return nc, nil
}

// ConnectOnce dials NATS once, for a command a person waits for: a broker
// that can't be reached is its error at once (Connect would wait for it).
func ConnectOnce(url, name string) (*nats.Conn, error) {
	nc, err := nats.Connect(url, nats.Name(name))
	if err != nil {
		return nil, fmt.Errorf("connect to nats at %s: %w", url, err)
	}
	return nc, nil
}

// StreamLimits bound the event stream (NATS_STREAM_MAX_AGE,
// NATS_STREAM_MAX_BYTES): JetStream deletes an event older than MaxAge,
// and refuses a new one while the stream holds MaxBytes (the discard
// policy "new"): the relay then keeps it in the outbox, unpublished, until
// age has made room, so that no event is dropped before a consumer could
// read it (docs/events.md, "Limits").
type StreamLimits struct {
	MaxAge   time.Duration
	MaxBytes int64
}

// DefaultStreamLimits are the limits of the configuration's defaults (twice
// the outbox's 7 days, 1 GiB), those a reader creates the stream with when
// no relay has yet (OpenStream).
var DefaultStreamLimits = StreamLimits{MaxAge: 14 * 24 * time.Hour, MaxBytes: 1 << 30}

// streamConfig is the event stream's configuration with limits.
func streamConfig(limits StreamLimits) (jetstream.StreamConfig, error) {
	if limits.MaxAge < DuplicateWindow || limits.MaxBytes <= 0 {
		return jetstream.StreamConfig{}, fmt.Errorf("stream %s: limits %+v: MaxAge must be at least the duplicate window (%s), MaxBytes positive",
			StreamName, limits, DuplicateWindow)
	}
	return jetstream.StreamConfig{
		Name:       StreamName,
		Subjects:   []string{SubjectPrefix + ">"},
		Storage:    jetstream.FileStorage,
		Duplicates: DuplicateWindow,
		MaxAge:     limits.MaxAge,
		MaxBytes:   limits.MaxBytes,
		Discard:    jetstream.DiscardNew,
	}, nil
}

// EnsureStream creates the event stream with limits, or updates the one
// there in place (its events kept) to this configuration. The relay's
// publisher, which owns the stream, calls it; readers call OpenStream.
func EnsureStream(ctx context.Context, js jetstream.JetStream, limits StreamLimits) (jetstream.Stream, error) {
	cfg, err := streamConfig(limits)
	if err != nil {
		return nil, err
	}
	s, err := js.CreateOrUpdateStream(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("ensure stream %s: %w", StreamName, err)
	}
	return s, nil
}

// OpenStream is the event stream for a reader (pixctl, a test) as it is.
// A reader never creates it nor changes the limits the service configured:
// the relay's publisher (EnsureStream) owns it. Before the relay's first
// event there is none: the error then wraps jetstream.ErrStreamNotFound.
func OpenStream(ctx context.Context, js jetstream.JetStream) (jetstream.Stream, error) {
	s, err := js.Stream(ctx, StreamName)
	if err != nil {
		return nil, fmt.Errorf("open stream %s: %w", StreamName, err)
	}
	return s, nil
}

// Publisher publishes outbox events to JetStream and waits for the
// broker's acknowledgements.
// It is safe for concurrent use: several relays may share one.
type Publisher struct {
	js         jetstream.JetStream
	ackTimeout time.Duration
	limits     StreamLimits
	// ensured: the stream is known to exist (checked again after a
	// publish that found no stream).
	ensured atomic.Bool
	// tracer records a publish span per event; nil: tracing off.
	tracer trace.Tracer
	// propagator puts the publish span's context in the message's headers
	// (OTEL_PROPAGATORS': the consumers are outside the service).
	propagator propagation.TextMapPropagator
}

// PublisherOption changes a Publisher.
type PublisherOption func(*Publisher)

// WithTracing records a producer span per event published, continuing the
// trace of the transaction that wrote the event (its traceparent), and
// puts that span's trace context in the message's headers, in the
// formats OTEL_PROPAGATORS names (by default traceparent and tracestate;
// no baggage: the service holds none), where a consumer continues it.
// Off: nothing.
func WithTracing(p *tracing.Provider) PublisherOption {
	return func(pub *Publisher) {
		if p.Enabled() {
			pub.tracer = p.Tracer("github.com/pixbank/pix/internal/broker")
			pub.propagator = p.Propagator()
		}
	}
}

// NewPublisher publishes through nc, to the stream it ensures has limits.
func NewPublisher(nc *nats.Conn, ackTimeout time.Duration, limits StreamLimits, opts ...PublisherOption) (*Publisher, error) {
	if _, err := streamConfig(limits); err != nil {
		return nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("jetstream: %w", err)
	}
	p := &Publisher{js: js, ackTimeout: ackTimeout, limits: limits}
	for _, opt := range opts {
		opt(p)
	}
	return p, nil
}

// startPublishSpan starts e's publish span and puts its trace context in
// msg's headers; nil without tracing. The span names the subject (the
// event type), never the event's data.
func (p *Publisher) startPublishSpan(ctx context.Context, e db.Event, msg *nats.Msg) trace.Span {
	if p.tracer == nil {
		return nil
	}
	ctx, span := p.tracer.Start(tracing.WithTraceparent(ctx, e.Traceparent), "publish "+msg.Subject,
		trace.WithSpanKind(trace.SpanKindProducer),
		trace.WithAttributes(
			attribute.String("messaging.system", "nats"),
			attribute.String("messaging.operation.type", "send"),
			attribute.String("messaging.operation.name", "publish"),
			attribute.String("messaging.destination.name", msg.Subject),
			attribute.String("messaging.message.id", e.ID),
			attribute.String("pix.aggregate_type", e.AggregateType),
			attribute.String("pix.aggregate_id", e.AggregateID),
		))
	p.propagator.Inject(ctx, headerCarrier(msg.Header))
	return span
}

// endPublishSpan ends a publish span (nil: none) with the broker's answer.
func endPublishSpan(span trace.Span, err error) {
	if span == nil {
		return
	}
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, "")
	}
	span.End()
}

// headerCarrier carries the trace context in NATS headers under the W3C
// names as they are (traceparent, lowercase: NATS header names are case
// sensitive, and the HTTP carrier would canonicalise them to Traceparent).
type headerCarrier nats.Header

func (h headerCarrier) Get(key string) string { return nats.Header(h).Get(key) }
func (h headerCarrier) Set(key, value string) { nats.Header(h).Set(key, value) }
func (h headerCarrier) Keys() []string {
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	return keys
}

// errNoAcknowledgement: the broker did not answer a publish in time.
var errNoAcknowledgement = errors.New("no acknowledgement")

// Publish publishes events in order and reports which the broker
// acknowledged (a duplicate is acknowledged too: it is there already).
func (p *Publisher) Publish(ctx context.Context, events []db.Event) ([]bool, error) {
	ok := make([]bool, len(events))
	if !p.ensured.Load() {
		if _, err := EnsureStream(ctx, p.js, p.limits); err != nil {
			return ok, err
		}
		p.ensured.Store(true)
	}
	futures := make([]jetstream.PubAckFuture, len(events))
	// spans[i] is event i's publish span, ended with the broker's answer
	// (nil without tracing); one still open on the way out got none.
	var spans []trace.Span
	if p.tracer != nil {
		spans = make([]trace.Span, len(events))
		defer func() {
			for _, span := range spans {
				endPublishSpan(span, errNoAcknowledgement)
			}
		}()
	}
	var errs []error
	for i, e := range events {
		body, err := json.Marshal(Envelope{ID: e.ID, Type: e.Type, AggregateType: e.AggregateType, AggregateID: e.AggregateID,
			Seq: e.Seq, OccurredAt: e.CreatedAt, Data: e.Payload})
		if err != nil {
			errs = append(errs, fmt.Errorf("event %s: %w", e.ID, err))
			continue
		}
		msg := &nats.Msg{Subject: Subject(e.Type), Data: body, Header: nats.Header{}}
		msg.Header.Set(jetstream.MsgIDHeader, e.ID)
		span := p.startPublishSpan(ctx, e, msg)
		if futures[i], err = p.js.PublishMsgAsync(msg); err != nil {
			endPublishSpan(span, err)
			errs = append(errs, fmt.Errorf("event %s: %w", e.ID, err))
			break // the rest would fail alike; they stay for the next round
		}
		if spans != nil {
			spans[i] = span
		}
	}
	answered := func(i int, err error) {
		if spans != nil {
			endPublishSpan(spans[i], err)
			spans[i] = nil
		}
	}
	timeout := time.NewTimer(p.ackTimeout)
	defer timeout.Stop()
	for i, f := range futures {
		if f == nil {
			continue
		}
		select {
		case <-f.Ok():
			ok[i] = true
			answered(i, nil)
		case err := <-f.Err():
			answered(i, err)
			errs = append(errs, fmt.Errorf("event %s: %w", events[i].ID, err))
			if errors.Is(err, jetstream.ErrNoStreamResponse) || errors.Is(err, jetstream.ErrStreamNotFound) {
				p.ensured.Store(false)
			}
		case <-timeout.C:
			return ok, errors.Join(append(errs, fmt.Errorf("%w within %s", errNoAcknowledgement, p.ackTimeout))...)
		case <-ctx.Done():
			return ok, ctx.Err()
		}
	}
	return ok, errors.Join(errs...)
}
