package durable_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/pixbank/pix/internal/durable"
)

// memQueue is an in-memory durable.Queue: due rows to claim, and what the
// dispatcher recorded of them.
type memQueue struct {
	mu       sync.Mutex
	due      []durable.Due
	marked   map[string]time.Duration // the recheck's After
	deferred map[string]time.Duration
	// rechecks is every Recheck the dispatcher asked for, began the rows
	// it recorded as starts that began a run.
	rechecks []durable.Recheck
	began    []string
}

func (q *memQueue) Channel() string { return "test" }

func (q *memQueue) Claim(_ context.Context, limit int, _ time.Duration) ([]durable.Due, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := min(limit, len(q.due))
	claimed := q.due[:n]
	q.due = q.due[n:]
	return claimed, nil
}

func (q *memQueue) MarkDispatched(_ context.Context, started, open []durable.Due, recheck durable.Recheck) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.rechecks = append(q.rechecks, recheck)
	for _, d := range started {
		q.marked[d.Key] = recheck.After
		q.began = append(q.began, d.Key)
	}
	for _, d := range open {
		q.marked[d.Key] = recheck.After
	}
	return nil
}

func (q *memQueue) DeferDispatch(_ context.Context, claimed []durable.Due, delay time.Duration) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, d := range claimed {
		q.deferred[d.Key] = delay
	}
	return nil
}

// countingObserver counts the starts' outcomes and the lags observed.
type countingObserver struct {
	mu     sync.Mutex
	starts map[string]int
	lags   int
}

func (o *countingObserver) DispatchLag(string, time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.lags++
}

func (o *countingObserver) DispatchStarted(kind, outcome string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.starts[kind+"/"+outcome]++
}

type noListener struct{}

func (noListener) KeepListening(ctx context.Context, _ string, _ func(), _, _ time.Duration, _ func(error, time.Duration)) {
	<-ctx.Done()
}

// The outcome of each start decides what is recorded of its row: started
// or found running (recheck later), failed (due again after the backoff),
// or an older run still closing (due again after a poll interval at first).
func TestDispatchOnceRecordsEachStartsOutcome(t *testing.T) {
	q := &memQueue{
		due: []durable.Due{
			{Key: "new"}, {Key: "running", Dispatched: true}, {Key: "lost", Dispatched: true}, {Key: "closing"}, {Key: "failing"},
		},
		marked: map[string]time.Duration{}, deferred: map[string]time.Duration{},
	}
	src := durable.Source{
		Kind:  "test",
		Queue: q,
		Start: func(_ context.Context, _ client.Client, d durable.Due) (bool, error) {
			switch d.Key {
			case "new", "lost": // lost: its run ended without its row
				return true, nil
			case "failing":
				return false, errors.New("temporal unavailable")
			}
			return false, nil // a run is open
		},
		LogAttrs: func(d durable.Due) []any { return []any{"key", d.Key} },
		Redrives: true,
	}
	observer := &countingObserver{starts: map[string]int{}}
	opts := durable.Options{PollInterval: 100 * time.Millisecond, BatchSize: 10, Concurrency: 2, RecheckAfter: time.Minute, RecheckMax: 8 * time.Minute,
		RetryMaxDelay: time.Second, Metrics: observer}
	d := durable.New(noListener{}, src, nil, opts, slog.New(slog.NewJSONHandler(io.Discard, nil)))

	n, err := d.DispatchOnce(context.Background())
	require.NoError(t, err)
	require.Equal(t, 5, n)
	require.Equal(t, map[string]time.Duration{"new": time.Minute, "running": time.Minute, "lost": time.Minute}, q.marked)
	require.Equal(t, []durable.Recheck{{After: time.Minute, Max: 8 * time.Minute}}, q.rechecks, "one record of the round's started rows")
	require.ElementsMatch(t, []string{"new", "lost"}, q.began, "the starts that began a run; the open run is rechecked by its age")
	require.Equal(t, map[string]time.Duration{"closing": 100 * time.Millisecond, "failing": 100 * time.Millisecond}, q.deferred)
	// Every start is counted by its outcome; the lag only for a first start.
	require.Equal(t, map[string]int{"test/" + durable.StartedNew: 1, "test/" + durable.StartedAgain: 1, "test/" + durable.StartedOpen: 1,
		"test/" + durable.StartedClosing: 1, "test/" + durable.StartFailed: 1}, observer.starts)
	require.Equal(t, 1, observer.lags)

	// A second failing round backs off further.
	q.due = []durable.Due{{Key: "failing"}}
	_, err = d.DispatchOnce(context.Background())
	require.NoError(t, err)
	require.Equal(t, 200*time.Millisecond, q.deferred["failing"])
}

