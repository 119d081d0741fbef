package retention

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/pixbank/pix/internal/payload"
)

// fullBatches is a table that always has a full batch more: a run ends
// only by its own bounds. calls counts the batches; first runs at the
// first.
func fullBatches(size int, calls *int, first func()) func() (int64, error) {
	return func() (int64, error) {
		*calls++
		if *calls == 1 && first != nil {
			first()
		}
		return int64(size), nil
	}
}

func noHeartbeat(int64) {}

// An input that bounds nothing (a batch of no rows would never come back
// short; no batch at all deletes nothing) is refused before any batch, as
// final: no attempt could do better.
func TestARetentionRunRefusesAnInputThatBoundsNothing(t *testing.T) {
	for _, in := range []Input{{BatchSize: 0, MaxBatches: 10}, {BatchSize: -1, MaxBatches: 10}, {BatchSize: 1000, MaxBatches: 0}} {
		calls := 0
		n, err := batchRun{heartbeat: noHeartbeat}.run(context.Background(), in, fullBatches(in.BatchSize, &calls, nil))
		require.Zero(t, n)
		require.Zero(t, calls, "no batch ran")
		var appErr *temporal.ApplicationError
		require.True(t, errors.As(err, &appErr), "%v", err)
		require.Equal(t, ErrTypeInputInvalid, appErr.Type())
		require.True(t, appErr.NonRetryable())
		require.ErrorContains(t, err, "must both be at least 1")
	}
}

// The pause between batches ends when the worker stops and when the
// activity's context ends: the run returns what it deleted so far, with no
// error (the next run takes the rest), rather than wait out its pause (and
// the heartbeat timeout) and be retried elsewhere. The pause is 30 s: a
// run that waited it out would take a second batch.
func TestARetentionRunStopsItsPauseWhenTheWorkerStopsOrItsContextEnds(t *testing.T) {
	in := Input{BatchSize: 10, MaxBatches: 2, BatchPause: payload.Duration(30 * time.Second)}
	t.Run("the worker stops", func(t *testing.T) {
		stop := make(chan struct{})
		calls := 0
		n, err := batchRun{stop: stop, heartbeat: noHeartbeat}.run(context.Background(), in,
			fullBatches(in.BatchSize, &calls, func() { time.AfterFunc(100*time.Millisecond, func() { close(stop) }) }))
		require.NoError(t, err)
		require.EqualValues(t, 10, n, "the first batch's rows")
		require.Equal(t, 1, calls)
	})
	t.Run("its context ends", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		calls := 0
		n, err := batchRun{heartbeat: noHeartbeat}.run(ctx, in,
			fullBatches(in.BatchSize, &calls, func() { time.AfterFunc(100*time.Millisecond, cancel) }))
		require.NoError(t, err)
		require.EqualValues(t, 10, n)
		require.Equal(t, 1, calls)
	})
	t.Run("with no pause", func(t *testing.T) {
		stop := make(chan struct{})
		calls := 0
		n, err := batchRun{stop: stop, heartbeat: noHeartbeat}.run(context.Background(),
			Input{BatchSize: 10, MaxBatches: 1_000_000}, fullBatches(10, &calls, func() { close(stop) }))
		require.NoError(t, err)
		require.EqualValues(t, 10, n, "a run without a pause ends between two batches too")
	})
}

// A run stops DeadlineMargin before its activity's deadline,
// whatever it has left, and returns its count: here a deadline a margin
// and 300 ms away, batches 50 ms apart, and more batches than the time
// holds (2,000: 100 s), so a run that ignored it would end after the
// deadline.
func TestARetentionRunStopsBeforeItsDeadline(t *testing.T) {
	deadline := time.Now().Add(DeadlineMargin + 300*time.Millisecond)
	in := Input{BatchSize: 10, MaxBatches: 2_000, BatchPause: payload.Duration(50 * time.Millisecond)}
	calls := 0
	var told int64
	n, err := batchRun{deadline: deadline, heartbeat: func(total int64) { told = total }}.run(context.Background(), in,
		fullBatches(in.BatchSize, &calls, nil))
	require.NoError(t, err)
	require.True(t, time.Now().Before(deadline), "the run returned before its deadline")
	require.GreaterOrEqual(t, calls, 1)
	require.Less(t, calls, in.MaxBatches, "it stopped for its deadline, not its batches")
	require.EqualValues(t, int64(calls*in.BatchSize), n, "what it deleted")
	require.Equal(t, n, told, "heartbeat with the running total")
}

// RowsPerSecond paces the batches by the rows they delete, counting each
// batch's own time: batches of 10 rows at 200 rows/s start 50 ms apart,
// so five take at least 200 ms; a batch slower than its share (here 600
// ms for 500 ms of rows) is followed at once, never by a further wait.
func TestARetentionRunKeepsItsRowsPerSecond(t *testing.T) {
	in := Input{BatchSize: 10, MaxBatches: 5, RowsPerSecond: 200, BatchPause: payload.Duration(time.Hour)}
	var starts []time.Time
	n, err := batchRun{heartbeat: noHeartbeat}.run(context.Background(), in, func() (int64, error) {
		starts = append(starts, time.Now())
		return 10, nil
	})
	require.NoError(t, err)
	require.EqualValues(t, 50, n)
	require.Len(t, starts, 5)
	for i := 1; i < len(starts); i++ {
		gap := starts[i].Sub(starts[i-1])
		require.GreaterOrEqual(t, gap, 50*time.Millisecond, "batch %d", i)
		require.Less(t, gap, 500*time.Millisecond, "batch %d: the rate, not BatchPause", i)
	}

	starts = nil
	_, err = batchRun{heartbeat: noHeartbeat}.run(context.Background(), Input{BatchSize: 10, MaxBatches: 3, RowsPerSecond: 20},
		func() (int64, error) {
			starts = append(starts, time.Now())
			time.Sleep(600 * time.Millisecond)
			return 10, nil
		})
	require.NoError(t, err)
	require.Len(t, starts, 3)
	for i := 1; i < len(starts); i++ {
		require.Less(t, starts[i].Sub(starts[i-1]), time.Second, "batch %d: no wait after a slow batch (a wait: 1.1 s)", i)
	}
}

// The BatchPause a new Schedule's input carries (for a worker of a release
// before RowsPerSecond) is the wait the run keeps after a full batch at
// RowsPerSecond: one share of the rate, whatever the rate, a rate that
// does not divide a second evenly included.
func TestABatchPauseIsAFullBatchsShareOfTheRate(t *testing.T) {
	for _, rate := range []int{BatchSize, 2_500, 3_000, 7_777, 1_000_000} {
		in := NewInput(Settings{RowsPerSecond: rate}, time.Hour)
		began := time.Now()
		require.Equal(t, time.Duration(in.BatchPause), in.nextBatch(began, int64(in.BatchSize)).Sub(began), "rate %d", rate)
		require.Positive(t, in.BatchPause, "rate %d", rate)
	}
	require.Equal(t, 33_333_333*time.Nanosecond, Rate(3_000).share(BatchSize), "100 rows at 3,000 a second")
}
