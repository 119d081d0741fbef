package outbox

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/internal/logging"
)

// Publish hands events to the broker and says which it acknowledged.
type Publish func(context.Context, []db.Event) ([]bool, error)

// Options tune a Relay.
type Options struct {
	// BatchSize is how many events one round takes.
	BatchSize int
	// PollInterval is how often it looks for events without a notification.
	PollInterval time.Duration
	// RetryMaxDelay caps the backoff while publishing fails.
	RetryMaxDelay time.Duration
	// GatherWindow is how long after a round that published events, or
	// that a notification started, a notification waits before the next
	// round (0: it never waits). Under a steady stream of credits the
	// events come one at a time, and a round per event is a transaction per
	// event; held for this window, the events committed meanwhile share one
	// round. A notification after a quiet period (no such round within the
	// window) is relayed at once. A round that published is also followed
	// by another one window later, notified or not: the claim takes only
	// each aggregate's earliest unpublished event, so an aggregate's next
	// event, committed before that one was published, is claimable only
	// now, and no notification will come for it.
	GatherWindow time.Duration
	// Channel is the notification channel the relay listens on
	// (db.OutboxChannel when empty; tests use channels of their own).
	Channel string
}

// Relay publishes the outbox's events.
type Relay struct {
	store   *db.Store
	publish Publish
	opts    Options
	log     *slog.Logger
	kick    chan struct{}
}

// New returns a Relay; Run drives it.
func New(store *db.Store, publish Publish, opts Options, log *slog.Logger) *Relay {
	if opts.BatchSize <= 0 {
		opts.BatchSize = 500
	}
	if opts.PollInterval <= 0 {
		opts.PollInterval = 500 * time.Millisecond
	}
	if opts.Channel == "" {
		opts.Channel = db.OutboxChannel
	}
	if opts.RetryMaxDelay < opts.PollInterval {
		opts.RetryMaxDelay = 10 * opts.PollInterval
	}
	return &Relay{store: store, publish: publish, opts: opts, log: log.With("role_part", "outbox_relay"), kick: make(chan struct{}, 1)}
}

// Kick asks for a round now. It never blocks.
func (r *Relay) Kick() {
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// Run relays until ctx ends.
func (r *Relay) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() { r.listen(ctx) })
	delay := r.opts.PollInterval
	var outage logging.Outage
	// gatherUntil is when the window after the last round that a
	// notification started, or that published, ends: a notification
	// before it waits until then. A notified round that found nothing
	// counts too: with several relays, each is notified of every event and
	// one of them takes it.
	var gatherUntil time.Time
	kicked := false
	for {
		failed := false
		published := 0
		for {
			n, err := r.RelayOnce(ctx)
			published += n
			if ctx.Err() != nil {
				return nil
			}
			if err != nil {
				failed = true
				outage.Failed(r.log, "outbox relay round failed; backing off", err, "published", n, "retry_in", delay.String())
				break
			}
			outage.Succeeded(r.log, "outbox relay publishes again")
			if n < r.opts.BatchSize {
				break
			}
		}
		if !failed && (kicked || published > 0) && r.opts.GatherWindow > 0 {
			gatherUntil = time.Now().Add(r.opts.GatherWindow)
		}
		wait := r.opts.PollInterval
		if failed {
			wait, delay = delay, min(2*delay, r.opts.RetryMaxDelay)
		} else {
			delay = r.opts.PollInterval
			if published > 0 && r.opts.GatherWindow > 0 {
				wait = r.opts.GatherWindow // the aggregates' next events
			}
		}
		kick := r.kick
		if failed {
			kick = nil // a notification must not cut the backoff short
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil
		case <-kick:
			kicked = true
			if !r.gather(ctx, gatherUntil) {
				timer.Stop()
				return nil
			}
		case <-timer.C:
			kicked = false
		}
		timer.Stop()
	}
}

// gather waits until until (at once if it has passed), so that the events
// committed meanwhile share the next round. It returns false if ctx ended.
func (r *Relay) gather(ctx context.Context, until time.Time) bool {
	wait := time.Until(until)
	if wait <= 0 {
		return true
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// RelayOnce publishes one batch and returns how many events were published.
func (r *Relay) RelayOnce(ctx context.Context) (int, error) {
	return r.store.RelayEvents(ctx, r.opts.BatchSize, r.publish)
}

// listen keeps a LISTEN connection that kicks the relay, reconnecting
// every RetryMaxDelay while PostgreSQL is away, until ctx ends.
func (r *Relay) listen(ctx context.Context) {
	r.store.KeepListening(ctx, r.opts.Channel, r.Kick, r.opts.RetryMaxDelay, r.opts.RetryMaxDelay, func(err error, retryIn time.Duration) {
		r.log.Warn("outbox listener lost; polling meanwhile", "error", err, "retry_in", retryIn.String())
	})
}
