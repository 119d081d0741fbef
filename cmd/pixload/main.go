// Command pixload drives a running PIX service with an open-model load of
// webhooks and reports, in one run: the ceilings (the same inbox insert
// straight at PostgreSQL; no-op workflows on the same Temporal server), the
// idle acknowledgement → credited latency, the accepted webhooks per second
// and acknowledgement latency at each rate of a sweep, the credit rate, the
// drain time, and the invariants checked in the database. Any invariant
// violation makes it exit non-zero; the targets are reported, not enforced.
//
// DATABASE_URL and the TEMPORAL_* variables (TEMPORAL_ADDRESS,
// TEMPORAL_NAMESPACE, TLS, API key) name the service's database and
// Temporal, as for pixd; -api names its HTTP API.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/internal/cli"
	"github.com/pixbank/pix/internal/codec"
	"github.com/pixbank/pix/internal/config"
	"github.com/pixbank/pix/internal/logging"
	"github.com/pixbank/pix/internal/tooling/load"
	"github.com/pixbank/pix/internal/webhooksig"
)

func main() {
	cli.Main("pixload", func(ctx context.Context, args []string) error { return run(ctx, args, os.Stdout) })
}

type flags struct {
	api                 string
	rates               []float64
	step                time.Duration
	accounts            int
	dup, burst          float64
	copies, maxInFlight int
	retryUnacked        bool
	retryFor            time.Duration
	drainTimeout        time.Duration
	ceilings            bool
	ingestConcurrency   int
	ingestFor           time.Duration
	engineN, engineConc int
	idleRate            float64
	idleFor             time.Duration
	jsonOut             string
	label               string
	pauseCmd, resumeCmd string
	warmup              time.Duration
	// signingKey signs the webhooks: the first secret of WEBHOOK_SECRETS,
	// the same variable the API reads.
	signingKey []byte
}