func TestRunStopsWithItsContext(t *testing.T) {
	q := &memQueue{marked: map[string]time.Duration{}, deferred: map[string]time.Duration{}}
	src := durable.Source{Kind: "test", Queue: q, LogAttrs: func(durable.Due) []any { return nil },
		Start: func(context.Context, client.Client, durable.Due) (bool, error) { return true, nil }}
	d := durable.New(noListener{}, src, nil, durable.Options{PollInterval: 10 * time.Millisecond, BatchSize: 1, Concurrency: 1, RetryMaxDelay: time.Second},
		slog.New(slog.NewJSONHandler(io.Discard, nil)))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	q.mu.Lock()
	q.due = []durable.Due{{Key: "a"}}
	q.mu.Unlock()
	d.Kick()
	require.Eventually(t, func() bool {
		q.mu.Lock()
		defer q.mu.Unlock()
		_, ok := q.marked["a"]
		return ok
	}, 5*time.Second, 5*time.Millisecond)
	cancel()
	require.NoError(t, <-done)
}

// Without re-drives, an open run the row did not record starting is its
// own (the start's answer, or its record, was lost): running, rechecked
// later, not retried every poll interval.
func TestOpenRunOfASourceWithoutRedrivesIsRunning(t *testing.T) {
	q := &memQueue{due: []durable.Due{{Key: "lost-record"}}, marked: map[string]time.Duration{}, deferred: map[string]time.Duration{}}
	src := durable.Source{Kind: "test", Queue: q, LogAttrs: func(durable.Due) []any { return nil },
		Start: func(context.Context, client.Client, durable.Due) (bool, error) { return false, nil }}
	d := durable.New(noListener{}, src, nil, durable.Options{PollInterval: 100 * time.Millisecond, BatchSize: 1, Concurrency: 1,
		RecheckAfter: time.Minute, RetryMaxDelay: time.Second}, slog.New(slog.NewJSONHandler(io.Discard, nil)))
	_, err := d.DispatchOnce(context.Background())
	require.NoError(t, err)
	require.Equal(t, map[string]time.Duration{"lost-record": time.Minute}, q.marked)
	require.Empty(t, q.deferred)
}

// A run that is open although the row's drive has no record of starting it
// is tried again after the poll interval, then after twice as long at each
// claim that finds it so, up to 15 s: a re-drive's closing run is waited
// for briefly, but a row whose start's record was lost (its own run open
// for as long as its saga runs) is not started again every poll interval.
// Another outcome starts it over.
func TestARunStillClosingIsTriedLessAndLessOften(t *testing.T) {
	q := &memQueue{marked: map[string]time.Duration{}, deferred: map[string]time.Duration{}}
	isNew := false
	src := durable.Source{Kind: "test", Queue: q, Redrives: true, LogAttrs: func(durable.Due) []any { return nil },
		Start: func(context.Context, client.Client, durable.Due) (bool, error) { return isNew, nil }}
	d := durable.New(noListener{}, src, nil, durable.Options{PollInterval: 100 * time.Millisecond, BatchSize: 10, Concurrency: 1,
		RecheckAfter: time.Minute, RecheckMax: time.Minute, RetryMaxDelay: time.Second}, slog.New(slog.NewJSONHandler(io.Discard, nil)))
	claim := func(key string) time.Duration {
		t.Helper()
		q.due = []durable.Due{{Key: key, Drive: 2}}
		delete(q.deferred, key)
		_, err := d.DispatchOnce(context.Background())
		require.NoError(t, err)
		return q.deferred[key]
	}
	var delays []time.Duration
	for range 10 {
		delays = append(delays, claim("lost-record"))
	}
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	require.Equal(t, []time.Duration{ms(100), ms(200), ms(400), ms(800), ms(1600), ms(3200), ms(6400), ms(12800), 15 * time.Second, 15 * time.Second}, delays)
	require.Equal(t, 100*time.Millisecond, claim("another"), "each row counts its own")

	isNew = true // the old run closed: the re-drive's run began
	claim("lost-record")
	require.Contains(t, q.marked, "lost-record")
	isNew = false
	require.Equal(t, 100*time.Millisecond, claim("lost-record"), "a row claimed with another outcome starts over")
}
