package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// Target is one figure of issue 17's table: what this run measured, against
// its target. The targets are reported, never enforced: only an invariant
// makes pixload fail.
type Target struct {
	Figure string `json:"figure"`
	// Measured is nil when this run could not measure the figure (no
	// ceilings, no CPU accounting, no idle phase); Note says why.
	Measured *float64 `json:"measured"`
	// Unit: "%" (a ratio, printed as a percentage), "×" (a ratio), "µs",
	// "MB" (2^20 bytes).
	Unit string `json:"unit"`
	// Detail is the measurement the figure is made of ("2,138/s ÷ 5,122/s").
	Detail string `json:"detail,omitempty"`
	Target string `json:"target"`
	// Met is nil for a figure that is only reported, or not measured.
	Met  *bool  `json:"met"`
	Note string `json:"note,omitempty"`
}

func (t Target) measured() string {
	if t.Measured == nil {
		return "not measured"
	}
	v := *t.Measured
	switch t.Unit {
	case "%":
		return fmt.Sprintf("%.0f%%", 100*v)
	case "×":
		return fmt.Sprintf("%.2f×", v)
	case "µs":
		return fmt.Sprintf("%.0f µs", v)
	case "MB":
		return fmt.Sprintf("%.0f MB", v)
	}
	return fmt.Sprintf("%.3g", v)
}

func (t Target) verdict() string {
	switch {
	case t.Met == nil:
		return "-"
	case *t.Met:
		return "met"
	}
	return "NOT met"
}

func ptr[T any](v T) *T { return &v }

// atMost and atLeast make a measured figure with its verdict.
func atMost(v, limit float64) (*float64, *bool)  { return &v, ptr(v <= limit) }
func atLeast(v, limit float64) (*float64, *bool) { return &v, ptr(v >= limit) }

