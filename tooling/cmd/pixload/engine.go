package main

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pixbank/pix/tooling/load"
)

// engineRounds is how many rounds the local-activity, eager-start shapes
// are measured in, each round running both (unversioned, then versioned)
// with -engine-workflows ÷ engineRounds runs: A/B/A/B, so that the
// machine's load, which moves within a run, weighs on both alike.
const engineRounds = 2

// engineShapes are the engine ceiling's no-op shapes, measured in this
// order: the activity's alone, then the eager local activity's unversioned
// and versioned in alternation (engineRounds). The versioned one is
// measured whatever the workers are: beside the unversioned one it is what
// Worker Versioning costs the engine.
var engineShapes = []load.EngineMode{load.EngineActivity, load.EngineLocalEager, load.EngineLocalEagerVersioned}

// shapeTotal is what one shape's rounds measured together.
type shapeTotal struct {
	runs    int
	seconds float64
	rates   []float64 // each round's
	cpu     *load.CPUUse
	db      *load.DBUse
}

// perSec is the shape's runs over the time of its rounds.
func (t *shapeTotal) perSec() float64 { return float64(t.runs) / t.seconds }

// measureShapes runs n no-op workflows of each shape (-engine-concurrency
// starters), in rounds: the activity's alone, the eager local-activity
// shapes in alternation, engineRounds rounds of n ÷ engineRounds each,
// unversioned then versioned. It returns each shape's rate, the machine's
// CPU and PostgreSQL's work over its rounds.
func measureShapes(ctx context.Context, f flags, pool *pgxpool.Pool, engine *load.Engine, shapes []load.EngineMode, what string, say func(string, ...any)) (map[load.EngineMode]*shapeTotal, error) {
	totals := map[load.EngineMode]*shapeTotal{}
	measure := func(mode load.EngineMode, n int) error {
		var use *load.CPUUse
		var perSec float64
		dbUse, err := load.MeasureDB(ctx, pool, f.otherDBs, func() (err error) {
			use, err = load.MeasureCPU(func() error {
				perSec, err = engine.Throughput(ctx, mode, n, f.engineConc)
				return err
			})
			return err
		})
		if err != nil {
			return err
		}
		t := totals[mode]
		if t == nil {
			t = &shapeTotal{}
			totals[mode] = t
		}
		t.runs += n
		t.seconds += float64(n) / perSec
		t.rates = append(t.rates, perSec)
		t.cpu, t.db = addCPU(t.cpu, use), addDB(t.db, dbUse)
		say("  %.1f workflows/s", perSec)
		return nil
	}
	var alternating []load.EngineMode
	for _, mode := range shapes {
		if mode != load.EngineLocalEager && !mode.Versioned() {
			say("%s: %d no-op workflows (%s), %d concurrent starts ...", what, f.engineN, mode, f.engineConc)
			if err := measure(mode, f.engineN); err != nil {
				return nil, err
			}
			continue
		}
		alternating = append(alternating, mode)
	}
	per := max(1, f.engineN/engineRounds)
	for round := range engineRounds {
		for _, mode := range alternating {
			say("%s, round %d of %d: %d no-op workflows (%s), %d concurrent starts ...", what, round+1, engineRounds, per, mode, f.engineConc)
			if err := measure(mode, per); err != nil {
				return nil, err
			}
		}
	}
	for _, mode := range shapes {
		t := totals[mode]
		line := fmt.Sprintf("%s (%s): %.1f workflows/s", what, mode, t.perSec())
		if len(t.rates) > 1 {
			line += fmt.Sprintf(" over %d rounds (%s)", len(t.rates), perSecList(t.rates))
		}
		say("%s", line)
	}
	if v, u := totals[load.EngineLocalEagerVersioned], totals[load.EngineLocalEager]; v != nil && u != nil {
		say("%s: a versioned worker's eager local activity at %.0f%% of an unversioned one's (%.1f ÷ %.1f/s)", what, 100*v.perSec()/u.perSec(), v.perSec(), u.perSec())
	}
	return totals, nil
}

// measureEngineCeilings measures every shape (engineShapes) into rep:
// EngineCeilingPerSec (runs over the time of its rounds),
// EngineCeilingRounds (each round's rate), the machine's CPU and
// PostgreSQL's work per workflow. A versioned worker the server refuses (a
// server without Worker Deployments) leaves the versioned shape out, said.
func measureEngineCeilings(ctx context.Context, f flags, pool *pgxpool.Pool, engine *load.Engine, rep *Report, say func(string, ...any)) error {
	shapes := slices.Clone(engineShapes)
	if err := engine.StartVersioned(ctx); err != nil {
		say("engine ceiling: no versioned worker, its shape is not measured: %v", err)
		shapes = slices.DeleteFunc(shapes, load.EngineMode.Versioned)
	}
	totals, err := measureShapes(ctx, f, pool, engine, shapes, "engine ceiling", say)
	if err != nil {
		return err
	}
	procs := watched(f)
	rep.EngineCeilingRounds = map[string][]float64{}
	for _, mode := range shapes {
		t := totals[mode]
		rep.EngineCeilingPerSec[string(mode)] = t.perSec()
		rep.EngineCeilingRounds[string(mode)] = t.rates
		if r := cpuReport(t.cpu, int64(t.runs)).withProcesses(t.cpu, procs, int64(t.runs)); r != nil {
			rep.EngineCeilingCPU[string(mode)] = r
			say("  CPU per workflow (%s): %s", mode, r)
		}
		if r := dbReport(t.db, int64(t.runs)); r != nil {
			rep.EngineCeilingDB[string(mode)] = r
			say("  PostgreSQL per workflow (%s): %s", mode, r)
		}
	}
	return nil
}

