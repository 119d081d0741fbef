package sagakit_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"

	"github.com/pixbank/pix/saga/sagakit"
)

// answering is a Signaller that answers err, and records what it was
// asked and whether its context had a deadline and was still live.
type answering struct {
	err       error
	asked     []string
	deadlined bool
	live      bool
}

func (a *answering) SignalWorkflow(ctx context.Context, workflowID, runID, name string, _ any) error {
	a.asked = append(a.asked, workflowID+" "+runID+" "+name)
	_, a.deadlined = ctx.Deadline()
	a.live = ctx.Err() == nil
	return a.err
}

// A workflow with no run open (never started, or completed: Temporal
// answers both not found) is no failure and says so; another error is.
func TestSignalTellsARunNotOpenFromAFailure(t *testing.T) {
	ctx := context.Background()
	open, err := sagakit.Signal(ctx, &answering{}, "pix-block:1", "release", nil)
	require.NoError(t, err)
	require.True(t, open)
	for _, gone := range []error{serviceerror.NewNotFound("workflow not found"), serviceerror.NewNotFound("workflow execution already completed")} {
		open, err = sagakit.Signal(ctx, &answering{err: gone}, "pix-block:1", "release", nil)
		require.NoError(t, err, "%v", gone)
		require.False(t, open)
	}
	unavailable := serviceerror.NewUnavailable("no frontend")
	_, err = sagakit.Signal(ctx, &answering{err: unavailable}, "pix-block:1", "release", nil)
	require.ErrorIs(t, err, unavailable)
}

// A wake after a commit outlives the request that asked for it, within its
// bound, and logs a failure, naming the run, but not a run that is not
// open.
func TestWakeOutlivesTheRequestAndLogsAFailure(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // the request's client went away after the commit
	var logged bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&logged, nil))

	s := &answering{}
	sagakit.Wake(ctx, s, log, "pix-block:1", "release", "block released, its run not woken", "block_id", "1")
	require.Equal(t, []string{"pix-block:1  release"}, s.asked)
	require.True(t, s.live, "signalled on a context the request's end does not cancel")
	require.True(t, s.deadlined, "within a bound")
	require.Empty(t, logged.String())

	sagakit.Wake(ctx, &answering{err: serviceerror.NewNotFound("workflow execution already completed")}, log, "pix-block:1", "release", "lost")
	require.Empty(t, logged.String(), "no run open: nothing to wake, nothing to say")

	sagakit.Wake(ctx, &answering{err: errors.New("connection refused")}, log, "pix-block:1", "release", "block released, its run not woken", "block_id", "1")
	var line map[string]any
	require.NoError(t, json.Unmarshal(logged.Bytes(), &line), "%s", logged.String())
	require.Equal(t, "block released, its run not woken", line["msg"])
	require.Equal(t, "WARN", line["level"])
	require.Equal(t, "1", line["block_id"])
	require.Equal(t, "pix-block:1", line["workflow_id"])
	require.Contains(t, line["error"], "connection refused")
}

// hanging is Temporal unreachable (packets dropped): a signal returns only
// when its context ends. It counts the signals in flight, and the most at
// once.
type hanging struct {
	mu               sync.Mutex
	tried, now, most int
}

func (h *hanging) SignalWorkflow(ctx context.Context, _, _, _ string, _ any) error {
	h.mu.Lock()
	h.tried++
	h.now++
	h.most = max(h.most, h.now)
	h.mu.Unlock()
	<-ctx.Done()
	h.mu.Lock()
	h.now--
	h.mu.Unlock()
	return ctx.Err()
}

// The wakes of one commit share one deadline and go at once, bounded: 20
// runs to tell with Temporal unreachable cost the commit WakeAllTimeout,
// not 20 × WakeTimeout; every wake is either tried or, once the deadline
// passed, logged lost, and no signal is still in flight when WakeAll
// returns.
func TestWakeAllWaitsOneBoundedDeadlineForAllItsRuns(t *testing.T) {
	var logged bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&logged, nil))
	s := &hanging{}
	var wakes []sagakit.AWake
	for i := range 20 {
		wakes = append(wakes, sagakit.AWake{WorkflowID: fmt.Sprint("pix-med:", i), Attrs: []any{"report_id", i}})
	}
	started := time.Now()
	sagakit.WakeAll(context.Background(), s, log, "changed", "report changed, its run not woken", wakes)
	took := time.Since(started)

	require.GreaterOrEqual(t, took, sagakit.WakeAllTimeout)
	require.Less(t, took, sagakit.WakeAllTimeout+time.Second, "one deadline for all, not one per run")
	s.mu.Lock()
	defer s.mu.Unlock()
	require.Equal(t, sagakit.WakeAllAtOnce, s.most, "at most WakeAllAtOnce at once")
	require.Zero(t, s.now, "no signal outlives WakeAll")
	lines := bytes.Split(bytes.TrimSpace(logged.Bytes()), []byte("\n"))
	require.Len(t, lines, 20, "each wake not sent is logged lost: %s", logged.String())
	require.Equal(t, sagakit.WakeAllAtOnce, s.tried, "none tried after the deadline")
}
