// Command pixload drives a running PIX service with an open-model load of
// webhooks and reports, in one run: the ceilings (the same inbox insert
// straight at PostgreSQL, one commit each and N rows per commit; no-op
// workflows on the same Temporal server), the idle acknowledgement →
// credited latency, the accepted webhooks per second and acknowledgement
// latency at each rate of a sweep, the API's resident memory through it, the
// credit rate, the drain time, the CPU of every process per operation, and
// the invariants checked in the database; then the targets block: every
// figure of the table against its target. Any invariant violation
// makes it exit non-zero; the targets are reported, never enforced.
//
// With -soak N it sends N webhooks through the whole pipeline instead (the
// worker crediting meanwhile) and reports the books, the duration and the
// resources used. `pixload summary REPORT.json...` prints the targets of
// several runs side by side. `pixload storm` offers webhooks over up to
// 2,000 connections with vegeta, an independent generator, and reports the
// API's peak resident memory (storm.go). `pixload growth` measures the
// cost of the service's work on empty tables and with history beside each
// other (growth.go).
//
// DATABASE_URL and the TEMPORAL_* variables (TEMPORAL_ADDRESS,
// TEMPORAL_NAMESPACE, TLS, API key) name the service's database and
// Temporal, as for pixd; -api names its HTTP API (several, comma-separated:
// the replicas the webhooks are spread over, in turn).
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

	"github.com/jackc/pgx/v5/pgxpool"
	"go.temporal.io/sdk/client"

	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/internal/cli"
	"github.com/pixbank/pix/internal/codec"
	"github.com/pixbank/pix/internal/config"
	"github.com/pixbank/pix/internal/logging"
	"github.com/pixbank/pix/internal/webhooksig"
	"github.com/pixbank/pix/tooling/load"
)

func main() {
	cli.Main("pixload", func(ctx context.Context, args []string) error {
		if len(args) > 0 && args[0] == "summary" {
			return summarize(args[1:], os.Stdout)
		}
		if len(args) > 0 && args[0] == "storm" {
			return storm(ctx, args[1:], os.Stdout)
		}
		if len(args) > 0 && args[0] == "growth" {
			return growth(ctx, args[1:], os.Stdout)
		}
		return run(ctx, args, os.Stdout)
	})
}

type flags struct {
	apis                []string
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
	groupedBatches      []int
	watch               []load.Process
	workerMetrics       []string
	memoryEvery         time.Duration
	topology            string
	baseline            string
	soak                int64
	soakRate, soakDup   float64
	soakProgress        time.Duration
	otherDBs            []string
	// signingKey signs the webhooks: the first secret of WEBHOOK_SECRETS,
	// the same variable the API reads.
	signingKey []byte
}

