package load

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The CPU accounting says where this machine's processor time went during a
// measurement, so that a throughput ratio can be read against what each
// side cost: on one shared machine the load generator, the API and
// PostgreSQL take their time from the same cores, and the ceilings pay for
// less of it (no HTTP). It reads Linux's /proc; elsewhere it is absent.

// clockTick is Linux's USER_HZ, the unit of /proc's CPU times: 100 on every
// architecture Go runs on.
const clockTick = 10 * time.Millisecond

// CPUCounters are the machine's cumulative CPU times at one instant.
type CPUCounters struct {
	At time.Time
	// Busy is the time the machine's CPUs spent running anything (user,
	// system, interrupts), all CPUs together.
	Busy time.Duration
	// Steal is the time the hypervisor gave this machine's CPUs to others.
	Steal time.Duration
	// Procs is the CPU time of each running process, by pid.
	Procs map[int]ProcessCPU
}

// ProcessCPU is one process's name (see processName) and CPU time; its
// parent's pid, and the CPU time of its children that ended and that it
// waited for (a PostgreSQL server's backends and autovacuum workers that
// exited): see Tree.
type ProcessCPU struct {
	Name     string
	CPU      time.Duration
	PPID     int
	ChildCPU time.Duration
}

// CPUUse is the CPU time spent between two readings.
type CPUUse struct {
	Wall  time.Duration            `json:"wall"`
	Busy  time.Duration            `json:"busy"`
	Steal time.Duration            `json:"steal"`
	Procs map[string]time.Duration `json:"procs"`
	// ByPID is the same time by process: what each replica of a group
	// took.
	ByPID map[int]time.Duration `json:"-"`
	// Trees is the CPU time of each process with its children (Tree), by
	// the pid of the tree's root: a PostgreSQL server's own, apart from any
	// other server on the machine.
	Trees map[int]time.Duration `json:"-"`
}

// ReadCPU reads the counters; an error means the platform has no /proc.
func ReadCPU() (CPUCounters, error) {
	c := CPUCounters{At: time.Now(), Procs: map[int]ProcessCPU{}}
	stat, err := os.ReadFile("/proc/stat")
	if err != nil {
		return c, fmt.Errorf("cpu accounting: %w", err)
	}
	line, _, _ := bytes.Cut(stat, []byte("\n"))
	fields := strings.Fields(string(line))
	if len(fields) < 9 || fields[0] != "cpu" {
		return c, errors.New("cpu accounting: /proc/stat has no cpu line")
	}
	ticks := make([]int64, 8)
	for i := range ticks {
		if ticks[i], err = strconv.ParseInt(fields[i+1], 10, 64); err != nil {
			return c, fmt.Errorf("cpu accounting: /proc/stat: %w", err)
		}
	}
	// user nice system idle iowait irq softirq steal
	c.Busy = time.Duration(ticks[0]+ticks[1]+ticks[2]+ticks[5]+ticks[6]) * clockTick
	c.Steal = time.Duration(ticks[7]) * clockTick
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, dir := range dirs {
		pid, err := strconv.Atoi(filepath.Base(dir))
		if err != nil {
			continue
		}
		if p, ok := processCPU(dir); ok {
			c.Procs[pid] = p
		}
	}
	return c, nil
}

// processCPU reads one process's name and CPU time (user + system); a
// process that exited meanwhile is skipped.
func processCPU(dir string) (ProcessCPU, bool) {
	stat, err := os.ReadFile(dir + "/stat")
	if err != nil {
		return ProcessCPU{}, false
	}
	// pid (comm) state ... : comm may hold spaces and parentheses.
	open, end := bytes.IndexByte(stat, '('), bytes.LastIndexByte(stat, ')')
	if open < 0 || end < open {
		return ProcessCPU{}, false
	}
	rest := strings.Fields(string(stat[end+1:]))
	if len(rest) < 13 {
		return ProcessCPU{}, false
	}
	// state ppid ... utime stime cutime cstime (proc(5): fields 3, 4, 14-17).
	ppid, err0 := strconv.Atoi(rest[1])
	utime, err1 := strconv.ParseInt(rest[11], 10, 64)
	stime, err2 := strconv.ParseInt(rest[12], 10, 64)
	cutime, err3 := strconv.ParseInt(rest[13], 10, 64)
	cstime, err4 := strconv.ParseInt(rest[14], 10, 64)
	if err := errors.Join(err0, err1, err2, err3, err4); err != nil {
		return ProcessCPU{}, false
	}
	return ProcessCPU{Name: processName(dir, string(stat[open+1:end])), CPU: time.Duration(utime+stime) * clockTick,
		PPID: ppid, ChildCPU: time.Duration(cutime+cstime) * clockTick}, true
}

