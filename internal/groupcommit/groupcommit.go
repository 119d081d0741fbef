package groupcommit

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"
)

// ErrQueueFull is Do's answer when the queue already holds Options.QueueRows
// rows: the caller sheds the request (503 with Retry-After) rather than
// let the queue, and the memory behind it, grow.
var ErrQueueFull = errors.New("group commit: the queue is full")

// ErrStopped is Do's answer for a call still queued when Run stopped: it
// was never written.
var ErrStopped = errors.New("group commit: stopped")

// Options shape a Committer.
type Options struct {
	// Writers is how many groups are written at once, each on a connection
	// of its own: while all are busy, calls queue up and the next free
	// writer takes them together. At least 1.
	Writers int
	// MaxRows bounds a group's rows (a call of more rows is a group of its
	// own). At least 1.
	MaxRows int
	// Window is how long a writer that found other calls queued behind the
	// first waits for more before it writes, until MaxRows. 0: it writes
	// what it found. A lone call never waits: with no concurrency, a call
	// goes straight through.
	Window time.Duration
	// QueueRows bounds the rows waiting for a writer: beyond it, Do answers
	// ErrQueueFull at once.
	QueueRows int
	// WriteTimeout bounds one group's write, so that a hung database fails
	// the group's calls rather than holds them for ever.
	WriteTimeout time.Duration
	// Observe, if set, is told each group's size in calls and rows, after
	// it was written.
	Observe func(calls, rows int)
	// OnPanic, if set, is told what a write that panicked panicked with:
	// the group's calls are answered ErrWriteFailed and the writer goes on.
	OnPanic func(recovered any)
}

// ErrWriteFailed is Do's answer for a call whose group's write panicked:
// the write's outcome is unknown to the committer (the write function's
// own transaction decides whether anything committed).
var ErrWriteFailed = errors.New("group commit: the write failed")

// Committer writes concurrent calls' rows together: one transaction, one
// commit, for every call a writer finds queued. C is the call (a pointer:
// write fills in each call's answer).
type Committer[C any] struct {
	opts   Options
	write  func(ctx context.Context, writer int, calls []C)
	queue  chan *entry[C]
	queued atomic.Int64 // rows queued, not yet taken by a writer
}

// A call's life: queued, then taken by a writer (which then always
// finishes it: done is closed), or abandoned by its caller first (its
// context ended; no writer writes it).
const (
	stateQueued int32 = iota
	stateTaken
	stateAbandoned
)

type entry[C any] struct {
	call  C
	rows  int
	state atomic.Int32
	done  chan struct{}
	err   error // set before done is closed, when the call was not written
}

// New returns a Committer whose writers write with write: it must give
// each call of the group its answer (the group's failure too), and return
// only once the group committed or failed. writer is the writer's number,
// from 0 to Writers-1: one goroutine at a time writes with each (a
// connection of its own, say).
func New[C any](opts Options, write func(ctx context.Context, writer int, calls []C)) (*Committer[C], error) {
	switch {
	case opts.Writers < 1:
		return nil, fmt.Errorf("group commit: %d writers, want at least 1", opts.Writers)
	case opts.MaxRows < 1:
		return nil, fmt.Errorf("group commit: at most %d rows a group, want at least 1", opts.MaxRows)
	case opts.QueueRows < opts.MaxRows:
		return nil, fmt.Errorf("group commit: a queue of %d rows holds less than a group (%d)", opts.QueueRows, opts.MaxRows)
	case opts.Window < 0 || opts.WriteTimeout <= 0:
		return nil, fmt.Errorf("group commit: window %s and write timeout %s, want ≥ 0 and > 0", opts.Window, opts.WriteTimeout)
	}
	// The channel holds QueueRows calls: every call has a row or more, so
	// a send finds room whenever the row count admitted it (but for
	// abandoned calls not dropped yet: see Do).
	return &Committer[C]{opts: opts, write: write, queue: make(chan *entry[C], opts.QueueRows)}, nil
}

// Do queues call, of rows rows, and waits until a writer wrote it: nil,
// and the answer is in call. ErrQueueFull when the queue is full; ctx's
// error when ctx ends before a writer took call (nothing of it was
// written); ErrStopped when Run stopped first. Once a writer took call,
// Do waits for the group's outcome whatever ctx says: the answer is the
// group's, never a guess.
func (g *Committer[C]) Do(ctx context.Context, call C, rows int) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	// Admitted while the queue has room at all, whatever the call's own
	// size: a call of more rows than the room left (an API Pix request of
	// a thousand) would otherwise be shed again and again while small
	// ones get in. The queue then holds at most QueueRows plus one call.
	if g.queued.Add(int64(rows))-int64(rows) >= int64(g.opts.QueueRows) {
		g.queued.Add(-int64(rows))
		return ErrQueueFull
	}
	e := &entry[C]{call: call, rows: rows, done: make(chan struct{})}
	select {
	case g.queue <- e:
	default:
		// The channel also holds calls their callers abandoned, until a
		// writer drops them: full, though the rows admitted this one.
		g.queued.Add(-int64(rows))
		return ErrQueueFull
	}
	select {
	case <-e.done:
		return e.err
	case <-ctx.Done():
		if e.state.CompareAndSwap(stateQueued, stateAbandoned) {
			g.queued.Add(-int64(rows))
			return ctx.Err()
		}
		<-e.done // taken: the group's outcome is the answer
		return e.err
	}
}

