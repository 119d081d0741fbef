package main

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/pixbank/pix/internal/durable"
	"github.com/pixbank/pix/tooling/load"
)

// Report is the outcome of one pixload run.
type Report struct {
	Label   string    `json:"label,omitempty"`
	Started time.Time `json:"started"`
	Machine string    `json:"machine"`
	// Topology names the service's processes ("1+1": one API, one worker;
	// "2+2"), and APIs the base URLs the webhooks were spread over.
	Topology string   `json:"topology,omitempty"`
	APIs     []string `json:"apis,omitempty"`
	// EngineProcess is the CPU accounting's name of the Temporal server
	// watched (-watch temporal=PID): "temporal-server", or "temporal" for
	// the CLI's dev server.
	EngineProcess string `json:"engine_process,omitempty"`

	IngestCeilingPerSec float64 `json:"ingest_ceiling_per_sec,omitempty"`
	// IngestCeilingCPU is the machine's CPU per insert of the ingest
	// ceiling (absent without /proc).
	IngestCeilingCPU *CPUReport `json:"ingest_ceiling_cpu,omitempty"`
	// GroupedCeilings are the same inserts N rows per transaction, by N.
	GroupedCeilings []GroupedCeiling `json:"grouped_ingest_ceilings,omitempty"`
	// EngineCeilingPerSec is each no-op shape's ceiling (load.EngineMode):
	// its runs over the time of its rounds, EngineCeilingRounds each
	// round's rate (the eager local-activity shapes, unversioned and
	// versioned, are measured alternately).
	EngineCeilingPerSec map[string]float64   `json:"engine_ceiling_per_sec,omitempty"`
	EngineCeilingRounds map[string][]float64 `json:"engine_ceiling_rounds_per_sec,omitempty"`
	// WorkersVersioned: the service's workers are versioned
	// (TEMPORAL_WORKER_VERSIONING, read as pixd reads it): the credits are
	// measured against the versioned no-op shape (servicesEngine).
	WorkersVersioned bool `json:"workers_versioned"`
	// EngineAfterDrainPerSec is that shape's ceiling measured again after
	// the drain, on the server in the state the backlog left it in (the
	// verdict stays against the ceilings measured first);
	// EngineAfterDrainByShape every eager local-activity shape's, and
	// EngineAfterDrainCPU their CPU per workflow.
	EngineAfterDrainPerSec  float64               `json:"engine_ceiling_after_drain_per_sec,omitempty"`
	EngineAfterDrainByShape map[string]float64    `json:"engine_ceiling_after_drain_by_shape_per_sec,omitempty"`
	EngineAfterDrainCPU     map[string]*CPUReport `json:"engine_ceiling_after_drain_cpu,omitempty"`
	// EngineCeilingCPU is the machine's CPU per no-op workflow, by shape,
	// and EngineCeilingDB PostgreSQL's commits and log.
	EngineCeilingCPU   map[string]*CPUReport `json:"engine_ceiling_cpu,omitempty"`
	EngineCeilingDB    map[string]*DBReport  `json:"engine_ceiling_db,omitempty"`
	EngineLatencyP50Ms float64               `json:"engine_one_workflow_latency_p50_ms,omitempty"`
	// EngineIdleLatencyP50Ms is the best shape's latency with its runs
	// paced like the idle phase's arrivals (-idle-rate).
	EngineIdleLatencyP50Ms float64 `json:"engine_one_workflow_latency_idle_paced_p50_ms,omitempty"`
	IdleAckToCreditedP50   float64 `json:"idle_ack_to_credited_p50_ms,omitempty"`

	// WorkerPaused: the rate steps ran with the worker paused (-pause-cmd),
	// measuring the acknowledgement path alone.
	WorkerPaused bool         `json:"worker_paused"`
	Steps        []StepReport `json:"steps"`
	// Saturated: a step of the sweep went past what the API takes (p99 over
	// 50 ms, a PIX never acknowledged, or a 5xx answer): the sweep's
	// memory peak is then one through saturation.
	Saturated bool `json:"saturated"`
	// SweepMemory is the resident memory of the watched processes through
	// the sweep (absent without /proc or processes to watch).
	SweepMemory []load.MemoryPeak `json:"sweep_memory,omitempty"`

	CreditsPerSec float64 `json:"credits_per_sec"`
	// DrainCPU is the machine's CPU per credit over the drain, DrainDB
	// PostgreSQL's commits and log per credit.
	DrainCPU *CPUReport `json:"drain_cpu,omitempty"`
	DrainDB  *DBReport  `json:"drain_db,omitempty"`
	// DrainStarts is the credit workflow starts the dispatchers issued
	// over the drain (-worker-metrics).
	DrainStarts        *StartsReport   `json:"drain_starts,omitempty"`
	AckToCreditedP50Ms int64           `json:"ack_to_credited_p50_ms"`
	AckToCreditedP99Ms int64           `json:"ack_to_credited_p99_ms"`
	DrainSeconds       float64         `json:"drain_seconds"`
	Invariants         load.Invariants `json:"invariants"`
	Violations         []string        `json:"violations"`
	BestIngestPerSec   float64         `json:"best_ingest_per_sec_at_p99_le_50ms"`
	IngestRatio        float64         `json:"ingest_ratio,omitempty"`
	CreditRatio        float64         `json:"credit_ratio,omitempty"`
	IdleLatencyRatio   float64         `json:"idle_latency_ratio,omitempty"`
	// IngestCPUBound is the most of the ingest ceiling this machine can
	// accept with every CPU busy: its CPUs ÷ the sweep's least CPU per
	// webhook, ÷ the ceiling. IngestCPUBoundNoLoad leaves the load
	// generator's own share out of the webhook's cost, as with the load
	// generator on other cores (an estimate, not a measurement).
	IngestCPUBound       float64 `json:"ingest_cpu_bound,omitempty"`
	IngestCPUBoundNoLoad float64 `json:"ingest_cpu_bound_without_load_generator,omitempty"`

	// Targets are the figures, each measured, against its target.
	Targets []Target `json:"targets,omitempty"`
	// ReplicaCost compares this run with a baseline run of fewer replicas
	// (-baseline).
	ReplicaCost *ReplicaCost `json:"replica_cost,omitempty"`
	// Soak is the outcome of a soak run (-soak); the sweep's fields are
	// then empty.
	Soak *SoakReport `json:"soak,omitempty"`
}

