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
		1: {"a", time.Second}, 2: {"gone", time.Second}, 3: {"kworker", 5 * time.Second},
	}}
	later := CPUCounters{At: t0.Add(time.Second), Busy: 3 * time.Second, Steal: 10 * time.Millisecond, Procs: map[int]ProcessCPU{
		1: {"a", 1500 * time.Millisecond}, 4: {"a", 100 * time.Millisecond}, 5: {"new", 200 * time.Millisecond},
		// A process renamed in between counts its growth, not its life.
		3: {"renamed", 5100 * time.Millisecond},
	}}
	u := later.Since(earlier)
	require.Equal(t, time.Second, u.Wall)
	require.Equal(t, 2*time.Second, u.Busy)
	require.Equal(t, 10*time.Millisecond, u.Steal)
	require.Equal(t, map[string]time.Duration{"a": 600 * time.Millisecond, "new": 200 * time.Millisecond, "renamed": 100 * time.Millisecond}, u.Procs)
	require.Equal(t, map[int]time.Duration{1: 500 * time.Millisecond, 4: 100 * time.Millisecond, 5: 200 * time.Millisecond, 3: 100 * time.Millisecond}, u.ByPID,
		"each replica's own share: two processes named a")
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
