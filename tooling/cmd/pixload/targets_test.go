package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/tooling/load"
)

// fakeReport is a run whose every figure is known: ceilings of 5,000/s
// (single) and 10,000/s and 20,000/s (grouped); a sweep whose 2,000/s step
// passed and whose 4,000/s step saturated; credits at 100/s against a best
// engine ceiling of 125/s; CPU per credit 22 ms against 20 ms per no-op.
func fakeReport() *Report {
	return &Report{
		Label: "temporal-postgres", Topology: "1+1",
		IngestCeilingPerSec: 5000,
		GroupedCeilings:     []GroupedCeiling{{Batch: 8, PerSecond: 10000}, {Batch: 32, PerSecond: 20000}},
		EngineCeilingPerSec: map[string]float64{string(load.EngineActivity): 30, string(load.EngineLocalEager): 125},
		EngineCeilingCPU: map[string]*CPUReport{
			string(load.EngineActivity): {MicrosPerOp: 90000},
			string(load.EngineLocalEager): {MicrosPerOp: 20000, Shares: []load.CPUShare{
				{Name: "temporal-server", MicrosOp: 15000}, {Name: "pixload", MicrosOp: 2000}, {Name: "postgres", MicrosOp: 3000}}},
		},
		Steps: []StepReport{
			{Rate: 1000, AcceptedPerSec: 1050, AckP99Ms: 10, CPU: &CPUReport{MicrosPerOp: 700, Shares: []load.CPUShare{{Name: "pixd api", MicrosOp: 130}}}},
			{Rate: 2000, AcceptedPerSec: 2100, AckP99Ms: 40, CPU: &CPUReport{MicrosPerOp: 600, Shares: []load.CPUShare{{Name: "pixd api", MicrosOp: 90}}}},
			{Rate: 4000, AcceptedPerSec: 4200, AckP99Ms: 400, Errors: map[string]int64{"http 503": 10}, CPU: &CPUReport{MicrosPerOp: 500, Shares: []load.CPUShare{{Name: "pixd api", MicrosOp: 80}}}},
		},
		BestIngestPerSec: 2100,
		Saturated:        true,
		SweepMemory: []load.MemoryPeak{
			{Process: load.Process{Role: "api", PID: 1}, PeakRSSBytes: 60 << 20, HWMBytes: 80 << 20},
			{Process: load.Process{Role: "api", PID: 2}, PeakRSSBytes: 90 << 20, HWMBytes: 120 << 20},
			{Process: load.Process{Role: "worker", PID: 3}, PeakRSSBytes: 500 << 20, HWMBytes: 500 << 20},
		},
		CreditsPerSec: 100,
		DrainCPU: &CPUReport{MicrosPerOp: 22000, Shares: []load.CPUShare{
			{Name: "temporal-server", MicrosOp: 15500}, {Name: "pixd worker", MicrosOp: 3000}, {Name: "postgres", MicrosOp: 3500}}},
		IdleAckToCreditedP50:   12,
		EngineIdleLatencyP50Ms: 10,
	}
}

func byFigure(t *testing.T, targets []Target) map[string]Target {
	out := map[string]Target{}
	for _, tg := range targets {
		require.NotContains(t, out, tg.Figure, "one row per figure")
		out[tg.Figure] = tg
	}
	return out
}

func requireFigure(t *testing.T, got map[string]Target, figure string, want float64, met *bool) {
	t.Helper()
	tg, ok := got[figure]
	require.True(t, ok, "figure %q reported", figure)
	require.NotNil(t, tg.Measured, "figure %q measured: %s", figure, tg.Note)
	require.InDelta(t, want, *tg.Measured, 1e-9, figure)
	require.Equal(t, met, tg.Met, figure)
}

