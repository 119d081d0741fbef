package durable

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"go.temporal.io/sdk/client"
	"golang.org/x/sync/errgroup"

	"github.com/pixbank/pix/internal/logging"
	"github.com/pixbank/pix/internal/tracing"
)

// Listener keeps a LISTEN on a notification channel (db.Store).
type Listener interface {
	KeepListening(ctx context.Context, channel string, wake func(), minDelay, maxDelay time.Duration, lost func(err error, retryIn time.Duration))
}

// Observer observes the dispatcher's work: the time from a row's commit to
// its workflow's first start, and the outcome of every start it issues.
type Observer interface {
	DispatchLag(kind string, lag time.Duration)
	// DispatchStarted counts one start of a row of kind by its outcome
	// (StartedNew, StartedAgain, StartedOpen, StartedClosing, StartFailed).
	DispatchStarted(kind, outcome string)
}

// The outcomes of a workflow start, as an Observer counts them.
const (
	// StartedNew: a row's first run (of its drive) began.
	StartedNew = "new"
	// StartedAgain: a recheck found the row's run gone (ended without its
	// row: lost, terminated, given up) and a new run began.
	StartedAgain = "restarted"
	// StartedOpen: the row's run was open already (a recheck, or a
	// second dispatcher's start): nothing changed.
	StartedOpen = "open"
	// StartedClosing: a run was open that the row's drive has no record of
	// starting (the run of an earlier drive still closing, or a start whose
	// record was lost); the start is tried again after the poll interval,
	// then less and less often, up to every 15 s (closingDelays).
	StartedClosing = "closing"
	// StartFailed: the start failed; the row is retried after a backoff.
	StartFailed = "failed"
)

// Options tune a Dispatcher.
type Options struct {
	// PollInterval is how often it looks for due rows without a kick.
	PollInterval time.Duration
	// BatchSize is how many rows one claim takes.
	BatchSize int
	// Concurrency is how many workflow starts run at once.
	Concurrency int
	// ClaimLease is how long a claimed row is hidden from other dispatchers
	// while this one starts its workflow; if this one dies, the row comes
	// due again after it.
	ClaimLease time.Duration
	// RecheckAfter is how long a started row waits before its start is
	// issued again (a no-op while the run is open); each later recheck
	// of the same run waits as long as the run has been open, up to
	// RecheckMax (Recheck).
	RecheckAfter, RecheckMax time.Duration
	// RetryMaxDelay caps the backoff after failed starts.
	RetryMaxDelay time.Duration
	// StartTimeout bounds one workflow start.
	StartTimeout time.Duration
	// Metrics observes the dispatch lag and the starts' outcomes
	// (*metrics.Worker); nil observes nothing.
	Metrics Observer
}

// Dispatcher starts the workflows of a Source's due rows.
type Dispatcher struct {
	listener Listener
	src      Source
	client   client.Client
	opts     Options
	log      *slog.Logger
	kick     chan struct{}

	mu       sync.Mutex
	failures int // consecutive rounds with a failed start, for backoff
	// closings counts, per row and drive, the consecutive claims that found
	// an open run the row has no record of starting (see closingDelays).
	closings map[closingKey]closingCount
}

type closingKey struct {
	key   string
	drive int
}

type closingCount struct {
	n    int
	last time.Time
}

// New returns a Dispatcher of src's rows; Run drives it.
func New(l Listener, src Source, c client.Client, opts Options, log *slog.Logger) *Dispatcher {
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = 5 * time.Second
	}
	if opts.ClaimLease <= 0 {
		opts.ClaimLease = 15 * time.Second
	}
	return &Dispatcher{listener: l, src: src, client: c, opts: opts, log: log.With("dispatching", src.Kind), kick: make(chan struct{}, 1),
		closings: map[closingKey]closingCount{}}
}

// Kind is what the dispatcher dispatches: its Source's Kind.
func (d *Dispatcher) Kind() string { return d.src.Kind }

