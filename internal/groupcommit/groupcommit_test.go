package groupcommit_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/internal/groupcommit"
)

// call is a test's call: its rows, and the group it was written in.
type call struct {
	id, rows int
	group    int // the group's number, set by the write
	answer   string
}

// recorder is a write function that records its groups; gate, when set,
// holds each write until the test releases it.
type recorder struct {
	mu     sync.Mutex
	groups [][]int // call ids of each group, in the order written
	gate   chan struct{}
	// started is told each write's start.
	started chan int
}

func (r *recorder) write(_ context.Context, _ int, calls []*call) {
	r.mu.Lock()
	n := len(r.groups)
	ids := make([]int, len(calls))
	for i, c := range calls {
		ids[i] = c.id
		c.group, c.answer = n, "written"
	}
	r.groups = append(r.groups, ids)
	r.mu.Unlock()
	if r.started != nil {
		r.started <- n
	}
	if r.gate != nil {
		<-r.gate
	}
}

func (r *recorder) snapshot() [][]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([][]int(nil), r.groups...)
}

func start(t *testing.T, opts groupcommit.Options, r *recorder) *groupcommit.Committer[*call] {
	t.Helper()
	g, err := groupcommit.New(opts, r.write)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- g.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	return g
}

func options() groupcommit.Options {
	return groupcommit.Options{Writers: 1, MaxRows: 8, QueueRows: 64, WriteTimeout: 5 * time.Second}
}

// A lone call goes straight through: written at once, alone, whatever the
// window.
func TestALoneCallIsWrittenAlone(t *testing.T) {
	opts := options()
	opts.Window = time.Hour // would be felt if a lone call waited for it
	r := &recorder{}
	g := start(t, opts, r)
	for i := range 3 {
		c := &call{id: i, rows: 1}
		require.NoError(t, g.Do(context.Background(), c, 1))
		require.Equal(t, "written", c.answer)
	}
	require.Equal(t, [][]int{{0}, {1}, {2}}, r.snapshot())
}

// While the writer is busy, calls queue up; the next group takes every
// one of them, in arrival order, up to MaxRows rows; a call that would
// overflow the group leads the next one.
func TestQueuedCallsShareAGroup(t *testing.T) {
	opts := options()
	opts.MaxRows = 4
	r := &recorder{gate: make(chan struct{}), started: make(chan int, 16)}
	g := start(t, opts, r)

	var wg sync.WaitGroup
	answered := make([]*call, 6)
	do := func(c *call) {
		wg.Go(func() { require.NoError(t, g.Do(context.Background(), c, c.rows)) })
	}
	answered[0] = &call{id: 0, rows: 1}
	do(answered[0])
	require.Equal(t, 0, <-r.started) // the writer holds call 0's group
	// Queued behind it, one at a time so that their order is known:
	// 1 (1 row), 2 (2 rows), 3 (2 rows: 1+2+2 > 4, it leads the next
	// group), 4 (1 row), 5 (3 rows: 2+1+3 > 4).
	rows := []int{0, 1, 2, 2, 1, 3}
	for i := 1; i < 6; i++ {
		answered[i] = &call{id: i, rows: rows[i]}
		do(answered[i])
		require.Eventually(t, func() bool { return queuedLen(g) == i }, 5*time.Second, time.Millisecond)
	}
	for range 4 {
		r.gate <- struct{}{}
	}
	wg.Wait()
	require.Equal(t, [][]int{{0}, {1, 2}, {3, 4}, {5}}, r.snapshot())
	for _, c := range answered {
		require.Equal(t, "written", c.answer, "call %d", c.id)
	}
}

// queuedLen is how many calls wait in g's queue (test-only view).
func queuedLen(g *groupcommit.Committer[*call]) int { return groupcommit.QueueLen(g) }

