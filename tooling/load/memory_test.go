package load

import (
	"errors"
	"os"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A /proc/<pid>/status as Linux 6 writes it, cut to the lines around the
// memory ones.
const statusText = `Name:	pixd
Umask:	0022
State:	S (sleeping)
Pid:	4242
VmPeak:	 1893412 kB
VmSize:	 1827876 kB
VmLck:	       0 kB
VmPin:	       0 kB
VmHWM:	  158724 kB
VmRSS:	   61440 kB
RssAnon:	   40960 kB
Threads:	12
`

func TestParseStatusMemoryReadsRSSAndHighWaterMark(t *testing.T) {
	t.Parallel()
	m, err := ParseStatusMemory([]byte(statusText))
	require.NoError(t, err)
	require.Equal(t, Memory{RSS: 61440 * 1024, HWM: 158724 * 1024}, m, "VmRSS and VmHWM in bytes, not VmPeak (virtual) or RssAnon")

	// A kernel thread has no memory lines: an error, not a zero.
	_, err = ParseStatusMemory([]byte("Name:\tkthreadd\nState:\tS (sleeping)\n"))
	require.Error(t, err)
	_, err = ParseStatusMemory([]byte("VmHWM:\t12 MB\nVmRSS:\t10 kB\n"))
	require.Error(t, err, "a unit other than kB is not guessed at")
	_, err = ParseStatusMemory([]byte("VmHWM:\tlots kB\nVmRSS:\t10 kB\n"))
	require.Error(t, err)
}

func TestReadMemoryOfThisProcess(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("the memory accounting reads Linux's /proc")
	}
	m, err := ReadMemory(os.Getpid())
	require.NoError(t, err)
	require.Positive(t, m.RSS)
	require.GreaterOrEqual(t, m.HWM, m.RSS, "the high-water mark is at least the resident set now")
}

func TestParseProcesses(t *testing.T) {
	t.Parallel()
	procs, err := ParseProcesses(" api=10, api=11,worker=12 ,")
	require.NoError(t, err)
	require.Equal(t, []Process{{"api", 10}, {"api", 11}, {"worker", 12}}, procs)
	none, err := ParseProcesses("")
	require.NoError(t, err)
	require.Empty(t, none)
	for _, bad := range []string{"api", "api=", "=12", "api=x", "api=-1", "api=0"} {
		_, err := ParseProcesses(bad)
		require.Error(t, err, bad)
	}
}

func TestFindProcessesFindsThisTestByName(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("reads Linux's /proc")
	}
	self, ok := processCPU("/proc/self")
	require.True(t, ok)
	found := FindProcesses(map[string]string{self.Name: "me", "no-such-process-name": "ghost"})
	var pids []int
	for _, p := range found {
		require.Equal(t, "me", p.Role)
		pids = append(pids, p.PID)
	}
	require.Contains(t, pids, os.Getpid())
}

// The sampler keeps each process's largest sampled RSS and the kernel's
// high-water mark, stops reading a process that went away, and keeps what it
// saw of it.
func TestMemorySamplerKeepsPeaks(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	readings := map[int][]Memory{
		1: {{RSS: 10, HWM: 10}, {RSS: 50, HWM: 50}, {RSS: 20, HWM: 50}},
		2: {{RSS: 5, HWM: 7}},
	}
	read := func(pid int) (Memory, error) {
		mu.Lock()
		defer mu.Unlock()
		r := readings[pid]
		if len(r) == 0 {
			return Memory{}, errors.New("gone")
		}
		readings[pid] = r[1:]
		return r[0], nil
	}
	// An hour between samples: only the explicit readings happen (the
	// first at the start, then one per Peaks and Stop).
	s := startMemorySampler([]Process{{"api", 1}, {"worker", 2}}, time.Hour, read)
	got := s.Peaks()
	require.Equal(t, int64(50), got[0].PeakRSSBytes)
	require.Equal(t, 2, got[0].Samples)
	require.True(t, got[1].Exited, "worker 2 could not be read at the second reading")
	require.Equal(t, int64(7), got[1].HWMBytes, "what was seen of it before is kept")
	final := s.Stop()
	require.Equal(t, MemoryPeak{Process: Process{"api", 1}, PeakRSSBytes: 50, HWMBytes: 50, Samples: 3}, final[0],
		"a lower later reading does not lower the peak")
}

func TestMemorySamplerSamplesOnItsTicker(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	n := 0
	read := func(int) (Memory, error) {
		mu.Lock()
		defer mu.Unlock()
		n++
		return Memory{RSS: int64(n), HWM: int64(n)}, nil
	}
	s := startMemorySampler([]Process{{"api", 1}}, time.Millisecond, read)
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return n >= 5
	}, 30*time.Second, time.Millisecond)
	peaks := s.Stop()
	require.GreaterOrEqual(t, peaks[0].Samples, 5)
	require.Equal(t, int64(peaks[0].Samples), peaks[0].PeakRSSBytes)
}