func TestTargetsFromAKnownReport(t *testing.T) {
	got := byFigure(t, computeTargets(fakeReport()))
	yes, no := ptr(true), ptr(false)
	requireFigure(t, got, "webhooks accepted at p99 ≤ 50 ms ÷ single-insert ceiling (one commit each)", 2100.0/5000, no)
	requireFigure(t, got, "the same ÷ grouped-insert ceiling (8 rows per commit)", 2100.0/10000, nil)
	requireFigure(t, got, "the same ÷ grouped-insert ceiling (32 rows per commit)", 2100.0/20000, nil)
	// Read at the best passing step (2,000/s), not the cheapest (4,000/s, saturated).
	requireFigure(t, got, "API CPU per webhook", 90, yes)
	require.Contains(t, got["API CPU per webhook"].Detail, "2,000 arrivals/s")
	// The highest of the API processes' peaks; the worker's is not the API's.
	requireFigure(t, got, "API resident memory at peak, through saturation", 120, no)
	requireFigure(t, got, "credits/s ÷ best no-op engine ceiling", 100.0/125, no)
	requireFigure(t, got, "CPU per credit ÷ CPU per no-op workflow (all processes)", 22000.0/20000, yes)
	requireFigure(t, got, "the same, the engine's and the worker's share", (15500.0+3000)/(15000+2000), yes)
	requireFigure(t, got, "idle acknowledgement → credited p50 ÷ paced engine latency", 1.2, yes)
	require.Len(t, got, 9)

	var text bytes.Buffer
	printTargets(&text, computeTargets(fakeReport()))
	for _, want := range []string{"42%", "≥ 80% (stretch ≥ 100%)", "NOT met", "90 µs", "120 MB", "1.10×", "2,100/s ÷ 5,000/s"} {
		require.Contains(t, text.String(), want)
	}
}

func TestTargetsSayWhatARunCouldNotMeasure(t *testing.T) {
	// No ceilings, no CPU accounting, no idle phase, no process watched.
	rep := &Report{Steps: []StepReport{{Rate: 1000, AcceptedPerSec: 1000, AckP99Ms: 10}}, BestIngestPerSec: 1000, CreditsPerSec: 50}
	targets := computeTargets(rep)
	require.Len(t, targets, 8, "every figure has its row, measured or not")
	for _, tg := range targets {
		require.Nil(t, tg.Measured, tg.Figure)
		require.Nil(t, tg.Met, tg.Figure)
		require.NotEmpty(t, tg.Note, "%s says why it is missing", tg.Figure)
	}
	var text bytes.Buffer
	printTargets(&text, targets)
	require.Contains(t, text.String(), "not measured")
}

func TestTargetsMemoryOnlyCountsThroughSaturation(t *testing.T) {
	rep := fakeReport()
	rep.Saturated = false
	got := byFigure(t, computeTargets(rep))
	mem := got["API resident memory at peak, through saturation"]
	require.NotNil(t, mem.Measured)
	require.Nil(t, mem.Met, "a sweep that did not saturate gives no verdict")
	require.Contains(t, mem.Note, "did not saturate")
}

func TestTargetsWithNoPassingStepReadTheFirst(t *testing.T) {
	rep := fakeReport()
	for i := range rep.Steps {
		rep.Steps[i].AckP99Ms = 100
	}
	rep.BestIngestPerSec = 0
	got := byFigure(t, computeTargets(rep))
	requireFigure(t, got, "API CPU per webhook", 130, ptr(false))
	requireFigure(t, got, "webhooks accepted at p99 ≤ 50 ms ÷ single-insert ceiling (one commit each)", 0, ptr(false))
	require.Contains(t, got["webhooks accepted at p99 ≤ 50 ms ÷ single-insert ceiling (one commit each)"].Note, "no step kept")
}

func TestStepOverloaded(t *testing.T) {
	require.False(t, StepReport{AckP99Ms: 50}.overloaded())
	require.False(t, StepReport{AckP99Ms: 10, Errors: map[string]int64{"http 400": 3}}.overloaded(), "our own bad request is no overload")
	require.True(t, StepReport{AckP99Ms: 51}.overloaded())
	require.True(t, StepReport{AckP99Ms: 10, Unacked: 1}.overloaded())
	require.True(t, StepReport{AckP99Ms: 10, Errors: map[string]int64{"http 503": 1}}.overloaded())
	require.True(t, StepReport{AckP99Ms: 10, Errors: map[string]int64{"transport: timeout": 1}}.overloaded())
}