// With a window, a writer that found company waits for more, up to
// MaxRows.
func TestAWindowFillsAGroupThatFoundCompany(t *testing.T) {
	opts := options()
	opts.Window = 5 * time.Second // MaxRows, reached at once, ends the wait
	opts.MaxRows = 3
	r := &recorder{gate: make(chan struct{}), started: make(chan int, 16)}
	g := start(t, opts, r)
	var wg sync.WaitGroup
	do := func(id int) {
		wg.Go(func() { require.NoError(t, g.Do(context.Background(), &call{id: id, rows: 1}, 1)) })
	}
	do(0)
	require.Equal(t, 0, <-r.started)
	do(1)
	require.Eventually(t, func() bool { return queuedLen(g) == 1 }, 5*time.Second, time.Millisecond)
	do(2)
	require.Eventually(t, func() bool { return queuedLen(g) == 2 }, 5*time.Second, time.Millisecond)
	r.gate <- struct{}{} // group 0 done: the writer finds 1 and 2, and waits for a third
	// Call 3 arrives within the window: the group is full at three rows.
	do(3)
	require.Equal(t, 1, <-r.started)
	r.gate <- struct{}{}
	wg.Wait()
	require.Equal(t, [][]int{{0}, {1, 2, 3}}, r.snapshot())
}

// A full queue sheds at once, writing nothing of the call. A call is
// admitted while the queue has any room, whatever its size (a big call is
// never starved by small ones), so the queue holds at most QueueRows plus
// one call's rows.
func TestAFullQueueSheds(t *testing.T) {
	opts := options()
	opts.QueueRows, opts.MaxRows = 3, 3
	r := &recorder{gate: make(chan struct{}), started: make(chan int, 16)}
	g := start(t, opts, r)
	var wg sync.WaitGroup
	wg.Go(func() { require.NoError(t, g.Do(context.Background(), &call{id: 0, rows: 1}, 1)) })
	require.Equal(t, 0, <-r.started) // the writer holds call 0
	wg.Go(func() { require.NoError(t, g.Do(context.Background(), &call{id: 1, rows: 2}, 2)) })
	require.Eventually(t, func() bool { return g.Queued() == 2 }, 5*time.Second, time.Millisecond)
	// 2 rows queued, room for 1: a call of 5 rows is admitted all the same.
	wg.Go(func() { require.NoError(t, g.Do(context.Background(), &call{id: 2, rows: 5}, 5)) })
	require.Eventually(t, func() bool { return g.Queued() == 7 }, 5*time.Second, time.Millisecond)
	shed := &call{id: 3, rows: 1}
	require.ErrorIs(t, g.Do(context.Background(), shed, 1), groupcommit.ErrQueueFull, "7 rows queued ≥ 3")
	require.Empty(t, shed.answer)
	for range 3 {
		r.gate <- struct{}{}
	}
	wg.Wait()
	require.Equal(t, [][]int{{0}, {1}, {2}}, r.snapshot(), "the 5-row call is a group of its own")
}

// A write that panics answers its calls ErrWriteFailed, is reported, and
// leaves the writer running.
func TestAWriteThatPanics(t *testing.T) {
	var recovered any
	opts := options()
	opts.OnPanic = func(r any) { recovered = r }
	g, err := groupcommit.New(opts, func(_ context.Context, _ int, calls []*call) {
		if calls[0].id == 0 {
			panic("boom")
		}
		calls[0].answer = "written"
	})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- g.Run(ctx) }()
	defer func() { cancel(); require.NoError(t, <-done) }()
	require.ErrorIs(t, g.Do(context.Background(), &call{id: 0, rows: 1}, 1), groupcommit.ErrWriteFailed)
	require.Equal(t, "boom", recovered)
	next := &call{id: 1, rows: 1}
	require.NoError(t, g.Do(context.Background(), next, 1))
	require.Equal(t, "written", next.answer)
}