// GroupedCeiling is the ingest ceiling with Batch rows per transaction.
type GroupedCeiling struct {
	Batch     int        `json:"batch"`
	PerSecond float64    `json:"per_sec"`
	Commits   int64      `json:"commits"`
	CPU       *CPUReport `json:"cpu,omitempty"`
}

// CPUReport is the machine's CPU per operation over a measurement.
type CPUReport struct {
	// MicrosPerOp is the CPU time of all processes per operation.
	MicrosPerOp   float64         `json:"micros_per_op"`
	Utilisation   float64         `json:"utilisation"`
	StealMicrosOp float64         `json:"steal_micros_per_op"`
	Shares        []load.CPUShare `json:"shares"`
	// Processes are the watched processes' own CPU per operation (-watch):
	// how the work spread over the replicas.
	Processes []ProcessShare `json:"processes,omitempty"`
}

// ProcessShare is one watched process's CPU per operation.
type ProcessShare struct {
	load.Process
	MicrosOp float64 `json:"micros_per_op"`
}

// StepReport is one rate of the sweep.
type StepReport struct {
	Rate           float64          `json:"rate"`
	Arrivals       int64            `json:"arrivals"`
	Requests       int64            `json:"requests"`
	AcceptedPerSec float64          `json:"accepted_per_sec"`
	AckP50Ms       float64          `json:"ack_p50_ms"`
	AckP99Ms       float64          `json:"ack_p99_ms"`
	AckP999Ms      float64          `json:"ack_p999_ms"`
	Errors         map[string]int64 `json:"errors"`
	Unacked        int              `json:"unacked"`
	// CPU is the machine's CPU per request of the step.
	CPU *CPUReport `json:"cpu,omitempty"`
	// DB is PostgreSQL's commits and log per request of the step.
	DB *DBReport `json:"db,omitempty"`
}

