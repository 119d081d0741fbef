package load

import (
	"errors"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestReadCPUSeesThisProcessWork(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("the CPU accounting reads Linux's /proc")
	}
	comm, err := os.ReadFile("/proc/self/comm")
	require.NoError(t, err)
	self := strings.TrimSpace(string(comm))

	before, err := ReadCPU()
	require.NoError(t, err)
	// Spin until the kernel has charged this process 100 ms (however busy
	// the machine is: no wall-clock bound decides the test), at most 30 s.
	var use CPUUse
	spun := 0
	for start := time.Now(); time.Since(start) < 30*time.Second; {
		for range 1000 {
			_ = strings.Repeat("x", 64)
			spun++
		}
		after, err := ReadCPU()
		require.NoError(t, err)
		if use = after.Since(before); use.Procs[self] >= 100*time.Millisecond {
			break
		}
	}
	require.Positive(t, spun)
	require.GreaterOrEqual(t, use.Procs[self], 100*time.Millisecond, "spinning is charged to %s: %v", self, use.Procs)
	// use.Busy is not compared with the process's time: /proc/stat's busy
	// time is sampled at ticks, and in a sandbox (gVisor, some CI VMs) it is
	// the host's view or a virtualised one; a run there read 60 ms busy
	// against 120 ms charged. PerOp uses the processes' times for that reason.
	require.GreaterOrEqual(t, use.Busy, time.Duration(0))
	require.Positive(t, use.Wall)
}

func TestPerOpGroupsSmallSharesAsOther(t *testing.T) {
	t.Parallel()
	u := CPUUse{Wall: time.Second, Busy: 1000 * time.Millisecond, Procs: map[string]time.Duration{
		"postgres": 500 * time.Millisecond, "pixd api": 300 * time.Millisecond,
		"nats-server": 5 * time.Millisecond, "redis-server": 5 * time.Millisecond,
	}}
	total, shares := u.PerOp(1000, 0.02)
	require.InDelta(t, 810.0, total, 0.001, "the processes' own times, not the machine's sampled busy time")
	require.Equal(t, []CPUShare{{"postgres", 500}, {"pixd api", 300}, {"other", 10}}, shares)
	require.Equal(t, "postgres 500 µs, pixd api 300 µs, other 10 µs", FormatShares(shares))
	require.InDelta(t, 0.5, u.Utilisation(2), 0.001)

	_, none := u.PerOp(0, 0.02)
	require.Empty(t, none)
}

func TestSinceCountsGrowthByProcess(t *testing.T) {
	t.Parallel()
	t0 := time.Now()
	earlier := CPUCounters{At: t0, Busy: time.Second, Procs: map[int]ProcessCPU{
		1: {Name: "a", CPU: time.Second}, 2: {Name: "gone", CPU: time.Second}, 3: {Name: "kworker", CPU: 5 * time.Second},
	}}
	later := CPUCounters{At: t0.Add(time.Second), Busy: 3 * time.Second, Steal: 10 * time.Millisecond, Procs: map[int]ProcessCPU{
		1: {Name: "a", CPU: 1500 * time.Millisecond}, 4: {Name: "a", CPU: 100 * time.Millisecond}, 5: {Name: "new", CPU: 200 * time.Millisecond},
		// A process renamed in between counts its growth, not its life.
		3: {Name: "renamed", CPU: 5100 * time.Millisecond},
	}}
	u := later.Since(earlier)
	require.Equal(t, time.Second, u.Wall)
	require.Equal(t, 2*time.Second, u.Busy)
	require.Equal(t, 10*time.Millisecond, u.Steal)
	require.Equal(t, map[string]time.Duration{"a": 600 * time.Millisecond, "new": 200 * time.Millisecond, "renamed": 100 * time.Millisecond}, u.Procs)
	require.Equal(t, map[int]time.Duration{1: 500 * time.Millisecond, 4: 100 * time.Millisecond, 5: 200 * time.Millisecond, 3: 100 * time.Millisecond}, u.ByPID,
		"each replica's own share: two processes named a")
}

func TestTreeCountsAChildOnceEitherSideOfItsEnd(t *testing.T) {
	t.Parallel()
	// A server (pid 10) with two children: 11 runs on, 12 ends between the
	// readings and is waited for (its time moves to the server's
	// ChildCPU); 13 starts in between. 20 is another server's child.
	earlier := CPUCounters{Procs: map[int]ProcessCPU{
		10: {Name: "postgres", CPU: time.Second, PPID: 1},
		11: {Name: "postgres", CPU: 2 * time.Second, PPID: 10},
		12: {Name: "postgres", CPU: 300 * time.Millisecond, PPID: 10},
		20: {Name: "postgres", CPU: time.Second, PPID: 2},
	}}
	later := CPUCounters{Procs: map[int]ProcessCPU{
		10: {Name: "postgres", CPU: 1100 * time.Millisecond, PPID: 1, ChildCPU: 500 * time.Millisecond},
		11: {Name: "postgres", CPU: 2400 * time.Millisecond, PPID: 10},
		13: {Name: "postgres", CPU: 50 * time.Millisecond, PPID: 10},
		20: {Name: "postgres", CPU: 5 * time.Second, PPID: 2},
	}}
	require.Equal(t, 3300*time.Millisecond, earlier.Tree(10))
	// 100 ms of the server, 400 of 11, 200 more of 12 (500 in all), 50 of 13.
	require.Equal(t, 750*time.Millisecond, later.Since(earlier).Trees[10])
	require.Zero(t, later.Tree(99), "no such process")
}

func TestProcessNameGroupsKernelWorkersAndPixdSubcommands(t *testing.T) {
	t.Parallel()
	require.Equal(t, "kworker", processName("/nonexistent", "kworker/u8:3-writeback"))
	require.Equal(t, "postgres", processName("/nonexistent", "postgres"))
	require.Equal(t, "pixd", processName("/nonexistent", "pixd"), "no cmdline to read: the executable's name")
}

func TestMeasureCPUReturnsTheUseOrTheError(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("the CPU accounting reads Linux's /proc")
	}
	use, err := MeasureCPU(func() error { time.Sleep(20 * time.Millisecond); return nil })
	require.NoError(t, err)
	require.NotNil(t, use)
	require.GreaterOrEqual(t, use.Wall, 20*time.Millisecond)

	failed := errors.New("boom")
	use, err = MeasureCPU(func() error { return failed })
	require.ErrorIs(t, err, failed)
	require.Nil(t, use)
}