func parseFlags(args []string) (flags, error) {
	var f flags
	fs := flag.NewFlagSet("pixload", flag.ContinueOnError)
	rates := fs.String("rates", "200", "comma-separated arrival rates per second, one step each")
	fs.StringVar(&f.api, "api", envOr("PIX_API_URL", "http://127.0.0.1:8080"), "the service's HTTP API")
	fs.DurationVar(&f.step, "step", 20*time.Second, "duration of each rate step")
	fs.DurationVar(&f.warmup, "warmup", 2*time.Second, "an unreported step at the first rate before the sweep (connections, caches); its PIX are checked like the others")
	fs.IntVar(&f.accounts, "accounts", 200, "accounts the PIX are spread over")
	fs.Float64Var(&f.dup, "dup", 0.2, "share of arrivals that redeliver an earlier PIX")
	fs.Float64Var(&f.burst, "burst", 0.02, "share of new PIX sent as -copies copies at the same instant")
	fs.IntVar(&f.copies, "copies", 5, "copies of a burst")
	fs.IntVar(&f.maxInFlight, "max-in-flight", 256, "cap on connections to the API")
	fs.BoolVar(&f.retryUnacked, "retry-unacked", true, "resend a PIX that got no 2xx, as a PSP does")
	fs.DurationVar(&f.retryFor, "retry-for", 2*time.Minute, "how long after the load unacknowledged PIX are still resent")
	fs.DurationVar(&f.drainTimeout, "drain-timeout", 10*time.Minute, "how long to wait for every PIX to be credited")
	fs.BoolVar(&f.ceilings, "ceilings", true, "measure the ingest and engine ceilings first")
	fs.IntVar(&f.ingestConcurrency, "ingest-concurrency", 20, "concurrency of the ingest ceiling (the API's DATABASE_MAX_CONNS)")
	fs.DurationVar(&f.ingestFor, "ingest-for", 10*time.Second, "duration of the ingest ceiling")
	fs.IntVar(&f.engineN, "engine-workflows", 400, "no-op workflows per engine ceiling")
	fs.IntVar(&f.engineConc, "engine-concurrency", 16, "concurrent starts of the engine ceiling (the dispatcher's DISPATCH_CONCURRENCY)")
	fs.Float64Var(&f.idleRate, "idle-rate", 2, "arrival rate of the idle latency phase (0: skip it)")
	fs.DurationVar(&f.idleFor, "idle-for", 30*time.Second, "duration of the idle latency phase")
	fs.StringVar(&f.jsonOut, "json", "", "also write the report as JSON to this file")
	fs.StringVar(&f.label, "label", "", "a label for the report (e.g. the Temporal persistence)")
	fs.StringVar(&f.pauseCmd, "pause-cmd", "", "shell command run before the rate steps (e.g. pause the worker, to measure the acknowledgement path alone)")
	fs.StringVar(&f.resumeCmd, "resume-cmd", "", "shell command run after the rate steps, before the drain")
	if err := fs.Parse(args); err != nil {
		return f, err
	}
	for _, r := range strings.Split(*rates, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(r), 64)
		if err != nil || v <= 0 {
			return f, fmt.Errorf("-rates: %q is not a positive number", r)
		}
		f.rates = append(f.rates, v)
	}
	key, err := webhooksig.ClientKey(os.Getenv("WEBHOOK_SECRETS"))
	if err != nil {
		return f, fmt.Errorf("WEBHOOK_SECRETS: %w", err)
	}
	f.signingKey = key
	return f, nil
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// Report is the outcome of one pixload run.
type Report struct {
	Label   string    `json:"label,omitempty"`
	Started time.Time `json:"started"`
	Machine string    `json:"machine"`

	IngestCeilingPerSec float64 `json:"ingest_ceiling_per_sec,omitempty"`
	// IngestCeilingCPU is the machine's CPU per insert of the ingest
	// ceiling (absent without /proc).
	IngestCeilingCPU    *CPUReport         `json:"ingest_ceiling_cpu,omitempty"`
	EngineCeilingPerSec map[string]float64 `json:"engine_ceiling_per_sec,omitempty"`
	// EngineAfterDrainPerSec is the best shape's ceiling measured again
	// after the drain, on the server in the state the backlog left it in
	// (the verdict stays against the ceilings measured first).
	EngineAfterDrainPerSec float64 `json:"engine_ceiling_after_drain_per_sec,omitempty"`
	// EngineCeilingCPU is the machine's CPU per no-op workflow, by shape.
	EngineCeilingCPU   map[string]*CPUReport `json:"engine_ceiling_cpu,omitempty"`
	EngineLatencyP50Ms float64               `json:"engine_one_workflow_latency_p50_ms,omitempty"`
	// EngineIdleLatencyP50Ms is the best shape's latency with its runs
	// paced like the idle phase's arrivals (-idle-rate).
	EngineIdleLatencyP50Ms float64 `json:"engine_one_workflow_latency_idle_paced_p50_ms,omitempty"`
	IdleAckToCreditedP50   float64 `json:"idle_ack_to_credited_p50_ms,omitempty"`

	// WorkerPaused: the rate steps ran with the worker paused (-pause-cmd),
	// measuring the acknowledgement path alone.
	WorkerPaused bool         `json:"worker_paused"`
	Steps        []StepReport `json:"steps"`

	CreditsPerSec float64 `json:"credits_per_sec"`
	// DrainCPU is the machine's CPU per credit over the drain.
	DrainCPU           *CPUReport      `json:"drain_cpu,omitempty"`
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
}

// CPUReport is the machine's CPU per operation over a measurement.
type CPUReport struct {
	// MicrosPerOp is the CPU time of all processes per operation.
	MicrosPerOp   float64         `json:"micros_per_op"`
	Utilisation   float64         `json:"utilisation"`
	StealMicrosOp float64         `json:"steal_micros_per_op"`
	Shares        []load.CPUShare `json:"shares"`
}

