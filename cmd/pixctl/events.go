package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/pixbank/pix/internal/broker"
)

var eventsTailCommand = &command{
	name: "events tail", args: "[-all] [flags]",
	summary: "print the service's events as they reach the broker",
	about: `Prints the service's events as they reach the broker (the JetStream stream
PIX_EVENTS), one a line: the subject, then the envelope (docs/events.md);
with -o json the envelope only, as it is on the wire. New events only, or
with -all from the start of the stream. An ordered consumer: it leaves
nothing behind on the broker. Ctrl-C stops it (exit 0).
`,
	problem:  "the stream's messages stopped with an error",
	settings: []setting{natsURLSetting}, output: true,
	define: func(fs *flag.FlagSet) runner {
		all := fs.Bool("all", false, "from the start of the stream, not only new events")
		return func(ctx context.Context, inv *invocation, args []string) error {
			if len(args) > 0 {
				return usageErrorf("unexpected argument %q", args[0])
			}
			return tailEvents(ctx, inv.get(natsURLSetting), *all, inv.json, inv.out, inv.errOut)
		}
	},
}

// tailEvents prints each event of the stream at url as one line (subject,
// then the envelope as JSON; asJSON: the envelope only) until ctx ends. An
// ordered consumer: nothing is left behind on the broker.
func tailEvents(ctx context.Context, url string, all, asJSON bool, out, errOut io.Writer) error {
	nc, err := broker.ConnectOnce(url, "pixctl events tail")
	if err != nil {
		return unavailable(fmt.Errorf("the events on NATS at %s: %w", url, err))
	}
	defer nc.Close()
	cons, err := newEventConsumer(ctx, nc, all, errOut)
	if err != nil {
		return unavailable(fmt.Errorf("the events on NATS at %s: %w", url, err))
	}
	fmt.Fprintf(errOut, "pixctl: tailing %s on %s (Ctrl-C to stop)\n", broker.StreamName, url)
	it, err := cons.Messages()
	if err != nil {
		return unavailable(fmt.Errorf("consume %s: %w", broker.StreamName, err))
	}
	go func() {
		<-ctx.Done()
		it.Stop()
	}()
	for {
		m, err := it.Next()
		if errors.Is(err, jetstream.ErrMsgIteratorClosed) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("consume %s: %w", broker.StreamName, err)
		}
		if asJSON {
			if err := printJSON(out, m.Data()); err != nil {
				// Not an envelope: not for a consumer of JSON lines.
				fmt.Fprintf(errOut, "pixctl: %s message %s is not JSON (%v): skipped\n", m.Subject(), m.Headers().Get(jetstream.MsgIDHeader), err)
			}
			continue
		}
		fmt.Fprintf(out, "%s %s\n", m.Subject(), m.Data())
	}
}

// newEventConsumer is an ordered consumer of the event stream: new events
// only, or all of them. Before the stream exists it waits for it.
func newEventConsumer(ctx context.Context, nc *nats.Conn, all bool, errOut io.Writer) (jetstream.Consumer, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("jetstream: %w", err)
	}
	stream, err := waitForStream(ctx, js, time.Second, errOut)
	if err != nil {
		return nil, err
	}
	policy := jetstream.DeliverNewPolicy
	if all {
		policy = jetstream.DeliverAllPolicy
	}
	return stream.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{DeliverPolicy: policy})
}

// eventCollector gathers the events the demo caused, as a consumer sees
// them.
type eventCollector struct {
	mu     sync.Mutex
	events []broker.Envelope
	// err is why no event can arrive (the consumer could not be made).
	err  error
	stop func()
}

// collectEvents consumes, from the broker at url, the events published
// from now on. On a fresh stack the stream does not exist until the relay
// publishes the demo's first event (pixctl never creates it): the consumer
// is made once it does, from this moment on, so that first event is
// collected too. stop ends the consumer's goroutine and waits for it.
func collectEvents(ctx context.Context, url string) (*eventCollector, error) {
	nc, err := broker.ConnectOnce(url, "pixctl demo")
	if err != nil {
		return nil, unavailable(err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("jetstream: %w", err)
	}
	since := time.Now()
	ctx, cancel := context.WithCancel(ctx)
	c := &eventCollector{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := c.consume(ctx, js, since); err != nil && ctx.Err() == nil {
			c.mu.Lock()
			c.err = fmt.Errorf("the demo consumes the events from NATS at %s (NATS_URL): %w", url, err)
			c.mu.Unlock()
		}
	}()
	c.stop = func() { cancel(); <-done; nc.Close() }
	return c, nil
}

// failure is why no event can arrive, if the consumer could not be made.
func (c *eventCollector) failure() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// consume collects the stream's events published since, until ctx ends.
func (c *eventCollector) consume(ctx context.Context, js jetstream.JetStream, since time.Time) error {
	stream, err := waitForStream(ctx, js, 200*time.Millisecond, io.Discard)
	if err != nil {
		return err
	}
	cons, err := stream.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverByStartTimePolicy, OptStartTime: &since})
	if err != nil {
		return err
	}
	cc, err := cons.Consume(func(m jetstream.Msg) {
		var e broker.Envelope
		if json.Unmarshal(m.Data(), &e) == nil {
			c.mu.Lock()
			c.events = append(c.events, e)
			c.mu.Unlock()
		}
	})
	if err != nil {
		return fmt.Errorf("consume %s: %w", broker.StreamName, err)
	}
	<-ctx.Done()
	cc.Stop()
	return nil
}

// of returns the collected events of the given aggregates, waiting up to
// within for want of them.
func (c *eventCollector) of(ctx context.Context, aggregates map[string]bool, want int, within time.Duration) []broker.Envelope {
	var out []broker.Envelope
	_ = pollUntil(ctx, within, 200*time.Millisecond, "events", func() (int, error) {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.err != nil {
			return 0, c.err
		}
		out = out[:0]
		for _, e := range c.events {
			if aggregates[e.AggregateID] {
				out = append(out, e)
			}
		}
		return max(0, want-len(out)), nil
	})
	return out
}

// waitForStream opens the event stream, waiting (polling every) while it
// does not exist yet: pixctl never creates it. The worker's outbox relay
// does, with the limits the service is configured with, at its first
// event; a stream a reader made would carry default limits that the
// service then silently changes. The wait is said once on errOut.
func waitForStream(ctx context.Context, js jetstream.JetStream, every time.Duration, errOut io.Writer) (jetstream.Stream, error) {
	said := false
	for {
		s, err := broker.OpenStream(ctx, js)
		if !errors.Is(err, jetstream.ErrStreamNotFound) {
			return s, err
		}
		if !said {
			fmt.Fprintf(errOut, "pixctl: no stream %s yet: waiting for the worker's outbox relay to create it (at its first event)\n", broker.StreamName)
			said = true
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(every):
		}
	}
}