// engineAfterDrain measures the eager local-activity shapes again, in
// alternating rounds as before the sweep, on the server as the drain left
// it (its history and persistence grown by the run's workflows): the credit
// rate was measured between the two states. It records each shape's rate
// and CPU per workflow (EngineAfterDrainByShape, EngineAfterDrainCPU); the
// verdict stays against the ceilings measured first.
func engineAfterDrain(ctx context.Context, f flags, pool *pgxpool.Pool, engine *load.Engine, rep *Report, say func(string, ...any)) error {
	shapes := slices.DeleteFunc(slices.Clone(engineShapes[1:]), func(m load.EngineMode) bool {
		_, measured := rep.EngineCeilingPerSec[string(m)]
		return !measured
	})
	totals, err := measureShapes(ctx, f, pool, engine, shapes, "engine ceiling after the drain", say)
	if err != nil {
		return err
	}
	procs := watched(f)
	rep.EngineAfterDrainByShape, rep.EngineAfterDrainCPU = map[string]float64{}, map[string]*CPUReport{}
	for _, mode := range shapes {
		t := totals[mode]
		rep.EngineAfterDrainByShape[string(mode)] = t.perSec()
		if r := cpuReport(t.cpu, int64(t.runs)).withProcesses(t.cpu, procs, int64(t.runs)); r != nil {
			rep.EngineAfterDrainCPU[string(mode)] = r
			say("  CPU per workflow (%s): %s", mode, r)
		}
	}
	return nil
}

// servicesEngine is the engine ceiling the credits are measured against:
// the best no-op shape that runs as the service's workers run, versioned or
// not (WorkersVersioned); the best of all when the run measured none of
// that kind (a report from before the versioned shape).
func (rep *Report) servicesEngine() (perSec float64, mode string) {
	ofKind := func(m string) bool { return load.EngineMode(m).Versioned() == rep.WorkersVersioned }
	any := slices.ContainsFunc(slices.Collect(maps.Keys(rep.EngineCeilingPerSec)), ofKind)
	for m, v := range rep.EngineCeilingPerSec {
		if any && !ofKind(m) {
			continue
		}
		if v > perSec {
			perSec, mode = v, m
		}
	}
	return perSec, mode
}

// sayCreditsAgainstEngines prints the credit rate against every eager
// local-activity ceiling, before and after the drain: the service's share
// of the gap (against the ceiling of its own versioning) apart from the
// engine's (the versioned ceiling against the unversioned).
func sayCreditsAgainstEngines(rep *Report, say func(string, ...any)) {
	for _, mode := range engineShapes[1:] {
		before, after := rep.EngineCeilingPerSec[string(mode)], rep.EngineAfterDrainByShape[string(mode)]
		if before <= 0 {
			continue
		}
		line := fmt.Sprintf("    against the ceiling of %s: %.0f%% (%.1f/s)", mode, 100*rep.CreditsPerSec/before, before)
		if after > 0 {
			// The drain ran on the server between the two states (its
			// history and visibility growing): their mean is the ceiling
			// of neither alone.
			line += fmt.Sprintf(", after the drain %.0f%% (%.1f/s), of their mean %.0f%%", 100*rep.CreditsPerSec/after, after, 200*rep.CreditsPerSec/(before+after))
		}
		if c := rep.DrainCPU; c != nil && c.MicrosPerOp > 0 {
			for _, cpu := range []struct {
				when string
				r    *CPUReport
			}{{"before", rep.EngineCeilingCPU[string(mode)]}, {"after", rep.EngineAfterDrainCPU[string(mode)]}} {
				if cpu.r != nil && cpu.r.MicrosPerOp > 0 {
					line += fmt.Sprintf("; CPU per credit %.2f× a no-op's %s", c.MicrosPerOp/cpu.r.MicrosPerOp, cpu.when)
				}
			}
		}
		say("%s", line)
	}
}

func perSecList(rates []float64) string {
	parts := make([]string, len(rates))
	for i, r := range rates {
		parts[i] = fmt.Sprintf("%.1f/s", r)
	}
	return strings.Join(parts, ", ")
}

// addCPU is a's and b's CPU time together (nil counts as none): the
// rounds of one shape, measured apart.
func addCPU(a, b *load.CPUUse) *load.CPUUse {
	if a == nil || b == nil {
		if a == nil {
			return b
		}
		return a
	}
	sum := load.CPUUse{Wall: a.Wall + b.Wall, Busy: a.Busy + b.Busy, Steal: a.Steal + b.Steal,
		Procs: maps.Clone(a.Procs), ByPID: maps.Clone(a.ByPID)}
	for k, v := range b.Procs {
		sum.Procs[k] += v
	}
	for k, v := range b.ByPID {
		sum.ByPID[k] += v
	}
	return &sum
}

// addDB is a's and b's PostgreSQL work together (nil counts as none).
func addDB(a, b *load.DBUse) *load.DBUse {
	if a == nil || b == nil {
		if a == nil {
			return b
		}
		return a
	}
	sum := load.DBUse{Commits: maps.Clone(a.Commits), WriteXacts: a.WriteXacts + b.WriteXacts, WALBytes: a.WALBytes + b.WALBytes}
	for k, v := range b.Commits {
		sum.Commits[k] += v
	}
	return &sum
}