func parseFlags(args []string) (flags, error) {
	var f flags
	fs := flag.NewFlagSet("pixload", flag.ContinueOnError)
	rates := fs.String("rates", "200", "comma-separated arrival rates per second, one step each")
	apis := fs.String("api", envOr("PIX_API_URL", "http://127.0.0.1:8080"), "the service's HTTP API; several comma-separated: replicas, sent to in turn")
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
	grouped := fs.String("grouped-batches", "8,32", "rows per transaction of the grouped-insert ceilings, comma-separated (empty: none)")
	workerMetrics := fs.String("worker-metrics", "", "the workers' metrics URLs (http://host:port/metrics,...): the dispatchers' workflow starts over the drain are reported per credit; empty: not reported")
	watch := fs.String("watch", "", "the service's processes whose memory is sampled and whose own CPU is reported, role=pid,... (roles api, worker, temporal); empty: found by name")
	fs.DurationVar(&f.memoryEvery, "memory-every", 250*time.Millisecond, "interval of the memory sampling")
	fs.StringVar(&f.topology, "topology", "", "a label for the service's processes (e.g. 1+1, 2+2)")
	fs.StringVar(&f.baseline, "baseline", "", "a report (-json) of a run with fewer replicas on the same server: report this run's cost against it")
	fs.Int64Var(&f.soak, "soak", 0, "soak: send this many webhooks through the whole pipeline (worker running), then check the books and report the resources used; no ceilings, idle phase or sweep")
	fs.Float64Var(&f.soakRate, "soak-rate", 150, "arrivals per second of the soak")
	fs.Float64Var(&f.soakDup, "soak-dup", 0.3, "share of the soak's arrivals that redeliver an earlier PIX")
	fs.DurationVar(&f.soakProgress, "soak-progress", 30*time.Second, "interval of the soak's progress lines")
	otherDBs := fs.String("other-dbs", "temporal_bench,temporal_bench_visibility", "other databases on the service's PostgreSQL (Temporal's): their commits are counted in each measurement, their growth in the soak (those that exist)")
	if err := fs.Parse(args); err != nil {
		return f, err
	}
	var err error
	if f.rates, err = parseList(*rates, "-rates", func(s string) (float64, error) { return strconv.ParseFloat(s, 64) }); err != nil {
		return f, err
	}
	if len(f.rates) == 0 {
		return f, errors.New("-rates: none given")
	}
	if f.groupedBatches, err = parseList(*grouped, "-grouped-batches", strconv.Atoi); err != nil {
		return f, err
	}
	for _, b := range f.groupedBatches {
		if b < 2 {
			return f, fmt.Errorf("-grouped-batches: %d rows is no group (at least 2)", b)
		}
	}
	for _, a := range splitList(*apis) {
		f.apis = append(f.apis, strings.TrimRight(a, "/"))
	}
	if len(f.apis) == 0 {
		return f, errors.New("-api: none given")
	}
	if f.watch, err = load.ParseProcesses(*watch); err != nil {
		return f, fmt.Errorf("-watch: %w", err)
	}
	f.workerMetrics = splitList(*workerMetrics)
	f.otherDBs = splitList(*otherDBs)
	if f.soak < 0 || (f.soak > 0 && f.soakRate <= 0) {
		return f, errors.New("-soak: a positive number of webhooks at a positive -soak-rate")
	}
	key, err := webhooksig.ClientKey(os.Getenv("WEBHOOK_SECRETS"))
	if err != nil {
		return f, fmt.Errorf("WEBHOOK_SECRETS: %w", err)
	}
	f.signingKey = key
	return f, nil
}

