package load

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The memory accounting says how much memory each of the service's
// processes held through a measurement: its resident set (VmRSS), sampled,
// and the kernel's own high-water mark of it (VmHWM, the peak since the
// process started, exact whatever the sampling missed). It reads Linux's
// /proc/<pid>/status; elsewhere it is absent.

// Memory is one reading of a process's resident memory, in bytes.
type Memory struct {
	RSS, HWM int64
}

// ParseStatusMemory reads VmRSS and VmHWM from the text of a
// /proc/<pid>/status file (in kB there). A kernel thread has neither: an
// error.
func ParseStatusMemory(status []byte) (Memory, error) {
	var m Memory
	var seen int
	sc := bufio.NewScanner(bytes.NewReader(status))
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), ":")
		if !ok || (name != "VmRSS" && name != "VmHWM") {
			continue
		}
		fields := strings.Fields(value)
		if len(fields) != 2 || fields[1] != "kB" {
			return m, fmt.Errorf("memory accounting: %s: unreadable %q", name, value)
		}
		kb, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			return m, fmt.Errorf("memory accounting: %s: %w", name, err)
		}
		if name == "VmRSS" {
			m.RSS = kb * 1024
		} else {
			m.HWM = kb * 1024
		}
		seen++
	}
	if seen != 2 {
		return m, fmt.Errorf("memory accounting: no VmRSS and VmHWM (a kernel thread, or not Linux)")
	}
	return m, nil
}

// ReadMemory reads one process's resident memory.
func ReadMemory(pid int) (Memory, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return Memory{}, fmt.Errorf("memory accounting: %w", err)
	}
	return ParseStatusMemory(b)
}

// Process is a process to watch: its role in the service (api, worker,
// temporal, ...) and pid.
type Process struct {
	Role string `json:"role"`
	PID  int    `json:"pid"`
}

// ParseProcesses reads "role=pid,role=pid,...", the form scripts hand the
// load command its service's processes in.
func ParseProcesses(s string) ([]Process, error) {
	var out []Process
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		role, pidText, ok := strings.Cut(part, "=")
		pid, err := strconv.Atoi(strings.TrimSpace(pidText))
		if !ok || strings.TrimSpace(role) == "" || err != nil || pid <= 0 {
			return nil, fmt.Errorf("process %q: want role=pid", part)
		}
		out = append(out, Process{Role: strings.TrimSpace(role), PID: pid})
	}
	return out, nil
}

// FindProcesses looks up the running processes whose name (as the CPU
// accounting groups them: "pixd api", "pixd worker", "temporal-server")
// is a key of roles, and gives each the role it maps to: for a run whose
// script did not name its processes.
func FindProcesses(roles map[string]string) []Process {
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	var out []Process
	for _, dir := range dirs {
		pid, err := strconv.Atoi(filepath.Base(dir))
		if err != nil {
			continue
		}
		p, ok := processCPU(dir)
		if !ok {
			continue
		}
		if role, ok := roles[p.Name]; ok {
			out = append(out, Process{Role: role, PID: pid})
		}
	}
	slices.SortFunc(out, func(a, b Process) int { return cmp.Or(strings.Compare(a.Role, b.Role), cmp.Compare(a.PID, b.PID)) })
	return out
}

// ProcessName is the CPU accounting's name of a running process (see
// processName); false when it can't be read.
func ProcessName(pid int) (string, bool) {
	p, ok := processCPU(fmt.Sprintf("/proc/%d", pid))
	return p.Name, ok
}

// MemoryPeak is what the sampler saw of one process.
type MemoryPeak struct {
	Process
	// PeakRSSBytes is the largest sampled VmRSS; HWMBytes the kernel's
	// high-water mark at the last reading (the peak since the process
	// started, samples or not).
	PeakRSSBytes int64 `json:"peak_rss_bytes"`
	HWMBytes     int64 `json:"hwm_bytes"`
	Samples      int   `json:"samples"`
	// Exited: the process could no longer be read before the end.
	Exited bool `json:"exited,omitempty"`
}

// MemorySampler samples the resident memory of a set of processes until
// stopped; its goroutine is its own, ended by Stop.
type MemorySampler struct {
	read  func(pid int) (Memory, error)
	every time.Duration

	mu    sync.Mutex
	peaks []MemoryPeak

	cancel context.CancelFunc
	done   chan struct{}
}

// StartMemorySampler reads every process of procs at once, then every
// interval, until Stop.
func StartMemorySampler(procs []Process, every time.Duration) *MemorySampler {
	return startMemorySampler(procs, every, ReadMemory)
}

func startMemorySampler(procs []Process, every time.Duration, read func(int) (Memory, error)) *MemorySampler {
	ctx, cancel := context.WithCancel(context.Background())
	s := &MemorySampler{read: read, every: every, cancel: cancel, done: make(chan struct{})}
	for _, p := range procs {
		s.peaks = append(s.peaks, MemoryPeak{Process: p})
	}
	s.sample()
	go func() {
		defer close(s.done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				s.sample()
			}
		}
	}()
	return s
}

func (s *MemorySampler) sample() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range s.peaks {
		p := &s.peaks[i]
		if p.Exited {
			continue
		}
		m, err := s.read(p.PID)
		if err != nil {
			p.Exited = true
			continue
		}
		p.Samples++
		p.PeakRSSBytes = max(p.PeakRSSBytes, m.RSS)
		p.HWMBytes = max(p.HWMBytes, m.HWM)
	}
}

// Peaks takes one more reading and returns what was seen so far; the
// sampler goes on.
func (s *MemorySampler) Peaks() []MemoryPeak {
	s.sample()
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.peaks)
}

// Stop takes a last reading, ends the sampling and returns the peaks.
func (s *MemorySampler) Stop() []MemoryPeak {
	s.cancel()
	<-s.done
	return s.Peaks()
}