// Kick asks for a dispatch round now. It never blocks.
func (d *Dispatcher) Kick() {
	select {
	case d.kick <- struct{}{}:
	default:
	}
}

// Run dispatches until ctx is done. It wakes on every notification on the
// source's channel (sent after a commit that made rows due), on Kick, and
// every poll interval: a notification can be lost, a poll can't.
func (d *Dispatcher) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() { d.listen(ctx) })
	ticker := time.NewTicker(d.opts.PollInterval)
	defer ticker.Stop()
	// Once when it starts failing, then every 10 s: the poll would
	// otherwise log twice a second through an outage.
	var outage logging.Outage
	for {
		// Drain every due row before waiting again.
		for {
			n, err := d.DispatchOnce(ctx)
			if ctx.Err() != nil {
				return nil
			}
			if err != nil {
				outage.Failed(d.log, "dispatch round failed; retrying", err)
				break
			}
			outage.Succeeded(d.log, "dispatch rounds succeed again")
			if n < d.opts.BatchSize {
				break
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-d.kick:
		case <-ticker.C:
		}
	}
}

// listen keeps a LISTEN connection that kicks the dispatcher, reconnecting
// with backoff while PostgreSQL is away, until ctx ends.
func (d *Dispatcher) listen(ctx context.Context) {
	d.listener.KeepListening(ctx, d.src.Queue.Channel(), d.Kick, d.opts.PollInterval, d.opts.RetryMaxDelay, func(err error, retryIn time.Duration) {
		d.log.Warn("dispatch listener lost; polling meanwhile", "error", err, "retry_in", retryIn.String())
	})
}

// DispatchOnce claims one batch of due rows and starts their workflows. It
// returns how many rows it claimed.
func (d *Dispatcher) DispatchOnce(ctx context.Context) (int, error) {
	due, err := d.src.Queue.Claim(ctx, d.opts.BatchSize, d.opts.ClaimLease)
	if err != nil || len(due) == 0 {
		return 0, err
	}
	var (
		mu      sync.Mutex
		started []Due // a run began now
		open    []Due // its run (of this drive) was open already
		failed  []Due
		closing []Due
	)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(d.opts.Concurrency)
	for _, m := range due {
		g.Go(func() error {
			// The start continues the trace the row was created in (its
			// request's): the workflow, its activities and its events are
			// that trace's too.
			startCtx, cancel := context.WithTimeout(tracing.WithTraceparent(gctx, m.Traceparent), d.opts.StartTimeout)
			defer cancel()
			isNew, err := d.src.Start(startCtx, d.client, m)
			log := d.log.With(d.src.LogAttrs(m)...)
			mu.Lock()
			defer mu.Unlock()
			var outcome string
			switch {
			case err != nil:
				outcome, failed = StartFailed, append(failed, m)
				log.WarnContext(startCtx, "workflow start failed; will retry", "error", err)
			case isNew:
				outcome, started = StartedNew, append(started, m)
				if m.Dispatched {
					outcome = StartedAgain
				}
				if m.FirstStart() && d.opts.Metrics != nil {
					d.opts.Metrics.DispatchLag(d.src.Kind, time.Since(m.Since))
				}
				log.DebugContext(startCtx, "workflow started")
			case !m.Dispatched && d.src.Redrives:
				// A run is open although this drive started none: the run
				// of an earlier drive (a failed one, re-driven) is still
				// closing, or this drive's start lost its record. Try again
				// soon rather than at the recheck (closingDelays logs it).
				outcome, closing = StartedClosing, append(closing, m)
			default:
				outcome, open = StartedOpen, append(open, m)
				log.DebugContext(startCtx, "workflow run still open")
			}
			if d.opts.Metrics != nil {
				d.opts.Metrics.DispatchStarted(d.src.Kind, outcome)
			}
			return nil
		})
	}
	_ = g.Wait() // the goroutines report through started, open, failed and closing

	// Bookkeeping survives the caller's cancellation: a start that happened
	// is recorded even while shutting down.
	bookCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	var errs []error
	if len(started) > 0 || len(open) > 0 {
		errs = append(errs, d.src.Queue.MarkDispatched(bookCtx, started, open, Recheck{After: d.opts.RecheckAfter, Max: d.opts.RecheckMax}))
	}
	if len(failed) > 0 {
		errs = append(errs, d.src.Queue.DeferDispatch(bookCtx, failed, d.backoff(true)))
	} else {
		d.backoff(false)
	}
	for delay, rows := range d.closingDelays(bookCtx, due, closing) {
		errs = append(errs, d.src.Queue.DeferDispatch(bookCtx, rows, delay))
	}
	return len(due), errors.Join(errs...)
}