// computeTargets works out every figure of the table from the report.
func computeTargets(rep *Report) []Target {
	var out []Target

	// Ingest against the single-insert ceiling, and against each grouped one.
	ingest := Target{Figure: "webhooks accepted at p99 ≤ 50 ms ÷ single-insert ceiling (one commit each)", Unit: "%", Target: "≥ 80% (stretch ≥ 100%)"}
	switch {
	case rep.IngestCeilingPerSec <= 0:
		ingest.Note = "no ingest ceiling in this run (-ceilings=false)"
	default:
		ingest.Measured, ingest.Met = atLeast(rep.BestIngestPerSec/rep.IngestCeilingPerSec, 0.8)
		ingest.Detail = fmt.Sprintf("%s/s ÷ %s/s", thousands(rep.BestIngestPerSec), thousands(rep.IngestCeilingPerSec))
		if rep.BestIngestPerSec == 0 {
			ingest.Note = "no step kept p99 ≤ 50 ms"
		} else if *ingest.Measured >= 1 {
			ingest.Note = "stretch target met"
		}
	}
	out = append(out, ingest)
	if len(rep.GroupedCeilings) == 0 {
		out = append(out, Target{Figure: "the same ÷ grouped-insert ceiling", Unit: "%", Target: "reported",
			Note: "no grouped ceiling in this run (-grouped-batches)"})
	}
	for _, g := range rep.GroupedCeilings {
		t := Target{Figure: fmt.Sprintf("the same ÷ grouped-insert ceiling (%d rows per commit)", g.Batch), Unit: "%", Target: "reported"}
		if g.PerSecond > 0 {
			t.Measured = ptr(rep.BestIngestPerSec / g.PerSecond)
			t.Detail = fmt.Sprintf("%s/s ÷ %s/s", thousands(rep.BestIngestPerSec), thousands(g.PerSecond))
		}
		out = append(out, t)
	}

	// The API's CPU per webhook at the operating step.
	cpu := Target{Figure: "API CPU per webhook", Unit: "µs", Target: "≤ 100 µs"}
	switch st := rep.operatingStep(); {
	case st == nil:
		cpu.Note = "no step"
	case st.CPU == nil:
		cpu.Note = "no CPU accounting (not Linux)"
	default:
		cpu.Measured, cpu.Met = atMost(st.CPU.share(apiProcess), 100)
		cpu.Detail = fmt.Sprintf("%s of %.0f µs of the machine's, at %s arrivals/s", apiProcess, st.CPU.MicrosPerOp, thousands(st.Rate))
		if !st.passed() {
			cpu.Note = "no step kept p99 ≤ 50 ms: read at the first step"
		}
	}
	out = append(out, cpu)

	// The API's resident memory through saturation.
	mem := Target{Figure: "API resident memory at peak, through saturation", Unit: "MB", Target: "≤ 100 MB"}
	if peak, n := peakOf(rep.SweepMemory, "api"); n == 0 {
		mem.Note = "no API process watched (-watch, or no /proc)"
	} else {
		mem.Measured, mem.Met = atMost(mib(peak), 100)
		mem.Detail = fmt.Sprintf("the highest VmHWM of %d API process(es) at the sweep's end", n)
		if !rep.Saturated {
			mem.Met = nil
			mem.Note = "the sweep did not saturate the API: add a higher rate (-rates)"
		}
	}
	out = append(out, mem)

	// Credits against the engine.
	best, bestMode := rep.servicesEngine()
	credits := Target{Figure: "credits/s ÷ best no-op engine ceiling", Unit: "%", Target: "≥ 90%"}
	if best <= 0 {
		credits.Note = "no engine ceiling in this run (-ceilings=false)"
	} else {
		credits.Measured, credits.Met = atLeast(rep.CreditsPerSec/best, 0.9)
		credits.Detail = fmt.Sprintf("%.1f/s ÷ %.1f/s (%s)", rep.CreditsPerSec, best, bestMode)
	}
	out = append(out, credits)

	engineCPU := rep.EngineCeilingCPU[bestMode]
	perCredit := Target{Figure: "CPU per credit ÷ CPU per no-op workflow (all processes)", Unit: "×", Target: "≤ 1.1"}
	share := Target{Figure: "the same, the engine's and the worker's share", Unit: "×", Target: "≤ 1.1"}
	if engineCPU == nil || rep.DrainCPU == nil || engineCPU.MicrosPerOp <= 0 {
		perCredit.Note = "no CPU accounting of the drain and the engine ceiling"
		share.Note = perCredit.Note
	} else {
		perCredit.Measured, perCredit.Met = atMost(rep.DrainCPU.MicrosPerOp/engineCPU.MicrosPerOp, 1.1)
		perCredit.Detail = fmt.Sprintf("%.0f µs ÷ %.0f µs", rep.DrainCPU.MicrosPerOp, engineCPU.MicrosPerOp)
		// A credit's worker is pixd worker (dispatcher, credit, relay); the
		// no-op workflow's worker and starter is pixload itself.
		creditShare := rep.DrainCPU.share(append([]string{workerProcess}, rep.engineNames()...)...)
		noopShare := engineCPU.share(append([]string{loadGenerator}, rep.engineNames()...)...)
		if noopShare > 0 {
			share.Measured, share.Met = atMost(creditShare/noopShare, 1.1)
			share.Detail = fmt.Sprintf("Temporal + pixd worker %.0f µs ÷ Temporal + pixload %.0f µs", creditShare, noopShare)
		} else {
			share.Note = "the engine ceiling's accounting has no Temporal or pixload share"
		}
	}
	out = append(out, perCredit, share)

	idle := Target{Figure: "idle acknowledgement → credited p50 ÷ paced engine latency", Unit: "×", Target: "≤ 1.2"}
	if rep.IdleAckToCreditedP50 <= 0 || rep.EngineIdleLatencyP50Ms <= 0 {
		idle.Note = "no idle phase or no paced engine latency in this run"
	} else {
		idle.Measured, idle.Met = atMost(rep.IdleAckToCreditedP50/rep.EngineIdleLatencyP50Ms, 1.2)
		idle.Detail = fmt.Sprintf("%.1f ms ÷ %.1f ms", rep.IdleAckToCreditedP50, rep.EngineIdleLatencyP50Ms)
	}
	out = append(out, idle)
	return out
}

// printTargets writes the targets block.
func printTargets(w io.Writer, targets []Target) {
	fmt.Fprintln(w, "\ntargets")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  figure\tmeasured\ttarget\tmet?\tfrom")
	for _, t := range targets {
		from := t.Detail
		if t.Note != "" {
			from = strings.TrimPrefix(from+"; "+t.Note, "; ")
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", t.Figure, t.measured(), t.Target, t.verdict(), from)
	}
	tw.Flush()
}

// thousands prints v rounded, with thousands separators: 12,345.
func thousands(v float64) string {
	s := fmt.Sprintf("%.0f", v)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}