// DBReport is what PostgreSQL did per operation over a measurement: the
// server's write transactions and write-ahead log (exact), and the commits
// by database, the service's and Temporal's (from the statistics, which lag
// by up to a second: approximate over a short step). The load command's
// own few queries (the drain's polling) are in them.
type DBReport struct {
	WriteXactsPerOp float64            `json:"write_xacts_per_op"`
	WALBytesPerOp   float64            `json:"wal_bytes_per_op"`
	CommitsPerOp    map[string]float64 `json:"commits_per_op"`
}

func dbReport(u *load.DBUse, ops int64) *DBReport {
	if u == nil || ops <= 0 {
		return nil
	}
	r := &DBReport{CommitsPerOp: map[string]float64{},
		WriteXactsPerOp: float64(u.WriteXacts) / float64(ops), WALBytesPerOp: float64(u.WALBytes) / float64(ops)}
	for name, n := range u.Commits {
		r.CommitsPerOp[name] = float64(n) / float64(ops)
	}
	return r
}

func (r *DBReport) String() string {
	names := make([]string, 0, len(r.CommitsPerOp))
	for name := range r.CommitsPerOp {
		names = append(names, name)
	}
	slices.Sort(names)
	parts := make([]string, len(names))
	for i, name := range names {
		parts[i] = fmt.Sprintf("%s %.2f", name, r.CommitsPerOp[name])
	}
	return fmt.Sprintf("%.2f write transactions, %.0f bytes of WAL (the server's); commits %s", r.WriteXactsPerOp, r.WALBytesPerOp, strings.Join(parts, ", "))
}

// passed: the step kept p99 ≤ 50 ms and acknowledged every PIX.
func (st StepReport) passed() bool { return st.AckP99Ms <= 50 && st.Unacked == 0 }

// overloaded: the step went past what the API takes: p99 over 50 ms, a
// PIX never acknowledged, a 5xx answer (a 503 shedding load) or a
// transport error (a refused or timed-out connection).
func (st StepReport) overloaded() bool {
	if !st.passed() {
		return true
	}
	for k, n := range st.Errors {
		if n > 0 && (strings.HasPrefix(k, "http 5") || strings.HasPrefix(k, "transport: ")) {
			return true
		}
	}
	return false
}

// operatingStep is the step the API's per-webhook figures are read at: the
// one that gave the best accepted rate at p99 ≤ 50 ms, else (none passed)
// the sweep's first. nil without steps.
func (rep *Report) operatingStep() *StepReport {
	var best *StepReport
	for i := range rep.Steps {
		st := &rep.Steps[i]
		if st.passed() && (best == nil || st.AcceptedPerSec > best.AcceptedPerSec) {
			best = st
		}
	}
	if best == nil && len(rep.Steps) > 0 {
		best = &rep.Steps[0]
	}
	return best
}

// loadGenerator is the CPU accounting's name of this process.
const loadGenerator = "pixload"

// The CPU accounting's names of the service's processes: every API replica
// is "pixd api", every worker "pixd worker"; the Temporal server is
// "temporal-server" (PostgreSQL-backed) or "temporal" (the CLI's dev
// server).
const (
	apiProcess    = "pixd api"
	workerProcess = "pixd worker"
)

var engineProcesses = []string{"temporal-server", "temporal"}

// engineNames are the CPU accounting's names of the run's Temporal server:
// the watched one's (-watch temporal=PID), else both names (on a shared
// machine, any other dev server counts too).
func (rep *Report) engineNames() []string {
	if rep.EngineProcess != "" {
		return []string{rep.EngineProcess}
	}
	return engineProcesses
}

func cpuReport(u *load.CPUUse, ops int64) *CPUReport {
	if u == nil || ops <= 0 {
		return nil
	}
	total, shares := u.PerOp(ops, 0.02)
	return &CPUReport{MicrosPerOp: total, Utilisation: u.Utilisation(runtime.NumCPU()),
		StealMicrosOp: float64(u.Steal.Microseconds()) / float64(ops), Shares: shares}
}

// withProcesses adds the watched processes' own CPU per operation.
func (r *CPUReport) withProcesses(u *load.CPUUse, procs []load.Process, ops int64) *CPUReport {
	if r == nil || u == nil || ops <= 0 {
		return r
	}
	for _, p := range procs {
		r.Processes = append(r.Processes, ProcessShare{p, float64(u.ByPID[p.PID].Microseconds()) / float64(ops)})
	}
	return r
}