// closingMaxDelay caps the delay between two tries of a run still closing:
// a re-drive waits at most this long after its old run closed (a failed
// run usually closes in milliseconds, in about 30 s when its last
// activity's answer was lost), well within the waiting-credits alert.
const closingMaxDelay = 15 * time.Second

// closingDelays groups the round's closing rows by the delay before their
// next try: the poll interval at first, doubling with each consecutive
// claim that finds them closing, up to closingMaxDelay (or RecheckAfter,
// if shorter). A run that is the row's own but whose start's record was
// lost stays open for as long as its saga runs: it is then tried every
// 15 s, not every poll interval. A row claimed with another outcome starts
// over; counts of rows not seen for twice RecheckAfter (ended meanwhile)
// are dropped. The counts are this process's: another dispatcher sharing
// the rows, or a restart, counts from the start (more tries, never fewer).
func (d *Dispatcher) closingDelays(ctx context.Context, due, closing []Due) map[time.Duration][]Due {
	d.mu.Lock()
	defer d.mu.Unlock()
	now := time.Now()
	stillClosing := make(map[closingKey]bool, len(closing))
	for _, m := range closing {
		stillClosing[closingKey{m.Key, m.Drive}] = true
	}
	for _, m := range due {
		if k := (closingKey{m.Key, m.Drive}); !stillClosing[k] {
			delete(d.closings, k)
		}
	}
	for k, c := range d.closings {
		if now.Sub(c.last) > 2*d.opts.RecheckAfter {
			delete(d.closings, k)
		}
	}
	limit := min(closingMaxDelay, d.opts.RecheckAfter)
	byDelay := map[time.Duration][]Due{}
	for _, m := range closing {
		k := closingKey{m.Key, m.Drive}
		c := d.closings[k]
		c.n, c.last = c.n+1, now
		d.closings[k] = c
		delay := max(doubled(d.opts.PollInterval, c.n, limit), d.opts.PollInterval)
		byDelay[delay] = append(byDelay[delay], m)
		logCtx := tracing.WithTraceparent(ctx, m.Traceparent)
		log := d.log.With(d.src.LogAttrs(m)...).With("retry_in", delay.String(), "tries", c.n)
		if delay < limit {
			log.InfoContext(logCtx, "a workflow run is open that this drive has no record of starting (an earlier drive's still closing, or a lost record); will start again")
		} else {
			log.WarnContext(logCtx, "a workflow run this drive has no record of starting stays open; trying again every retry_in")
		}
	}
	return byDelay
}

// backoff returns the delay before rows whose start failed come due again:
// doubling with each consecutive failing round, from the poll interval up to
// RetryMaxDelay. A round without failures resets it.
func (d *Dispatcher) backoff(failed bool) time.Duration {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !failed {
		d.failures = 0
		return 0
	}
	d.failures++
	return doubled(d.opts.PollInterval, d.failures, d.opts.RetryMaxDelay)
}

// doubled is base doubled once for each of the n-1 times before the nth,
// at most limit.
func doubled(base time.Duration, n int, limit time.Duration) time.Duration {
	delay := base
	for i := 1; i < n && delay < limit; i++ {
		delay *= 2
	}
	return min(delay, limit)
}