// bestEngine is the highest engine ceiling and its shape.
func (rep *Report) bestEngine() (perSec float64, mode string) {
	for m, v := range rep.EngineCeilingPerSec {
		if v > perSec {
			perSec, mode = v, m
		}
	}
	return perSec, mode
}

// engineAfterDrain measures the best engine shape again, on the server as
// the drain left it (its history and persistence grown by the run's
// workflows): the credit rate was measured in that state, the first ceiling
// on a server that had not taken the backlog yet.
func engineAfterDrain(ctx context.Context, tc client.Client, runID string, mode load.EngineMode, f flags, say func(string, ...any)) (float64, error) {
	engine, err := load.StartEngine(tc, runID+"-after")
	if err != nil {
		return 0, err
	}
	defer engine.Stop()
	say("engine ceiling after the drain: %d no-op workflows (%s), %d concurrent starts ...", f.engineN, mode, f.engineConc)
	v, err := engine.Throughput(ctx, mode, f.engineN, f.engineConc)
	if err != nil {
		return 0, err
	}
	say("  %.1f workflows/s", v)
	return v, nil
}

// loadGenerator is the CPU accounting's name of this process.
const loadGenerator = "pixload"

func cpuReport(u *load.CPUUse, ops int64) *CPUReport {
	if u == nil || ops <= 0 {
		return nil
	}
	total, shares := u.PerOp(ops, 0.02)
	return &CPUReport{MicrosPerOp: total, Utilisation: u.Utilisation(runtime.NumCPU()),
		StealMicrosOp: float64(u.Steal.Microseconds()) / float64(ops), Shares: shares}
}

// share is the named group's CPU per operation (0 when absent).
func (r *CPUReport) share(name string) float64 {
	for _, s := range r.Shares {
		if s.Name == name {
			return s.MicrosOp
		}
	}
	return 0
}

func (r *CPUReport) String() string {
	return fmt.Sprintf("%.0f µs (%s); machine %.0f%% busy, steal %.0f µs",
		r.MicrosPerOp, load.FormatShares(r.Shares), 100*r.Utilisation, r.StealMicrosOp)
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
}

