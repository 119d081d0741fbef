package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"text/tabwriter"
)

// ReplicaCost compares a run with more replicas (this one) with a baseline
// run of fewer on the same Temporal server: what the second API and the
// second worker cost, per webhook and per credit. A ratio above 1 is the
// extra CPU the replicas spend for the same work (a second pool of
// connections, a second dispatcher and relay polling and claiming, a second
// SDK worker polling Temporal).
type ReplicaCost struct {
	Baseline string          `json:"baseline"`
	This     string          `json:"this"`
	Figures  []ReplicaFigure `json:"figures"`
}

// ReplicaFigure is one figure in both runs; Ratio is This ÷ Baseline.
type ReplicaFigure struct {
	Figure   string  `json:"figure"`
	Unit     string  `json:"unit"`
	Baseline float64 `json:"baseline"`
	This     float64 `json:"this"`
	Ratio    float64 `json:"ratio"`
}

// readReport reads a report pixload wrote with -json.
func readReport(path string) (*Report, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read report: %w", err)
	}
	var rep Report
	if err := json.Unmarshal(b, &rep); err != nil {
		return nil, fmt.Errorf("read report %s: %w", path, err)
	}
	return &rep, nil
}

// name says which run a report is: its label and topology.
func (rep *Report) name() string {
	switch {
	case rep.Label != "" && rep.Topology != "":
		return rep.Label + " " + rep.Topology
	case rep.Label != "":
		return rep.Label
	}
	return rep.Topology
}

// commonStep is the rate both runs' sweeps had at which to compare their
// CPU per webhook: the highest at which both kept p99 ≤ 50 ms, else the
// lowest they share. ok is false when they share none.
func commonStep(base, this *Report) (b, t StepReport, ok bool) {
	byRate := map[float64]StepReport{}
	for _, st := range base.Steps {
		byRate[st.Rate] = st
	}
	var passed, lowest *[2]StepReport
	for _, st := range this.Steps {
		bs, shared := byRate[st.Rate]
		if !shared || st.CPU == nil || bs.CPU == nil {
			continue
		}
		pair := [2]StepReport{bs, st}
		if lowest == nil || st.Rate < lowest[1].Rate {
			lowest = &pair
		}
		if bs.passed() && st.passed() && (passed == nil || st.Rate > passed[1].Rate) {
			passed = &pair
		}
	}
	if passed == nil {
		passed = lowest
	}
	if passed == nil {
		return b, t, false
	}
	return passed[0], passed[1], true
}

// replicaCost compares this run with the baseline.
func replicaCost(base, this *Report) *ReplicaCost {
	rc := &ReplicaCost{Baseline: base.name(), This: this.name()}
	add := func(figure, unit string, b, t float64) {
		if b <= 0 || t <= 0 {
			return
		}
		rc.Figures = append(rc.Figures, ReplicaFigure{Figure: figure, Unit: unit, Baseline: b, This: t, Ratio: t / b})
	}
	if bs, ts, ok := commonStep(base, this); ok {
		at := fmt.Sprintf(" at %s arrivals/s", thousands(ts.Rate))
		add("CPU per webhook, all processes"+at, "µs", bs.CPU.MicrosPerOp, ts.CPU.MicrosPerOp)
		add("CPU per webhook, the API(s)"+at, "µs", bs.CPU.share(apiProcess), ts.CPU.share(apiProcess))
		add("CPU per webhook, PostgreSQL"+at, "µs", bs.CPU.share("postgres"), ts.CPU.share("postgres"))
	}
	if base.DrainCPU != nil && this.DrainCPU != nil {
		add("CPU per credit, all processes", "µs", base.DrainCPU.MicrosPerOp, this.DrainCPU.MicrosPerOp)
		add("CPU per credit, the worker(s)", "µs", base.DrainCPU.share(workerProcess), this.DrainCPU.share(workerProcess))
		add("CPU per credit, Temporal", "µs", base.DrainCPU.share(base.engineNames()...), this.DrainCPU.share(this.engineNames()...))
		add("CPU per credit, PostgreSQL", "µs", base.DrainCPU.share("postgres"), this.DrainCPU.share("postgres"))
	}
	add("best accepted at p99 ≤ 50 ms", "/s", base.BestIngestPerSec, this.BestIngestPerSec)
	add("credits/s", "/s", base.CreditsPerSec, this.CreditsPerSec)
	bb, _ := base.servicesEngine()
	tb, _ := this.servicesEngine()
	add("best engine ceiling (the same server, for scale)", "/s", bb, tb)
	return rc
}

// printReplicaCost writes the comparison.
func printReplicaCost(w io.Writer, rc *ReplicaCost) {
	fmt.Fprintf(w, "\ncost of the replicas: %s against %s\n", rc.This, rc.Baseline)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "  figure\t%s\t%s\tratio\n", rc.Baseline, rc.This)
	for _, f := range rc.Figures {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%.2f×\n", f.Figure, withUnit(f.Baseline, f.Unit), withUnit(f.This, f.Unit), f.Ratio)
	}
	tw.Flush()
}

func withUnit(v float64, unit string) string {
	if unit == "/s" {
		if v < 100 {
			return fmt.Sprintf("%.1f/s", v)
		}
		return thousands(v) + "/s"
	}
	return fmt.Sprintf("%.0f %s", v, unit)
}
