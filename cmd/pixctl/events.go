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
	cons, err := newEventConsumer(ctx, nc, all)
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
// only, or all of them.
func newEventConsumer(ctx context.Context, nc *nats.Conn, all bool) (jetstream.Consumer, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("jetstream: %w", err)
	}
	stream, err := broker.OpenStream(ctx, js)
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
	stop   func()
}

// collectEvents starts consuming new events from the broker at url.
func collectEvents(ctx context.Context, url string) (*eventCollector, error) {
	nc, err := broker.ConnectOnce(url, "pixctl demo")
	if err != nil {
		return nil, unavailable(err)
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cons, err := newEventConsumer(ctx, nc, false)
	if err != nil {
		nc.Close()
		return nil, unavailable(fmt.Errorf("the demo consumes the events from NATS at %s (NATS_URL): %w", url, err))
	}
	c := &eventCollector{}
	cc, err := cons.Consume(func(m jetstream.Msg) {
		var e broker.Envelope
		if json.Unmarshal(m.Data(), &e) == nil {
			c.mu.Lock()
			c.events = append(c.events, e)
			c.mu.Unlock()
		}
	})
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("consume %s: %w", broker.StreamName, err)
	}
	c.stop = func() { cc.Stop(); nc.Close() }
	return c, nil
}

// of returns the collected events of the given aggregates, waiting up to
// within for want of them.
func (c *eventCollector) of(ctx context.Context, aggregates map[string]bool, want int, within time.Duration) []broker.Envelope {
	var out []broker.Envelope
	_ = pollUntil(ctx, within, 200*time.Millisecond, "events", func() (int, error) {
		c.mu.Lock()
		defer c.mu.Unlock()
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