// Tree is the CPU time of the process root and of its children: its own,
// its children's that are running (and their children's that ended), and
// those of its children that ended, which the kernel adds to root's once
// root has waited for them. A child is counted once whichever side of its
// end two readings fall: a PostgreSQL server's (its postmaster's) whole
// time, autovacuum's short-lived workers included. Grandchildren that are
// running are not counted (a PostgreSQL server has none).
func (c CPUCounters) Tree(root int) time.Duration {
	p, ok := c.Procs[root]
	if !ok {
		return 0
	}
	total := p.CPU + p.ChildCPU
	for _, child := range c.Procs {
		if child.PPID == root {
			total += child.CPU + child.ChildCPU
		}
	}
	return total
}

// processName groups processes by executable name, except that the
// service's own binary is told apart by its subcommand ("pixd api", "pixd
// worker"), which run as separate processes, and that the kernel's workers,
// whose names change with the work they do ("kworker/u8:3-writeback"), are
// one group.
func processName(dir, comm string) string {
	if strings.HasPrefix(comm, "kworker/") {
		return "kworker"
	}
	if comm != "pixd" {
		return comm
	}
	cmdline, err := os.ReadFile(dir + "/cmdline")
	if err != nil {
		return comm
	}
	args := strings.Split(string(cmdline), "\x00")
	if len(args) > 1 && args[1] != "" {
		return comm + " " + args[1]
	}
	return comm
}

// MeasureCPU runs f and returns the machine's CPU use over it: nil when
// the platform has no /proc (or f failed). Run it before the processes of
// interest stop (see Since).
func MeasureCPU(f func() error) (*CPUUse, error) {
	before, beforeErr := ReadCPU()
	if err := f(); err != nil {
		return nil, err
	}
	after, afterErr := ReadCPU()
	if beforeErr != nil || afterErr != nil {
		return nil, nil
	}
	use := after.Since(before)
	return &use, nil
}

// Since is the CPU time spent from earlier to c, by process name. A process
// that started in between counts from zero; one that ended in between is
// lost, so a reading is taken before the processes of interest stop.
func (c CPUCounters) Since(earlier CPUCounters) CPUUse {
	u := CPUUse{Wall: c.At.Sub(earlier.At), Busy: c.Busy - earlier.Busy, Steal: c.Steal - earlier.Steal,
		Procs: map[string]time.Duration{}, ByPID: map[int]time.Duration{}, Trees: map[int]time.Duration{}}
	parents := map[int]bool{}
	for pid, p := range c.Procs {
		if d := p.CPU - earlier.Procs[pid].CPU; d > 0 {
			u.Procs[p.Name] += d
			u.ByPID[pid] = d
		}
		parents[p.PPID] = true
	}
	for pid := range parents {
		if _, ok := earlier.Procs[pid]; ok {
			if d := c.Tree(pid) - earlier.Tree(pid); d > 0 {
				u.Trees[pid] = d
			}
		}
	}
	return u
}

// LoadAverage is the machine's load average over 1, 5 and 15 minutes as
// /proc/loadavg says it ("2.10 1.80 1.20"): on a machine shared with other
// work, what each figure was measured beside. "" without /proc.
func LoadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

// CPUShare is one process group's CPU time per operation.
type CPUShare struct {
	Name     string  `json:"name"`
	MicrosOp float64 `json:"micros_per_op"`
}

// PerOp is the CPU time of all processes per operation and the groups that
// took at least minShare of it, largest first; the rest are summed as
// "other". The processes' times are the kernel's exact ones; the machine's
// busy time in /proc/stat is sampled at clock ticks and, on a machine that
// is partly idle, reads low.
func (u CPUUse) PerOp(ops int64, minShare float64) (totalMicros float64, shares []CPUShare) {
	if ops <= 0 {
		return 0, nil
	}
	per := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(ops) }
	for _, d := range u.Procs {
		totalMicros += per(d)
	}
	var other float64
	for name, d := range u.Procs {
		if v := per(d); v >= minShare*totalMicros {
			shares = append(shares, CPUShare{name, v})
		} else {
			other += v
		}
	}
	slices.SortFunc(shares, func(a, b CPUShare) int { return cmp.Compare(b.MicrosOp, a.MicrosOp) })
	if other > 0 {
		shares = append(shares, CPUShare{"other", other})
	}
	return totalMicros, shares
}

// Utilisation is the share of the machine's CPUs that was busy.
func (u CPUUse) Utilisation(cpus int) float64 {
	if u.Wall <= 0 || cpus <= 0 {
		return 0
	}
	return float64(u.Busy) / (float64(u.Wall) * float64(cpus))
}

// FormatShares prints shares as "name 123 µs, …".
func FormatShares(shares []CPUShare) string {
	parts := make([]string, len(shares))
	for i, s := range shares {
		parts[i] = fmt.Sprintf("%s %.0f µs", s.Name, s.MicrosOp)
	}
	return strings.Join(parts, ", ")
}
