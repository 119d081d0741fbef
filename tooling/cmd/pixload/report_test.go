package main

import (
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/tooling/load"
)

// The ingest's CPU bound takes the step with the least CPU per webhook, and
// leaves out only the load generator's share for the estimate without it.
func TestIngestCPUBoundUsesTheCheapestStep(t *testing.T) {
	cpus := float64(runtime.NumCPU())
	rep := Report{IngestCeilingPerSec: 1000, Steps: []StepReport{
		{Rate: 100, CPU: &CPUReport{MicrosPerOp: 1000, Shares: []load.CPUShare{{Name: "pixload", MicrosOp: 400}}}},
		{Rate: 200}, // no accounting (not Linux): skipped
		{Rate: 300, CPU: &CPUReport{MicrosPerOp: 800, Shares: []load.CPUShare{{Name: "postgres", MicrosOp: 500}, {Name: "pixload", MicrosOp: 200}}}},
	}}
	rep.ingestCPUBound()
	require.InDelta(t, cpus*1e6/800/1000, rep.IngestCPUBound, 1e-9)
	require.InDelta(t, cpus*1e6/600/1000, rep.IngestCPUBoundNoLoad, 1e-9)

	none := Report{IngestCeilingPerSec: 1000, Steps: []StepReport{{Rate: 100}}}
	none.ingestCPUBound()
	require.Zero(t, none.IngestCPUBound)
	require.Zero(t, none.IngestCPUBoundNoLoad)
}

// The starts over a drain are the counters' differences, per credit.
func TestStartsReportIsTheDrainsDifference(t *testing.T) {
	r := startsReport(map[string]float64{"new": 10, "open": 2}, map[string]float64{"new": 110, "open": 52, "failed": 3}, 100)
	require.Equal(t, map[string]float64{"new": 100, "open": 50, "failed": 3}, r.ByOutcome)
	require.InDelta(t, 1.53, r.PerCredit, 1e-9)
	require.Equal(t, "153 (new 100, restarted 0, open 50, closing 0, failed 3): 1.53 per credit", r.String())
	require.Equal(t, "not measured", (*StartsReport)(nil).String())
}