// Queued is how many rows wait for a writer now.
func (g *Committer[C]) Queued() int { return int(g.queued.Load()) }

// Run writes groups with Options.Writers writers until ctx ends; then it
// lets the groups being written finish, answers the calls still queued
// ErrStopped, and returns. Start it before the first Do and stop it after
// the last (after the HTTP servers drained).
func (g *Committer[C]) Run(ctx context.Context) error {
	done := make(chan struct{}, g.opts.Writers)
	for w := range g.opts.Writers {
		go func() {
			defer func() { done <- struct{}{} }()
			g.writer(ctx, w)
		}()
	}
	for range g.opts.Writers {
		<-done
	}
	for {
		select {
		case e := <-g.queue:
			if e.state.CompareAndSwap(stateQueued, stateTaken) {
				g.queued.Add(-int64(e.rows))
				e.err = ErrStopped
				close(e.done)
			}
		default:
			return nil
		}
	}
}

// writer takes the first queued call, every call queued behind it (up to
// MaxRows; waiting Window for more when it found company), and writes them
// as one group, until ctx ends. A call too big for the group it was
// drawn for leads this writer's next group.
func (g *Committer[C]) writer(ctx context.Context, w int) {
	var group []*entry[C]
	var carry *entry[C]
	for {
		first := carry
		carry = nil
		if first == nil {
			if ctx.Err() != nil {
				return // stopping: what is queued is answered ErrStopped
			}
			select {
			case <-ctx.Done():
				return
			case first = <-g.queue:
			}
		}
		group = group[:0]
		rows := 0
		if g.take(first) {
			group, rows = append(group, first), first.rows
		}
		group, rows, carry = g.gather(ctx, group, rows)
		if len(group) > 0 {
			g.writeGroup(w, group, rows)
		}
	}
}

// take claims e for this writer: false when its caller abandoned it.
func (g *Committer[C]) take(e *entry[C]) bool {
	if !e.state.CompareAndSwap(stateQueued, stateTaken) {
		return false
	}
	g.queued.Add(-int64(e.rows))
	return true
}

// gather adds to group the calls queued now, up to MaxRows rows, and, when
// it found any and Window is set, those that arrive within Window. next is
// a call drawn but too big for the group: not taken yet, it leads the
// writer's next group.
func (g *Committer[C]) gather(ctx context.Context, group []*entry[C], rows int) (_ []*entry[C], _ int, next *entry[C]) {
	var deadline <-chan time.Time
	for rows < g.opts.MaxRows {
		var e *entry[C]
		select {
		case e = <-g.queue:
		default:
			if g.opts.Window == 0 || len(group) < 2 {
				return group, rows, nil // alone, or no window: write now
			}
			if deadline == nil {
				timer := time.NewTimer(g.opts.Window)
				defer timer.Stop()
				deadline = timer.C
			}
			select {
			case e = <-g.queue:
			case <-deadline:
				return group, rows, nil
			case <-ctx.Done():
				return group, rows, nil
			}
		}
		if rows > 0 && rows+e.rows > g.opts.MaxRows {
			return group, rows, e
		}
		if g.take(e) {
			group, rows = append(group, e), rows+e.rows
		}
	}
	return group, rows, nil
}

// writeGroup writes group, whose calls this writer took, and finishes each.
func (g *Committer[C]) writeGroup(w int, group []*entry[C], rows int) {
	calls := make([]C, len(group))
	for i, e := range group {
		calls[i] = e.call
	}
	// Not the callers' contexts: a call taken is written whatever its
	// caller does meanwhile; the write is bounded by its own timeout.
	ctx, cancel := context.WithTimeout(context.Background(), g.opts.WriteTimeout)
	defer cancel()
	defer func() {
		// A write that panicked answers its calls (no caller waits for
		// ever) and leaves the writer, and the process, running.
		if recovered := recover(); recovered != nil {
			if g.opts.OnPanic != nil {
				g.opts.OnPanic(recovered)
			}
			for _, e := range group {
				e.err = ErrWriteFailed
			}
		}
		for _, e := range group {
			close(e.done)
		}
	}()
	g.write(ctx, w, calls)
	if g.opts.Observe != nil {
		g.opts.Observe(len(group), rows)
	}
}