func run(ctx context.Context, args []string, out io.Writer) error {
	f, err := parseFlags(args)
	if err != nil {
		return err
	}
	cfg, err := config.Load()
	if err != nil {
		return err
	}
	pool, err := db.Open(ctx, cfg.DatabaseURL, 4)
	if err != nil {
		return err
	}
	defer pool.Close()
	temporalOptions, err := cfg.TemporalClientOptions()
	if err != nil {
		return err
	}
	temporalOptions.Logger = logging.Temporal(logging.New(os.Stderr, "warn"))
	// The engine's no-op workflows carry no personal data, but they are
	// measured as the service runs: with its payloads encrypted when it is.
	if cfg.TemporalCodecKeys != nil {
		codec.NewConverters(codec.New(cfg.TemporalCodecKeys)).ApplyTo(&temporalOptions)
	}
	tc, err := client.DialContext(ctx, temporalOptions)
	if err != nil {
		return fmt.Errorf("temporal: %w", err)
	}
	defer tc.Close()

	host, _ := os.Hostname()
	rep := Report{Label: f.label, Started: time.Now().UTC(), Machine: machine(host), EngineCeilingPerSec: map[string]float64{}, EngineCeilingCPU: map[string]*CPUReport{}, WorkerPaused: f.pauseCmd != ""}
	say := func(format string, a ...any) { fmt.Fprintf(out, format+"\n", a...) }
	runID := load.NewRunID()

	if f.ceilings {
		say("ingest ceiling: Store.Receive straight at PostgreSQL, %d loops, %s ...", f.ingestConcurrency, f.ingestFor)
		ingest, err := load.IngestCeiling(ctx, cfg.DatabaseURL, f.ingestConcurrency, f.ingestFor)
		if err != nil {
			return err
		}
		rep.IngestCeilingPerSec, rep.IngestCeilingCPU = ingest.PerSecond, cpuReport(ingest.CPU, ingest.Inserts)
		say("  %.0f inserts/s", rep.IngestCeilingPerSec)
		if rep.IngestCeilingCPU != nil {
			say("  CPU per insert: %s", rep.IngestCeilingCPU)
		}
		engine, err := load.StartEngine(tc, runID)
		if err != nil {
			return err
		}
		for _, mode := range []load.EngineMode{load.EngineActivity, load.EngineLocalEager} {
			say("engine ceiling: %d no-op workflows (%s), %d concurrent starts ...", f.engineN, mode, f.engineConc)
			use, err := load.MeasureCPU(func() error {
				v, err := engine.Throughput(ctx, mode, f.engineN, f.engineConc)
				rep.EngineCeilingPerSec[string(mode)] = v
				return err
			})
			if err != nil {
				engine.Stop()
				return err
			}
			say("  %.1f workflows/s", rep.EngineCeilingPerSec[string(mode)])
			if r := cpuReport(use, int64(f.engineN)); r != nil {
				rep.EngineCeilingCPU[string(mode)] = r
				say("  CPU per workflow: %s", r)
			}
		}
		// The engine's own latency is its best shape's: start call → activity run.
		best := load.EngineActivity
		for _, mode := range []load.EngineMode{load.EngineActivity, load.EngineLocalEager} {
			lat, err := engine.Latency(ctx, mode, 20, 0)
			if err != nil {
				engine.Stop()
				return err
			}
			say("engine one-workflow latency (%s, back to back): p50 %.1f ms", mode, ms(lat))
			if rep.EngineLatencyP50Ms == 0 || ms(lat) < rep.EngineLatencyP50Ms {
				rep.EngineLatencyP50Ms, best = ms(lat), mode
			}
		}
		// And in the idle phase's conditions: the same shape, one run per
		// idle arrival interval, as many runs as the idle phase has PIX.
		if f.idleRate > 0 {
			every := time.Duration(float64(time.Second) / f.idleRate)
			lat, err := engine.Latency(ctx, best, max(20, int(f.idleRate*f.idleFor.Seconds())), every)
			if err != nil {
				engine.Stop()
				return err
			}
			rep.EngineIdleLatencyP50Ms = ms(lat)
			say("engine one-workflow latency (%s, one every %s like the idle phase): p50 %.1f ms", best, every, ms(lat))
		}
		engine.Stop()
	}

	sessionOpts := func(id string, dup, burst float64) load.Options {
		return load.Options{
			APIURL: f.api, RunID: id, Accounts: f.accounts, DupRatio: dup, BurstRatio: burst, BurstCopies: f.copies,
			MaxInFlight: f.maxInFlight, RetryUnacked: f.retryUnacked, RetryFor: f.retryFor, Seed: 1, SigningKey: f.signingKey,
		}
	}
	if f.idleRate > 0 {
		idle, err := load.NewSession(sessionOpts(runID[:9]+"I", 0, 0))
		if err != nil {
			return err
		}
		defer idle.Close()
		if err := load.OpenAccounts(ctx, pool, idle.RunID(), f.accounts); err != nil {
			return err
		}
		say("idle phase: %.1f PIX/s for %s ...", f.idleRate, f.idleFor)
		if _, err := idle.Run(ctx, f.idleRate, f.idleFor); err != nil {
			return err
		}
		if _, err := load.Drain(ctx, pool, idle.RunID(), f.drainTimeout); err != nil {
			return err
		}
		times, err := load.Times(ctx, pool, idle)
		if err != nil {
			return err
		}
		rep.IdleAckToCreditedP50 = float64(times.AckToCreditedMicros.ValueAtQuantile(50)) / 1000
		say("  idle acknowledgement → credited p50 %.1f ms", rep.IdleAckToCreditedP50)
	}

	session, err := load.NewSession(sessionOpts(runID, f.dup, f.burst))
	if err != nil {
		return err
	}
	defer session.Close()
	if err := load.OpenAccounts(ctx, pool, runID, f.accounts); err != nil {
		return err
	}
	if f.pauseCmd != "" {
		say("pausing: %s", f.pauseCmd)
		if err := load.Shell(ctx, f.pauseCmd); err != nil {
			return err
		}
	}
	if f.warmup > 0 {
		say("warm-up: %.0f arrivals/s for %s (not reported) ...", f.rates[0], f.warmup)
		if _, err := session.Run(ctx, f.rates[0], f.warmup); err != nil {
			return err
		}
	}
	for i, rate := range f.rates {
		say("step %d: %.0f arrivals/s for %s (redeliveries %.0f%%, bursts %.0f%% × %d) ...", i+1, rate, f.step, f.dup*100, f.burst*100, f.copies)
		var res *load.Step
		use, err := load.MeasureCPU(func() (err error) {
			res, err = session.Run(ctx, rate, f.step)
			return err
		})
		if err != nil {
			return err
		}
		st := StepReport{Rate: rate, Arrivals: res.Arrivals, Requests: res.Requests, AcceptedPerSec: res.AcceptedPerSecond(),
			AckP50Ms: quantileMs(res, 50), AckP99Ms: quantileMs(res, 99), AckP999Ms: quantileMs(res, 99.9),
			Errors: res.Errors, Unacked: res.Unacked}
		st.CPU = cpuReport(use, res.Requests)
		rep.Steps = append(rep.Steps, st)
		say("  accepted %.0f/s, ack p50 %.1f ms p99 %.1f ms p99.9 %.1f ms, errors %v, unacknowledged %d",
			st.AcceptedPerSec, st.AckP50Ms, st.AckP99Ms, st.AckP999Ms, st.Errors, st.Unacked)
		if st.CPU != nil {
			say("  CPU per request: %s", st.CPU)
		}
		if st.AckP99Ms <= 50 && st.Unacked == 0 && st.AcceptedPerSec > rep.BestIngestPerSec {
			rep.BestIngestPerSec = st.AcceptedPerSec
		}
	}

	creditedBefore, err := load.CreditCount(ctx, pool, runID)
	if err != nil {
		return err
	}
	var drain time.Duration
	var drainErr error
	drainUse, err := load.MeasureCPU(func() error {
		if f.resumeCmd != "" {
			say("resuming: %s", f.resumeCmd)
			if err := load.Shell(ctx, f.resumeCmd); err != nil {
				return err
			}
		}
		say("draining: waiting for every PIX to be credited ...")
		drain, drainErr = load.Drain(ctx, pool, runID, f.drainTimeout)
		return nil
	})
	if err != nil {
		return err
	}
	rep.DrainSeconds = drain.Seconds()
	say("  drained in %.1f s", rep.DrainSeconds)
	creditedAfter, err := load.CreditCount(ctx, pool, runID)
	if err != nil {
		return err
	}
	if rep.DrainCPU = cpuReport(drainUse, creditedAfter-creditedBefore); rep.DrainCPU != nil {
		say("  CPU per credit over the drain: %s", rep.DrainCPU)
	}
	times, err := load.Times(ctx, pool, session)
	if err != nil {
		return err
	}
	rep.CreditsPerSec = times.CreditsPerSecond
	rep.AckToCreditedP50Ms = times.AckToCreditedMicros.ValueAtQuantile(50) / 1000
	rep.AckToCreditedP99Ms = times.AckToCreditedMicros.ValueAtQuantile(99) / 1000
	if rep.Invariants, err = load.Check(ctx, pool, session); err != nil {
		return err
	}
	rep.Violations = rep.Invariants.Violations()
	if _, mode := rep.bestEngine(); mode != "" && drainErr == nil {
		if rep.EngineAfterDrainPerSec, err = engineAfterDrain(ctx, tc, runID, load.EngineMode(mode), f, say); err != nil {
			return err
		}
	}
	if drainErr != nil {
		rep.Violations = append(rep.Violations, drainErr.Error())
	}

	say("\nresults")
	say("  credits: %d at %.1f/s; acknowledgement → credited p50 %d ms, p99 %d ms", times.Credits, rep.CreditsPerSec, rep.AckToCreditedP50Ms, rep.AckToCreditedP99Ms)
	if rep.IngestCeilingPerSec > 0 {
		rep.IngestRatio = rep.BestIngestPerSec / rep.IngestCeilingPerSec
		say("  ingest: best %.0f/s at p99 ≤ 50 ms = %.0f%% of the ingest ceiling (%.0f/s); target ≥ 60%%: %s",
			rep.BestIngestPerSec, 100*rep.IngestRatio, rep.IngestCeilingPerSec, verdict(rep.IngestRatio >= 0.6))
		rep.ingestCPUBound()
		if rep.IngestCPUBound > 0 {
			say("    CPU bound: with every CPU busy at the sweep's least CPU per webhook, this machine takes at most %.0f%% of the ceiling; without the load generator's share (as on other cores; an estimate) %.0f%%",
				100*rep.IngestCPUBound, 100*rep.IngestCPUBoundNoLoad)
		}
		best, bestMode := rep.bestEngine()
		rep.CreditRatio = rep.CreditsPerSec / best
		say("  credits: %.1f/s = %.0f%% of the best engine ceiling (%.1f/s); target ≥ 80%%: %s",
			rep.CreditsPerSec, 100*rep.CreditRatio, best, verdict(rep.CreditRatio >= 0.8))
		if rep.EngineAfterDrainPerSec > 0 {
			say("    against the same ceiling measured after the drain (%.1f/s): %.0f%%", rep.EngineAfterDrainPerSec, 100*rep.CreditsPerSec/rep.EngineAfterDrainPerSec)
		}
		if engineCPU := rep.EngineCeilingCPU[bestMode]; engineCPU != nil && rep.DrainCPU != nil {
			say("    CPU: a credit took %.0f µs of the machine's CPU, a no-op workflow of that shape %.0f µs (%.2f×)",
				rep.DrainCPU.MicrosPerOp, engineCPU.MicrosPerOp, rep.DrainCPU.MicrosPerOp/engineCPU.MicrosPerOp)
		}
		if rep.IdleAckToCreditedP50 > 0 && rep.EngineIdleLatencyP50Ms > 0 {
			rep.IdleLatencyRatio = rep.IdleAckToCreditedP50 / rep.EngineIdleLatencyP50Ms
			say("  idle acknowledgement → credited p50 %.1f ms = %.2f× the engine's best one-workflow latency at the same pacing (%.1f ms); target ≤ 1.5×: %s",
				rep.IdleAckToCreditedP50, rep.IdleLatencyRatio, rep.EngineIdleLatencyP50Ms, verdict(rep.IdleLatencyRatio <= 1.5))
			say("    (against the engine's back-to-back latency, %.1f ms: %.2f×)", rep.EngineLatencyP50Ms, rep.IdleAckToCreditedP50/rep.EngineLatencyP50Ms)
		}
	}
	if len(rep.Violations) == 0 {
		say("  invariants: hold (%d PIX, %d credits, none pending or failed, every balance = opening + credits)", rep.Invariants.InboxRows, rep.Invariants.Credits)
	} else {
		say("  INVARIANTS VIOLATED: %s", strings.Join(rep.Violations, "; "))
	}
	if f.jsonOut != "" {
		b, _ := json.MarshalIndent(rep, "", "  ")
		if err := os.WriteFile(f.jsonOut, b, 0o644); err != nil {
			return err
		}
	}
	if len(rep.Violations) > 0 {
		return errors.New("invariants violated")
	}
	return nil
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

func quantileMs(res *load.Step, q float64) float64 {
	return float64(res.AckMicros.ValueAtQuantile(q)) / 1000
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "NOT met"
}

func machine(host string) string {
	return fmt.Sprintf("%s, %d CPUs", host, runtime.NumCPU())
}
