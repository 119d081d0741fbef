package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/tooling/load"
)

// The credits are measured against the no-op shape of their workers'
// versioning, even when the other kind's ceiling is higher.
func TestCreditsAreMeasuredAgainstTheCeilingOfTheirWorkersKind(t *testing.T) {
	rep := fakeReport()
	rep.EngineCeilingPerSec[string(load.EngineLocalEagerVersioned)] = 110
	perSec, mode := rep.servicesEngine()
	require.Equal(t, 125.0, perSec, "unversioned workers: the best unversioned shape")
	require.Equal(t, string(load.EngineLocalEager), mode)

	rep.WorkersVersioned = true
	perSec, mode = rep.servicesEngine()
	require.Equal(t, 110.0, perSec, "versioned workers: the versioned shape")
	require.Equal(t, string(load.EngineLocalEagerVersioned), mode)
	requireFigure(t, byFigure(t, computeTargets(rep)), "credits/s ÷ best no-op engine ceiling", 100.0/110, ptr(true))

	// A report from before the versioned shape: the best of what it has.
	delete(rep.EngineCeilingPerSec, string(load.EngineLocalEagerVersioned))
	perSec, mode = rep.servicesEngine()
	require.Equal(t, 125.0, perSec)
	require.Equal(t, string(load.EngineLocalEager), mode)
}

// A shape measured in rounds is reported from the rounds together.
func TestRoundsAddUp(t *testing.T) {
	a := &load.CPUUse{Wall: time.Second, Busy: time.Second, Procs: map[string]time.Duration{"temporal": 300 * time.Millisecond, "pixload": 100 * time.Millisecond},
		ByPID: map[int]time.Duration{7: 300 * time.Millisecond}}
	b := &load.CPUUse{Wall: 2 * time.Second, Busy: 3 * time.Second, Steal: time.Millisecond, Procs: map[string]time.Duration{"temporal": 500 * time.Millisecond, "postgres": 50 * time.Millisecond},
		ByPID: map[int]time.Duration{7: 500 * time.Millisecond, 8: 50 * time.Millisecond}}
	sum := addCPU(addCPU(nil, a), b)
	require.Equal(t, 3*time.Second, sum.Wall)
	require.Equal(t, 4*time.Second, sum.Busy)
	require.Equal(t, time.Millisecond, sum.Steal)
	require.Equal(t, map[string]time.Duration{"temporal": 800 * time.Millisecond, "pixload": 100 * time.Millisecond, "postgres": 50 * time.Millisecond}, sum.Procs)
	require.Equal(t, map[int]time.Duration{7: 800 * time.Millisecond, 8: 50 * time.Millisecond}, sum.ByPID)
	require.Equal(t, 300*time.Millisecond, a.Procs["temporal"], "the rounds' own readings are left as they were")

	db := addDB(addDB(nil, &load.DBUse{Commits: map[string]int64{"pix": 3}, WriteXacts: 2, WALBytes: 100}),
		&load.DBUse{Commits: map[string]int64{"pix": 1, "temporal_bench": 4}, WriteXacts: 5, WALBytes: 50})
	require.Equal(t, &load.DBUse{Commits: map[string]int64{"pix": 4, "temporal_bench": 4}, WriteXacts: 7, WALBytes: 150}, db)
}
