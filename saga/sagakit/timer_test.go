package sagakit_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/pixbank/pix/saga/sagakit"
)

// state is what a sleeper's run reads: its deadline and whether it waits.
type state struct {
	Deadline time.Time
	Waiting  bool
}

// script is a sleeper's input: the state it reads first, then at each
// reread the next one (the last repeated); a reread past FailAt fails.
type script struct {
	States []state
	FailAt int
}

// slept is what a sleeper saw: how often it read its state again, and
// when it stopped waiting.
type slept struct {
	Rereads int
	At      time.Time
}

// sleeper is a run that sleeps on a Timer woken by "release" or "return".
func sleeper(ctx workflow.Context, in script) (slept, error) {
	var out slept
	cur := in.States[0]
	timer := sagakit.Timer{Signals: []string{"release", "return"},
		Until: func() (time.Time, bool) { return cur.Deadline, cur.Waiting },
		Reread: func(workflow.Context) error {
			out.Rereads++
			if in.FailAt > 0 && out.Rereads >= in.FailAt {
				return errors.New("the row can't be read")
			}
			cur = in.States[min(out.Rereads, len(in.States)-1)]
			return nil
		}}
	err := timer.Sleep(ctx)
	out.At = workflow.Now(ctx)
	return out, err
}

var start = time.Date(2026, 12, 2, 13, 0, 0, 0, time.UTC)

// run runs a sleeper of in, sending each signal after its delay.
func run(t *testing.T, in script, signals map[time.Duration]string) (slept, error) {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.SetStartTime(start)
	env.RegisterWorkflow(sleeper)
	for after, name := range signals {
		env.RegisterDelayedCallback(func() { env.SignalWorkflow(name, "ignored") }, after)
	}
	env.ExecuteWorkflow(sleeper, in)
	require.True(t, env.IsWorkflowCompleted())
	if err := env.GetWorkflowError(); err != nil {
		return slept{}, err
	}
	var out slept
	require.NoError(t, env.GetWorkflowResult(&out))
	return out, nil
}

// Without a signal the run sleeps until its deadline, reading nothing
// again; a deadline past, or a state that does not wait, ends the wait at
// once.
func TestATimerSleepsUntilItsDeadline(t *testing.T) {
	out, err := run(t, script{States: []state{{start.Add(72 * time.Hour), true}}}, nil)
	require.NoError(t, err)
	require.Zero(t, out.Rereads)
	require.Equal(t, start.Add(72*time.Hour), out.At.UTC())

	for _, s := range []state{{start.Add(-time.Minute), true}, {start.Add(72 * time.Hour), false}} {
		out, err = run(t, script{States: []state{s}}, nil)
		require.NoError(t, err)
		require.Equal(t, slept{At: start}, slept{Rereads: out.Rereads, At: out.At.UTC()}, "%+v", s)
	}
}

// A signal on any of its channels wakes the run, which reads its state
// again: a state that no longer waits ends the wait then; one that still
// waits sleeps again, until its deadline, the new one if it moved.
func TestASignalWakesTheRunToReadItsState(t *testing.T) {
	deadline := start.Add(72 * time.Hour)
	out, err := run(t, script{States: []state{{deadline, true}, {deadline, false}}}, map[time.Duration]string{time.Hour: "return"})
	require.NoError(t, err)
	require.Equal(t, 1, out.Rereads)
	require.Equal(t, start.Add(time.Hour), out.At.UTC(), "ended on the signal")

	out, err = run(t, script{States: []state{{deadline, true}}}, map[time.Duration]string{time.Hour: "release", 2 * time.Hour: "return"})
	require.NoError(t, err)
	require.Equal(t, 2, out.Rereads, "one read per signal")
	require.Equal(t, deadline, out.At.UTC(), "signals the state does not back change nothing")

	later := deadline.Add(24 * time.Hour)
	out, err = run(t, script{States: []state{{deadline, true}, {later, true}}}, map[time.Duration]string{time.Hour: "release"})
	require.NoError(t, err)
	require.Equal(t, later, out.At.UTC(), "the deadline read again")

	out, err = run(t, script{States: []state{{deadline, true}}}, map[time.Duration]string{time.Hour: "another"})
	require.NoError(t, err)
	require.Zero(t, out.Rereads, "a signal of another channel wakes nothing")
	require.Equal(t, deadline, out.At.UTC())
}

// A state that can't be read again ends the sleep with its error.
func TestATimerReturnsTheRereadsError(t *testing.T) {
	_, err := run(t, script{States: []state{{start.Add(time.Hour), true}}, FailAt: 1}, map[time.Duration]string{time.Minute: "release"})
	require.ErrorContains(t, err, "the row can't be read")
}
