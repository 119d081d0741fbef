package db

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pixbank/pix/internal/logging"
)

// The one way the service wakes whoever waits on committed work, in any
// process: after a transaction that made rows due (a PIX received, a
// transfer or a refund debited, a re-drive, a PSP notice) or wrote outbox
// events commits, the store names the channels it made work for
// (Store.Wake); the store's waker (RunWaker, run by every process that
// writes) sends one NOTIFY per channel, coalescing the wakes of a busy
// moment into at most one per channel every wakeEvery. The dispatchers and
// the outbox relays LISTEN on their channel (KeepListening) and also poll:
// a wake lost with its process, between the commit and the NOTIFY, costs
// one poll interval, never a PIX. Nothing waits for a wake: a webhook is
// answered once its row is committed.

// wakeEvery is the least time between two notifications on one channel:
// the first wake after a quiet spell is sent at once (idle latency), a
// stream of wakes becomes one notification per interval (PostgreSQL's
// work at high ingest).
const wakeEvery = 5 * time.Millisecond

// waker holds the channels woken and not yet notified.
type waker struct {
	mu      sync.Mutex
	pending map[string]bool
	kick    chan struct{}
}

func newWaker() *waker { return &waker{pending: map[string]bool{}, kick: make(chan struct{}, 1)} }

// Wake asks for a notification on each channel, to be called after the
// transaction that made work for the channels' listeners committed (never
// before: a listener woken early finds nothing and sleeps until its next
// poll). A saga's own store calls it with its queue's Channel (and
// OutboxChannel when it wrote events), as the Store's methods do. It never
// blocks, and a wake is no promise: wakes are coalesced (at most one
// notification per channel every wakeEvery), sent only while a waker runs
// (RunWaker), and lost with the process; the listeners also poll. Without a
// running waker it only remembers the channels (a set: bounded).
func (s *Store) Wake(channels ...string) {
	w := s.waker
	w.mu.Lock()
	for _, c := range channels {
		w.pending[c] = true
	}
	w.mu.Unlock()
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// take empties the pending set, in a stable order.
func (w *waker) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]string, 0, len(w.pending))
	for c := range w.pending {
		out = append(out, c)
	}
	clear(w.pending)
	slices.Sort(out)
	return out
}

// RunWaker sends the notifications the store's commits asked for, until
// ctx ends. A failed notification is logged (once per outage): the
// waiters poll meanwhile.
func (s *Store) RunWaker(ctx context.Context, log *slog.Logger) error {
	w := s.waker
	var last time.Time
	var outage logging.Outage
	for {
		select {
		case <-ctx.Done():
			s.flushWakes(ctx, log)
			return nil
		case <-w.kick:
		}
		if wait := time.Until(last.Add(wakeEvery)); wait > 0 {
			select {
			case <-ctx.Done():
				s.flushWakes(ctx, log)
				return nil
			case <-time.After(wait):
			}
		}
		last = time.Now()
		// Taken wakes are sent even if ctx ends meanwhile (bounded): they
		// are no longer pending for the flush on the way out.
		notifyCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		for _, channel := range w.take() {
			if err := s.notify(notifyCtx, channel); err != nil {
				outage.Failed(log, "could not wake the waiters; they poll", err)
				continue
			}
			outage.Succeeded(log, "wakes are sent again")
		}
		cancel()
	}
}

// NotifyDue wakes the dispatchers listening on DueChannel at once.
func (s *Store) NotifyDue(ctx context.Context) error { return s.notify(ctx, DueChannel) }

// flushWakes sends, on the way out, what is still pending: a wake asked by
// a commit just before the end is not dropped with the process.
func (s *Store) flushWakes(ctx context.Context, log *slog.Logger) {
	flushCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	for _, channel := range s.waker.take() {
		if err := s.notify(flushCtx, channel); err != nil {
			log.Warn("could not wake the waiters on the way out; they poll", "channel", channel, "error", err)
		}
	}
}

// notify sends one notification on channel.
func (s *Store) notify(ctx context.Context, channel string) error {
	if _, err := s.pool.Exec(ctx, `SELECT pg_notify($1, '')`, channel); err != nil {
		return Classify(fmt.Errorf("notify %s: %w", channel, err))
	}
	return nil
}

// KeepListening calls wake for every notification on channel until ctx
// ends, reconnecting while PostgreSQL is away: after a wait from minDelay,
// doubling up to maxDelay, and from minDelay again once a connection had
// lasted longer than maxDelay. After each reconnection it calls wake, since
// what was notified meanwhile is lost. lost hears of each lost connection
// and of the wait before the next try.
func (s *Store) KeepListening(ctx context.Context, channel string, wake func(), minDelay, maxDelay time.Duration, lost func(err error, retryIn time.Duration)) {
	delay := minDelay
	for ctx.Err() == nil {
		began := time.Now()
		err := s.Listen(ctx, channel, wake)
		if ctx.Err() != nil {
			return
		}
		if time.Since(began) > maxDelay {
			delay = minDelay // it had been listening fine
		}
		lost(err, delay)
		select {
		case <-ctx.Done():
			return
		case <-time.After(delay):
		}
		delay = min(2*delay, maxDelay)
		wake()
	}
}

// Listen holds one connection listening on channel and calls wake for every
// notification, until ctx ends or the connection fails.
func (s *Store) Listen(ctx context.Context, channel string, wake func()) error {
	pooled, err := s.pool.Acquire(ctx)
	if err != nil {
		return Classify(fmt.Errorf("listen: acquire: %w", err))
	}
	// The connection carries a LISTEN: it never goes back to the pool.
	conn := pooled.Hijack()
	defer conn.Close(context.WithoutCancel(ctx)) //nolint:errcheck // closing a listener on the way out
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{channel}.Sanitize()); err != nil {
		return Classify(fmt.Errorf("listen: %w", err))
	}
	for {
		if _, err := conn.WaitForNotification(ctx); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return Classify(fmt.Errorf("listen: wait: %w", err))
		}
		wake()
	}
}