func TestReplicaCostComparesAtACommonPassingRate(t *testing.T) {
	base := fakeReport()
	this := fakeReport()
	this.Topology = "2+2"
	this.Steps = []StepReport{
		{Rate: 1000, AckP99Ms: 10, CPU: &CPUReport{MicrosPerOp: 800, Shares: []load.CPUShare{{Name: "pixd api", MicrosOp: 150}}}},
		{Rate: 2000, AckP99Ms: 30, CPU: &CPUReport{MicrosPerOp: 660, Shares: []load.CPUShare{{Name: "pixd api", MicrosOp: 108}}}},
		{Rate: 3000, AckP99Ms: 30, CPU: &CPUReport{MicrosPerOp: 1, Shares: []load.CPUShare{{Name: "pixd api", MicrosOp: 1}}}},
	}
	this.DrainCPU = &CPUReport{MicrosPerOp: 26400, Shares: []load.CPUShare{{Name: "pixd worker", MicrosOp: 4500}, {Name: "temporal-server", MicrosOp: 15500}}}
	this.CreditsPerSec = 110
	rc := replicaCost(base, this)
	require.Equal(t, "temporal-postgres 1+1", rc.Baseline)
	require.Equal(t, "temporal-postgres 2+2", rc.This)
	ratios := map[string]float64{}
	for _, f := range rc.Figures {
		ratios[f.Figure] = f.Ratio
	}
	// 2,000/s is the highest rate both ran and both passed (3,000/s: only this one ran it).
	require.InDelta(t, 1.1, ratios["CPU per webhook, all processes at 2,000 arrivals/s"], 1e-9)
	require.InDelta(t, 1.2, ratios["CPU per webhook, the API(s) at 2,000 arrivals/s"], 1e-9)
	require.InDelta(t, 1.2, ratios["CPU per credit, all processes"], 1e-9)
	require.InDelta(t, 1.5, ratios["CPU per credit, the worker(s)"], 1e-9)
	require.InDelta(t, 1.0, ratios["CPU per credit, Temporal"], 1e-9)
	require.InDelta(t, 1.1, ratios["credits/s"], 1e-9)
	_, hasPG := ratios["CPU per credit, PostgreSQL"]
	require.False(t, hasPG, "a figure missing from one run is left out, not divided by zero")

	var text bytes.Buffer
	printReplicaCost(&text, rc)
	require.Contains(t, text.String(), "1.20×")
}

func TestCommonStepFallsBackToTheLowestSharedRate(t *testing.T) {
	base := &Report{Steps: []StepReport{{Rate: 1000, AckP99Ms: 80, CPU: &CPUReport{}}, {Rate: 2000, AckP99Ms: 90, CPU: &CPUReport{}}}}
	this := &Report{Steps: []StepReport{{Rate: 2000, AckP99Ms: 10, CPU: &CPUReport{}}, {Rate: 1000, AckP99Ms: 10, CPU: &CPUReport{}}}}
	b, tt, ok := commonStep(base, this)
	require.True(t, ok)
	require.Equal(t, 1000.0, b.Rate)
	require.Equal(t, 1000.0, tt.Rate)
	_, _, ok = commonStep(base, &Report{Steps: []StepReport{{Rate: 500, CPU: &CPUReport{}}}})
	require.False(t, ok)
}