// splitList is a comma-separated list's items, trimmed, the empty ones
// left out.
func splitList(s string) []string {
	var out []string
	for part := range strings.SplitSeq(s, ",") {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	return out
}

// parseList reads a comma-separated list of positive numbers.
func parseList[T int | float64](s, flagName string, parse func(string) (T, error)) ([]T, error) {
	var out []T
	for _, part := range splitList(s) {
		v, err := parse(part)
		if err != nil || v <= 0 {
			return nil, fmt.Errorf("%s: %q is not a positive number", flagName, part)
		}
		out = append(out, v)
	}
	return out, nil
}

// watched is the processes whose memory is sampled: those -watch names,
// else the service's found by name on this machine.
func watched(f flags) []load.Process {
	if len(f.watch) > 0 {
		return f.watch
	}
	return load.FindProcesses(map[string]string{apiProcess: "api", workerProcess: "worker", "temporal-server": "temporal"})
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
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
	host, _ := os.Hostname()
	rep := Report{Label: f.label, Started: time.Now().UTC(), Machine: machine(host), Topology: f.topology, APIs: f.apis,
		EngineCeilingPerSec: map[string]float64{}, EngineCeilingCPU: map[string]*CPUReport{}, EngineCeilingDB: map[string]*DBReport{}, WorkerPaused: f.pauseCmd != "",
		WorkersVersioned: cfg.WorkerVersioning}
	say := func(format string, a ...any) { fmt.Fprintf(out, format+"\n", a...) }
	procs := watched(f)
	if len(procs) > 0 {
		say("watching the memory of %s", describeProcesses(procs))
	}
	for _, p := range procs {
		if name, ok := load.ProcessName(p.PID); ok && p.Role == "temporal" {
			rep.EngineProcess = name
		}
	}

	if f.soak > 0 {
		if err := runSoak(ctx, f, pool, procs, &rep, say); err != nil {
			return err
		}
		printSoak(out, rep.Soak)
		return finish(f, &rep, say)
	}

	temporalOptions, err := cfg.TemporalClientOptions()
	if err != nil {
		return err
	}
	temporalOptions.Logger = logging.Temporal(logging.New(os.Stderr, "warn"))
	// The engine's no-op workflows carry no personal data, but they are
	// measured as the service runs: with its payloads encrypted when it is.
	if cfg.TemporalCodecKeys != nil {
		codec.NewConverters(cfg.PayloadCodec()).ApplyTo(&temporalOptions)
	}
	tc, err := client.DialContext(ctx, temporalOptions)
	if err != nil {
		return fmt.Errorf("temporal: %w", err)
	}
	defer tc.Close()
	runID := load.NewRunID()
	// One no-op worker (and one versioned) for the ceilings before the
	// sweep and after the drain.
	engine, err := load.StartEngine(tc, runID)
	if err != nil {
		return err
	}
	defer engine.Stop()

	if f.ceilings {
		if err := measureCeilings(ctx, f, pool, cfg.DatabaseURL, engine, &rep, say); err != nil {
			return err
		}
	}

	sessionOpts := func(id string, dup, burst float64) load.Options {
		return load.Options{
			APIURLs: f.apis, RunID: id, Accounts: f.accounts, DupRatio: dup, BurstRatio: burst, BurstCopies: f.copies,
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
	// The workers' starts are read before they are paused (a stopped
	// process answers no /metrics): they start nothing until the drain.
	var startsBefore map[string]float64
	if f.pauseCmd != "" {
		startsBefore = drainStarts(ctx, f, say)
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
	var sampler *load.MemorySampler
	if len(procs) > 0 {
		sampler = load.StartMemorySampler(procs, f.memoryEvery)
	}
	for i, rate := range f.rates {
		say("step %d: %.0f arrivals/s for %s over %d API(s) (redeliveries %.0f%%, bursts %.0f%% × %d) ...", i+1, rate, f.step, len(f.apis), f.dup*100, f.burst*100, f.copies)
		var res *load.Step
		var use *load.CPUUse
		dbUse, err := load.MeasureDB(ctx, pool, f.otherDBs, func() (err error) {
			use, err = load.MeasureCPU(func() (err error) {
				res, err = session.Run(ctx, rate, f.step)
				return err
			})
			return err
		})
		if err != nil {
			if sampler != nil {
				sampler.Stop()
			}
			return err
		}
		st := StepReport{Rate: rate, Arrivals: res.Arrivals, Requests: res.Requests, AcceptedPerSec: res.AcceptedPerSecond(),
			AckP50Ms: quantileMs(res, 50), AckP99Ms: quantileMs(res, 99), AckP999Ms: quantileMs(res, 99.9),
			Errors: res.Errors, Unacked: res.Unacked}
		st.CPU = cpuReport(use, res.Requests).withProcesses(use, procs, res.Requests)
		st.DB = dbReport(dbUse, res.Requests)
		rep.Steps = append(rep.Steps, st)
		say("  accepted %.0f/s, ack p50 %.1f ms p99 %.1f ms p99.9 %.1f ms, errors %v, unacknowledged %d",
			st.AcceptedPerSec, st.AckP50Ms, st.AckP99Ms, st.AckP999Ms, st.Errors, st.Unacked)
		if st.CPU != nil {
			say("  CPU per request: %s", st.CPU)
		}
		if st.DB != nil {
			say("  PostgreSQL per request: %s", st.DB)
		}
		if st.passed() && st.AcceptedPerSec > rep.BestIngestPerSec {
			rep.BestIngestPerSec = st.AcceptedPerSec
		}
		rep.Saturated = rep.Saturated || st.overloaded()
	}
	if sampler != nil {
		rep.SweepMemory = sampler.Stop()
		for _, p := range rep.SweepMemory {
			say("  memory of %s %d through the sweep: VmHWM %.0f MB, sampled peak %.0f MB (%d samples)", p.Role, p.PID, mib(p.HWMBytes), mib(p.PeakRSSBytes), p.Samples)
		}
	}
	if !rep.Saturated {
		say("  the sweep did not saturate the API (every step p99 ≤ 50 ms, every PIX acknowledged, no 5xx): the memory peak is not one through saturation")
	}

	creditedBefore, err := load.CreditCount(ctx, pool, runID)
	if err != nil {
		return err
	}
	if f.pauseCmd == "" {
		startsBefore = drainStarts(ctx, f, say)
	}
	var drain time.Duration
	var drainErr error
	var drainUse *load.CPUUse
	drainDB, err := load.MeasureDB(ctx, pool, f.otherDBs, func() (err error) {
		drainUse, err = load.MeasureCPU(func() error {
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
		return err
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
	if rep.DrainCPU = cpuReport(drainUse, creditedAfter-creditedBefore).withProcesses(drainUse, procs, creditedAfter-creditedBefore); rep.DrainCPU != nil {
		say("  CPU per credit over the drain: %s", rep.DrainCPU)
	}
	if rep.DrainDB = dbReport(drainDB, creditedAfter-creditedBefore); rep.DrainDB != nil {
		say("  PostgreSQL per credit over the drain: %s", rep.DrainDB)
	}
	if startsBefore != nil {
		if after := drainStarts(ctx, f, say); after != nil {
			rep.DrainStarts = startsReport(startsBefore, after, creditedAfter-creditedBefore)
			say("  credit workflow starts over the drain: %s", rep.DrainStarts)
		}
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
	if _, mode := rep.servicesEngine(); mode != "" && drainErr == nil {
		if err := engineAfterDrain(ctx, f, pool, engine, &rep, say); err != nil {
			return err
		}
		rep.EngineAfterDrainPerSec = rep.EngineAfterDrainByShape[mode]
	}
	if drainErr != nil {
		rep.Violations = append(rep.Violations, drainErr.Error())
	}

	say("\nresults")
	say("  credits: %d at %.1f/s; acknowledgement → credited p50 %d ms, p99 %d ms", times.Credits, rep.CreditsPerSec, rep.AckToCreditedP50Ms, rep.AckToCreditedP99Ms)
	if rep.IngestCeilingPerSec > 0 {
		rep.IngestRatio = rep.BestIngestPerSec / rep.IngestCeilingPerSec
		say("  ingest: best %.0f/s at p99 ≤ 50 ms = %.0f%% of the single-insert ceiling (%.0f/s)",
			rep.BestIngestPerSec, 100*rep.IngestRatio, rep.IngestCeilingPerSec)
		for _, g := range rep.GroupedCeilings {
			say("    = %.0f%% of the grouped-insert ceiling of %d rows per commit (%.0f/s)", 100*rep.BestIngestPerSec/g.PerSecond, g.Batch, g.PerSecond)
		}
		rep.ingestCPUBound()
		if rep.IngestCPUBound > 0 {
			say("    CPU bound: with every CPU busy at the sweep's least CPU per webhook, this machine takes at most %.0f%% of the single-insert ceiling; without the load generator's share (as on other cores; an estimate) %.0f%%",
				100*rep.IngestCPUBound, 100*rep.IngestCPUBoundNoLoad)
		}
		best, bestMode := rep.servicesEngine()
		rep.CreditRatio = rep.CreditsPerSec / best
		say("  credits (workers versioned: %t): %.1f/s = %.0f%% of the best engine ceiling of their kind (%.1f/s, %s)",
			rep.WorkersVersioned, rep.CreditsPerSec, 100*rep.CreditRatio, best, bestMode)
		if rep.EngineAfterDrainPerSec > 0 {
			say("    against the same ceiling measured after the drain (%.1f/s): %.0f%%", rep.EngineAfterDrainPerSec, 100*rep.CreditsPerSec/rep.EngineAfterDrainPerSec)
		}
		sayCreditsAgainstEngines(&rep, say)
		if engineCPU := rep.EngineCeilingCPU[bestMode]; engineCPU != nil && rep.DrainCPU != nil {
			say("    CPU: a credit took %.0f µs of the machine's CPU, a no-op workflow of that shape %.0f µs (%.2f×)",
				rep.DrainCPU.MicrosPerOp, engineCPU.MicrosPerOp, rep.DrainCPU.MicrosPerOp/engineCPU.MicrosPerOp)
		}
		if rep.IdleAckToCreditedP50 > 0 && rep.EngineIdleLatencyP50Ms > 0 {
			rep.IdleLatencyRatio = rep.IdleAckToCreditedP50 / rep.EngineIdleLatencyP50Ms
			say("  idle acknowledgement → credited p50 %.1f ms = %.2f× the engine's best one-workflow latency at the same pacing (%.1f ms)",
				rep.IdleAckToCreditedP50, rep.IdleLatencyRatio, rep.EngineIdleLatencyP50Ms)
			say("    (against the engine's back-to-back latency, %.1f ms: %.2f×)", rep.EngineLatencyP50Ms, rep.IdleAckToCreditedP50/rep.EngineLatencyP50Ms)
		}
	}
	rep.Targets = computeTargets(&rep)
	printTargets(out, rep.Targets)
	if f.baseline != "" {
		base, err := readReport(f.baseline)
		if err != nil {
			return err
		}
		rep.ReplicaCost = replicaCost(base, &rep)
		printReplicaCost(out, rep.ReplicaCost)
	}
	return finish(f, &rep, say)
}

// finish prints the invariants' verdict, writes the JSON report and fails
// on a violation (never on a target).
func finish(f flags, rep *Report, say func(string, ...any)) error {
	if len(rep.Violations) == 0 {
		say("\n  invariants: hold (%d PIX, %d credits, none pending or failed, every balance = opening + credits)", rep.Invariants.InboxRows, rep.Invariants.Credits)
	} else {
		say("\n  INVARIANTS VIOLATED: %s", strings.Join(rep.Violations, "; "))
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

// measureCeilings measures what the run's figures are compared with: the
// ingest ceilings (one commit per insert, then N rows per commit) and the
// engine's (throughput of each no-op shape with its CPU, its one-workflow
// latency back to back and paced like the idle phase).
func measureCeilings(ctx context.Context, f flags, pool *pgxpool.Pool, databaseURL string, engine *load.Engine, rep *Report, say func(string, ...any)) error {
	say("ingest ceiling: Store.Receive straight at PostgreSQL, one commit each, %d loops, %s ...", f.ingestConcurrency, f.ingestFor)
	ingest, err := load.IngestCeiling(ctx, databaseURL, f.ingestConcurrency, f.ingestFor)
	if err != nil {
		return err
	}
	rep.IngestCeilingPerSec, rep.IngestCeilingCPU = ingest.PerSecond, cpuReport(ingest.CPU, ingest.Inserts)
	say("  %.0f inserts/s", rep.IngestCeilingPerSec)
	if rep.IngestCeilingCPU != nil {
		say("  CPU per insert: %s", rep.IngestCeilingCPU)
	}
	for _, batch := range f.groupedBatches {
		say("grouped-insert ceiling: the same Receive, %d rows per transaction in one round trip (Store.ReceiveBatch), %d loops, %s ...", batch, f.ingestConcurrency, f.ingestFor)
		g, err := load.GroupedIngestCeiling(ctx, databaseURL, f.ingestConcurrency, batch, f.ingestFor)
		if err != nil {
			return err
		}
		gc := GroupedCeiling{Batch: batch, PerSecond: g.PerSecond, Commits: g.Commits, CPU: cpuReport(g.CPU, g.Inserts)}
		rep.GroupedCeilings = append(rep.GroupedCeilings, gc)
		say("  %.0f inserts/s (%.0f commits/s)", gc.PerSecond, gc.PerSecond/float64(batch))
		if gc.CPU != nil {
			say("  CPU per insert: %s", gc.CPU)
		}
	}
	if err := measureEngineCeilings(ctx, f, pool, engine, rep, say); err != nil {
		return err
	}
	// The engine's own latency is its best shape's: start call → activity run.
	best := load.EngineActivity
	for _, mode := range []load.EngineMode{load.EngineActivity, load.EngineLocalEager} {
		lat, err := engine.Latency(ctx, mode, 20, 0)
		if err != nil {
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
			return err
		}
		rep.EngineIdleLatencyP50Ms = ms(lat)
		say("engine one-workflow latency (%s, one every %s like the idle phase): p50 %.1f ms", best, every, ms(lat))
	}
	return nil
}

// describeProcesses prints processes as "api 123, worker 456".
func describeProcesses(procs []load.Process) string {
	parts := make([]string, len(procs))
	for i, p := range procs {
		parts[i] = fmt.Sprintf("%s %d", p.Role, p.PID)
	}
	return strings.Join(parts, ", ")
}

func quantileMs(res *load.Step, q float64) float64 {
	return float64(res.AckMicros.ValueAtQuantile(q)) / 1000
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func machine(host string) string {
	return fmt.Sprintf("%s, %d CPUs", host, runtime.NumCPU())
}

// drainStarts reads the workers' credit workflow starts: nil without
// -worker-metrics, or when a worker does not answer (said, and the starts
// are then not reported: the rest of the run goes on).
func drainStarts(ctx context.Context, f flags, say func(string, ...any)) map[string]float64 {
	if len(f.workerMetrics) == 0 {
		return nil
	}
	starts, err := load.DispatchStarts(ctx, f.workerMetrics, "inbox")
	if err != nil {
		say("  credit workflow starts: not measured (%v)", err)
		return nil
	}
	return starts
}