// share is the named groups' CPU per operation (0 when absent).
func (r *CPUReport) share(names ...string) float64 {
	var sum float64
	for _, s := range r.Shares {
		for _, name := range names {
			if s.Name == name {
				sum += s.MicrosOp
			}
		}
	}
	return sum
}

func (r *CPUReport) String() string {
	s := fmt.Sprintf("%.0f µs (%s); machine %.0f%% busy, steal %.0f µs",
		r.MicrosPerOp, load.FormatShares(r.Shares), 100*r.Utilisation, r.StealMicrosOp)
	if len(r.Processes) > 0 {
		parts := make([]string, len(r.Processes))
		for i, p := range r.Processes {
			parts[i] = fmt.Sprintf("%s %d %.0f µs", p.Role, p.PID, p.MicrosOp)
		}
		s += "; by process: " + strings.Join(parts, ", ")
	}
	return s
}

// ingestCPUBound works out how many webhooks per second the machine's CPUs
// can take at the sweep's least CPU per webhook, as a share of the ceiling:
// whatever the code's latency, the accepted rate ÷ the ceiling can't exceed
// it on this machine.
func (rep *Report) ingestCPUBound() {
	if rep.IngestCeilingPerSec <= 0 {
		return
	}
	var least *CPUReport
	for _, st := range rep.Steps {
		if st.CPU != nil && (least == nil || st.CPU.MicrosPerOp < least.MicrosPerOp) {
			least = st.CPU
		}
	}
	if least == nil || least.MicrosPerOp <= 0 {
		return
	}
	bound := func(micros float64) float64 {
		return float64(runtime.NumCPU()) * 1e6 / micros / rep.IngestCeilingPerSec
	}
	rep.IngestCPUBound = bound(least.MicrosPerOp)
	if rest := least.MicrosPerOp - least.share(loadGenerator); rest > 0 {
		rep.IngestCPUBoundNoLoad = bound(rest)
	}
}

// mib is bytes in MB of 2^20 bytes, as ps and top count them.
func mib(b int64) float64 { return float64(b) / (1 << 20) }

// peakOf is the highest resident memory the role's processes reached: the
// kernel's high-water mark, or a sampled peak above it (never, but a
// process that could not be read at the end keeps its samples).
func peakOf(peaks []load.MemoryPeak, role string) (peak int64, n int) {
	for _, p := range peaks {
		if p.Role == role {
			peak = max(peak, p.HWMBytes, p.PeakRSSBytes)
			n++
		}
	}
	return peak, n
}

// StartsReport is the workflow starts of the credits' dispatchers over a
// drain, by outcome, and per credit. With the workers paused through the
// sweep (as make bench runs), 1 is the least (one new run each); every
// "open" start is a recheck of a row whose run had not ended.
type StartsReport struct {
	ByOutcome map[string]float64 `json:"by_outcome"`
	PerCredit float64            `json:"per_credit"`
}

func (r *StartsReport) String() string {
	if r == nil {
		return "not measured"
	}
	total := 0.0
	for _, v := range r.ByOutcome {
		total += v
	}
	return fmt.Sprintf("%.0f (new %.0f, restarted %.0f, open %.0f, closing %.0f, failed %.0f): %.2f per credit",
		total, r.ByOutcome[durable.StartedNew], r.ByOutcome[durable.StartedAgain], r.ByOutcome[durable.StartedOpen],
		r.ByOutcome[durable.StartedClosing], r.ByOutcome[durable.StartFailed], r.PerCredit)
}

// startsReport is the starts between two readings, per credit of the
// drain.
func startsReport(before, after map[string]float64, credits int64) *StartsReport {
	r := &StartsReport{ByOutcome: map[string]float64{}}
	total := 0.0
	for outcome, v := range after {
		if d := v - before[outcome]; d > 0 {
			r.ByOutcome[outcome] = d
			total += d
		}
	}
	if credits > 0 {
		r.PerCredit = total / float64(credits)
	}
	return r
}