func TestSummaryPrintsEveryRunSideBySide(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, rep *Report) string {
		if rep.Soak == nil {
			rep.Targets = computeTargets(rep)
		}
		b, err := json.Marshal(rep)
		require.NoError(t, err)
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, b, 0o644))
		return p
	}
	dev := fakeReport()
	dev.Label = "temporal-dev-sqlite"
	pg := fakeReport()
	pg.Violations = []string{"3 inbox rows left pending"}
	two := fakeReport()
	two.Topology = "2+2"
	two.ReplicaCost = replicaCost(pg, two)
	soak := &Report{Label: "soak", Soak: &SoakReport{Webhooks: 2000, Credits: 1400}}
	var out bytes.Buffer
	require.NoError(t, summarize([]string{write("a.json", dev), write("b.json", pg), write("c.json", two), write("d.json", soak)}, &out))
	text := out.String()
	header := strings.SplitN(text, "\n", 3)[1]
	for _, name := range []string{"temporal-dev-sqlite 1+1", "temporal-postgres 1+1", "temporal-postgres 2+2"} {
		require.Contains(t, header, name)
	}
	require.Contains(t, text, "42% (NOT met)")
	require.Contains(t, text, "cost of the replicas")
	require.Contains(t, text, "soak")
	require.Contains(t, text, "temporal-postgres 1+1: VIOLATED: 3 inbox rows left pending")
	require.NotContains(t, text, "not measured", "a soak has no targets row")

	require.Error(t, summarize(nil, &out))
	require.Error(t, summarize([]string{filepath.Join(dir, "missing.json")}, &out))
}

func TestWithProcessesSplitsTheCPUByReplica(t *testing.T) {
	u := &load.CPUUse{Procs: map[string]time.Duration{"pixd api": 300 * time.Millisecond}, ByPID: map[int]time.Duration{10: 200 * time.Millisecond, 11: 100 * time.Millisecond}}
	r := cpuReport(u, 1000).withProcesses(u, []load.Process{{Role: "api", PID: 10}, {Role: "api", PID: 11}, {Role: "worker", PID: 12}}, 1000)
	require.Equal(t, []ProcessShare{{load.Process{Role: "api", PID: 10}, 200}, {load.Process{Role: "api", PID: 11}, 100}, {load.Process{Role: "worker", PID: 12}, 0}}, r.Processes)
	require.Contains(t, r.String(), "by process: api 10 200 µs, api 11 100 µs, worker 12 0 µs")
	var none *CPUReport
	require.Nil(t, none.withProcesses(u, nil, 1000), "no accounting stays none")
}

func TestParseFlagsReadsTheReplicasAndGroupedBatches(t *testing.T) {
	t.Setenv("WEBHOOK_SECRETS", "")
	f, err := parseFlags([]string{"-api", "http://a:1/, http://b:2", "-grouped-batches", "8,32", "-watch", "api=1,worker=2", "-rates", "500,1000"})
	require.NoError(t, err)
	require.Equal(t, []string{"http://a:1", "http://b:2"}, f.apis)
	require.Equal(t, []int{8, 32}, f.groupedBatches)
	require.Equal(t, []float64{500, 1000}, f.rates)
	require.Equal(t, []load.Process{{Role: "api", PID: 1}, {Role: "worker", PID: 2}}, f.watch)

	f, err = parseFlags([]string{"-grouped-batches", ""})
	require.NoError(t, err)
	require.Empty(t, f.groupedBatches)
	for _, bad := range [][]string{{"-grouped-batches", "1"}, {"-rates", "0"}, {"-rates", ""}, {"-api", ","}, {"-watch", "api"}, {"-soak", "-1"}} {
		_, err := parseFlags(bad)
		require.Error(t, err, "%v", bad)
	}
}

func TestDBReportPerOperation(t *testing.T) {
	r := dbReport(&load.DBUse{Commits: map[string]int64{"pix_bench": 250, "temporal_bench": 1200}, WriteXacts: 1300, WALBytes: 500_000}, 200)
	require.Equal(t, map[string]float64{"pix_bench": 1.25, "temporal_bench": 6}, r.CommitsPerOp)
	require.InDelta(t, 2500, r.WALBytesPerOp, 1e-9)
	require.InDelta(t, 6.5, r.WriteXactsPerOp, 1e-9)
	require.Equal(t, "6.50 write transactions, 2500 bytes of WAL (the server's); commits pix_bench 1.25, temporal_bench 6.00", r.String())
	require.Nil(t, dbReport(nil, 10))
	require.Nil(t, dbReport(&load.DBUse{}, 0))
}