// A call whose caller gives up while it is queued is never written; one a
// writer took is waited for, whatever the caller's context says, and
// answered the group's outcome.
func TestACallerThatGivesUp(t *testing.T) {
	r := &recorder{gate: make(chan struct{}), started: make(chan int, 16)}
	g := start(t, options(), r)

	taken := &call{id: 0, rows: 1}
	ctx0, cancel0 := context.WithCancel(context.Background())
	errs := make(chan error, 1)
	go func() { errs <- g.Do(ctx0, taken, 1) }()
	require.Equal(t, 0, <-r.started)
	cancel0() // taken already: Do waits for the write
	select {
	case err := <-errs:
		t.Fatalf("Do answered %v before its group was written", err)
	case <-time.After(50 * time.Millisecond):
	}

	queued := &call{id: 1, rows: 1}
	ctx1, cancel1 := context.WithCancel(context.Background())
	queuedErr := make(chan error, 1)
	go func() { queuedErr <- g.Do(ctx1, queued, 1) }()
	require.Eventually(t, func() bool { return queuedLen(g) == 1 }, 5*time.Second, time.Millisecond)
	cancel1()
	require.ErrorIs(t, <-queuedErr, context.Canceled)

	r.gate <- struct{}{}
	require.NoError(t, <-errs)
	require.Equal(t, "written", taken.answer)
	// The abandoned call is dropped: the next group is the next call's.
	next := &call{id: 2, rows: 1}
	go func() { r.gate <- struct{}{} }()
	require.NoError(t, g.Do(context.Background(), next, 1))
	require.Equal(t, [][]int{{0}, {2}}, r.snapshot())
	require.Empty(t, queued.answer)
}

// Calls still queued when Run stops are answered ErrStopped, unwritten.
func TestStopAnswersTheQueued(t *testing.T) {
	r := &recorder{gate: make(chan struct{}), started: make(chan int, 16)}
	g, err := groupcommit.New(options(), r.write)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- g.Run(ctx) }()

	first := make(chan error, 1)
	go func() { first <- g.Do(context.Background(), &call{id: 0, rows: 1}, 1) }()
	require.Equal(t, 0, <-r.started)
	second := make(chan error, 1)
	left := &call{id: 1, rows: 1}
	go func() { second <- g.Do(context.Background(), left, 1) }()
	require.Eventually(t, func() bool { return queuedLen(g) == 1 }, 5*time.Second, time.Millisecond)
	cancel()
	r.gate <- struct{}{} // the group being written finishes
	require.NoError(t, <-first)
	require.ErrorIs(t, <-second, groupcommit.ErrStopped)
	require.NoError(t, <-stopped)
	require.Empty(t, left.answer)
}

// Many callers at once, several writers: every call is written exactly
// once, no group exceeds MaxRows, and Observe sees every row.
func TestEveryCallIsWrittenOnce(t *testing.T) {
	opts := options()
	opts.Writers, opts.MaxRows, opts.QueueRows = 3, 5, 10_000
	var observed atomic.Int64
	opts.Observe = func(_, rows int) { observed.Add(int64(rows)) }
	r := &recorder{}
	g := start(t, opts, r)
	const callers = 2_000
	var wg sync.WaitGroup
	calls := make([]*call, callers)
	for i := range callers {
		calls[i] = &call{id: i, rows: 1 + i%3}
		wg.Go(func() { require.NoError(t, g.Do(context.Background(), calls[i], calls[i].rows)) })
	}
	wg.Wait()
	seen := map[int]int{}
	for _, group := range r.snapshot() {
		rows := 0
		for _, id := range group {
			seen[id]++
			rows += calls[id].rows
		}
		require.LessOrEqual(t, rows, opts.MaxRows)
	}
	require.Len(t, seen, callers)
	for id, n := range seen {
		require.Equal(t, 1, n, "call %d", id)
	}
	want := 0
	for _, c := range calls {
		want += c.rows
	}
	require.EqualValues(t, want, observed.Load())
}

func TestOptionsAreChecked(t *testing.T) {
	for _, opts := range []groupcommit.Options{
		{Writers: 0, MaxRows: 1, QueueRows: 1, WriteTimeout: time.Second},
		{Writers: 1, MaxRows: 0, QueueRows: 1, WriteTimeout: time.Second},
		{Writers: 1, MaxRows: 4, QueueRows: 3, WriteTimeout: time.Second},
		{Writers: 1, MaxRows: 1, QueueRows: 1, WriteTimeout: 0},
		{Writers: 1, MaxRows: 1, QueueRows: 1, WriteTimeout: time.Second, Window: -time.Millisecond},
	} {
		_, err := groupcommit.New(opts, func(context.Context, int, []*call) {})
		require.Error(t, err, "%+v", opts)
	}
	require.False(t, errors.Is(groupcommit.ErrQueueFull, groupcommit.ErrStopped))
}
