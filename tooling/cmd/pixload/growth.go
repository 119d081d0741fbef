package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/internal/codec"
	"github.com/pixbank/pix/internal/config"
	"github.com/pixbank/pix/internal/logging"
	"github.com/pixbank/pix/internal/webhooksig"
	"github.com/pixbank/pix/saga/reconcile"
	"github.com/pixbank/pix/saga/retention"
	"github.com/pixbank/pix/tooling/load"
)

// `pixload growth` measures what the service's work costs on the tables as
// they are (docs/benchmarks.md, "Cost as the tables grow"): scripts/bench.sh
// seeds a database of empty tables and one with BENCH_HISTORY done PIX of
// history (scripts/history.sql), runs it on each, one after the other, and
// then `pixload growth compare EMPTY.json HISTORY.json` prints each figure
// beside its empty-tables value, with the ratio and the target. Both
// databases hold
// the same fixtures: the accounts, the rows past their retention that the
// retention run deletes (tag R), and the PIX of the catch-up's window (tag
// C, done already: the window lists what the webhooks brought).
//
// The figures, in the order they are measured:
//  1. the reconciliation's first two runs (the Schedule triggered: the
//     first settles the books, both read every done inbox row), then as
//     many as it takes to count the whole history (at most -count-runs),
//     so that the steady runs below are a rotation's, each its budget;
//  2. webhook ingest at -rate for -step, -repeat times, the workers paused
//     (the acknowledgement path alone, as make bench's sweep);
//  3. the credits per second over the drain of that backlog;
//  4. the reconciliation's next runs: the one after the drain (its PIX new
//     to it), the figure, and -repeat - 1 with nothing new (with
//     -skip-ingest, -repeat runs with nothing new: their median);
//  5. the catch-up of one window of -catchup PIX, listed from the PSP
//     simulator through `pixctl psp catchup`, -repeat times;
//  6. the retention run (the Schedule triggered) with webhooks arriving
//     beside it at -retention-rate: its rows deleted per second, and the
//     ingest's p99 while it ran against before and after it.
// Each figure keeps the machine's load average when it was taken.

// growthTargetRatio bounds every figure with history against empty tables
// (issue 35: "within 10% of empty"); the retention's own bounds follow.
const (
	growthTargetRatio   = 1.10
	growthMinRatio      = 0.90
	retentionMinPerSec  = 2000
	catchUpMaxSeconds   = 60
	retentionP99Allowed = 1.10
)

// growthReport is what `pixload growth` measured on one database.
type growthReport struct {
	Label      string    `json:"label"`
	Started    time.Time `json:"started"`
	Machine    string    `json:"machine"`
	PostgreSQL string    `json:"postgresql"`
	// Tables are the service's tables as the run found them.
	Tables []tableSize `json:"tables"`

	ReconcileFirst  *timedRun      `json:"reconcile_first,omitempty"`
	ReconcileSecond *timedRun      `json:"reconcile_second,omitempty"`
	Ingest          []growthIngest `json:"ingest"`
	Drain           *growthDrain   `json:"drain,omitempty"`
	ReconcileSteady []timedRun     `json:"reconcile_steady"`
	// ReconcileCount is the runs after the first two that counted the
	// rest of the history.
	ReconcileCount *countedRuns     `json:"reconcile_count,omitempty"`
	CatchUp        []growthCatchUp  `json:"catch_up"`
	Retention      *growthRetention `json:"retention,omitempty"`
	// Figures are the figures of the side-by-side table (figures()), by
	// key: what `pixload growth compare` reads.
	Figures    map[string]float64 `json:"figures"`
	Violations []string           `json:"violations"`
}

// tableSize is one table's estimated rows (pg_class.reltuples, current after
// the seed's ANALYZE) and its size with indexes and TOAST.
type tableSize struct {
	Name  string `json:"name"`
	Rows  int64  `json:"rows"`
	Bytes int64  `json:"bytes"`
}

// timedRun is one run of a maintenance workflow: its activities' span
// (first started to last completed) and the load average then; for a
// reconciliation, what its rotating recount read.
type timedRun struct {
	WorkflowID         string  `json:"workflow_id"`
	Seconds            float64 `json:"seconds"`
	Load               string  `json:"load_average"`
	RecountedAccounts  int     `json:"recounted_accounts,omitempty"`
	RecountedMovements int64   `json:"recounted_movements,omitempty"`
}

// countedRuns is the reconciliation's runs that counted the history after
// the first two: how many, their time together, and whether the last was
// complete (every account counted, every done row checked).
type countedRuns struct {
	Runs     int     `json:"runs"`
	Seconds  float64 `json:"seconds"`
	Complete bool    `json:"complete"`
}

// growthIngest is one step of webhooks at the ingest rate.
type growthIngest struct {
	Rate           float64 `json:"rate"`
	AcceptedPerSec float64 `json:"accepted_per_sec"`
	P50Ms          float64 `json:"ack_p50_ms"`
	P99Ms          float64 `json:"ack_p99_ms"`
	P999Ms         float64 `json:"ack_p999_ms"`
	Unacked        int     `json:"unacked"`
	Errors         int64   `json:"errors"`
	// APIMicros and PostgresMicros are the CPU per request of the API
	// processes and of the benchmark's PostgreSQL server (-pg-pid: its
	// postmaster and backends, autovacuum's workers included).
	APIMicros      float64 `json:"api_cpu_us_per_request"`
	PostgresMicros float64 `json:"postgres_cpu_us_per_request"`
	// Reads are the relations that read the most blocks from outside
	// shared buffers, per request.
	Reads []relationReads `json:"block_reads_per_request,omitempty"`
	Load  string          `json:"load_average"`
	// hist is the step's acknowledgement latencies, merged across the
	// repeats for the figure's p99.
	hist *hdrhistogram.Histogram
}

// growthDrain is the credit rate over the drain of the ingest's backlog.
type growthDrain struct {
	Credits        int     `json:"credits"`
	Seconds        float64 `json:"seconds"`
	CreditsPerSec  float64 `json:"credits_per_sec"`
	PostgresMicros float64 `json:"postgres_cpu_us_per_credit"`
	AllMicros      float64 `json:"all_cpu_us_per_credit"`
	// Reads are the relations that read the most blocks from outside
	// shared buffers, per credit.
	Reads []relationReads `json:"block_reads_per_credit,omitempty"`
	Load  string          `json:"load_average"`
}

// growthCatchUp is one listing of the catch-up's window.
type growthCatchUp struct {
	PIX     int            `json:"pix"`
	Seconds float64        `json:"seconds"`
	Counts  map[string]any `json:"counts"`
	// Reads are the relations that read the most blocks from outside
	// shared buffers, per PIX listed.
	Reads []relationReads `json:"block_reads_per_pix,omitempty"`
	Load  string          `json:"load_average"`
}

// growthRetention is the retention run with webhooks arriving beside it.
type growthRetention struct {
	Deleted    map[string]int64 `json:"deleted"`
	Seconds    float64          `json:"seconds"`
	RowsPerSec float64          `json:"rows_per_sec"`
	Rate       float64          `json:"ingest_rate"`
	// P99AroundMs is the ingest's p99 over the steps before the run and
	// after it, P99DuringMs over the steps that began while it ran.
	P99AroundMs float64 `json:"ingest_p99_around_ms"`
	P99DuringMs float64 `json:"ingest_p99_during_ms"`
	StepsAround int     `json:"steps_around"`
	StepsDuring int     `json:"steps_during"`
	// StepP99AroundMs and StepP99DuringMs are each step's own p99, in
	// order: on a machine shared with other work, the median of the
	// steps' p99s is the run's typical p99, which a burst of that other
	// work in one step moves little (the whole run's p99 follows it).
	StepP99AroundMs []float64        `json:"step_p99_around_ms"`
	StepP99DuringMs []float64        `json:"step_p99_during_ms"`
	LoadBefore      string           `json:"load_average_before"`
	LoadAfter       string           `json:"load_average_after"`
	RemainingDue    map[string]int64 `json:"remaining_due"`
	WorkflowID      string           `json:"workflow_id"`
	IngestUnacked   int              `json:"ingest_unacked"`
	// Reads are the relations that read the most blocks from outside
	// shared buffers over the run, per row deleted (the webhooks beside it
	// included).
	Reads []relationReads `json:"block_reads_per_row,omitempty"`
}

type growthFlags struct {
	api, label, jsonOut                     string
	rate, retentionRate                     float64
	step, warmup, retentionStep             time.Duration
	repeat, retentionBaseline               int
	accounts                                int
	dup, burst                              float64
	copies                                  int
	pauseCmd, resumeCmd, beforeRetentionCmd string
	drainTimeout                            time.Duration
	pgPID                                   int
	pspControl, pixctl                      string
	signingKey                              []byte
	watch                                   []load.Process
	skipCatchUp, skipRetention, skipDrain   bool
	skipIngest                              bool
	countRuns                               int
}

func parseGrowthFlags(args []string) (growthFlags, error) {
	var f growthFlags
	fs := flag.NewFlagSet("pixload growth", flag.ContinueOnError)
	fs.StringVar(&f.api, "api", envOr("PIX_API_URL", "http://127.0.0.1:8080"), "the service's HTTP API")
	fs.StringVar(&f.label, "label", "", "the database's label in the report (empty, history)")
	fs.StringVar(&f.jsonOut, "json", "", "also write the report as JSON to this file")
	fs.Float64Var(&f.rate, "rate", 3000, "webhooks per second of the ingest figure (the operating point)")
	fs.DurationVar(&f.step, "step", 10*time.Second, "duration of each ingest step")
	fs.DurationVar(&f.warmup, "warmup", 2*time.Second, "an unreported step at -rate first")
	fs.IntVar(&f.repeat, "repeat", 2, "ingest steps, steady reconciliations and catch-up listings, each")
	fs.IntVar(&f.accounts, "accounts", 200, "accounts the ingest's PIX are spread over (opened by the run)")
	fs.Float64Var(&f.dup, "dup", 0.2, "share of arrivals that redeliver an earlier PIX")
	fs.Float64Var(&f.burst, "burst", 0.02, "share of new PIX sent as -copies copies at the same instant")
	fs.IntVar(&f.copies, "copies", 5, "copies of a burst")
	fs.StringVar(&f.pauseCmd, "pause-cmd", "", "shell command run before the ingest steps (pause the workers)")
	fs.StringVar(&f.resumeCmd, "resume-cmd", "", "shell command run after them, before the drain")
	fs.StringVar(&f.beforeRetentionCmd, "before-retention-cmd", "", "shell command run before the retention figure (stop the worker that credits: the webhooks beside the retention would otherwise start more credits than the engine takes)")
	fs.DurationVar(&f.drainTimeout, "drain-timeout", 30*time.Minute, "how long to wait for the ingest's PIX to be credited")
	fs.IntVar(&f.pgPID, "pg-pid", 0, "the PostgreSQL server's postmaster pid: its CPU (backends and autovacuum included) per operation; 0: not reported")
	watch := fs.String("watch", "", "the service's processes, role=pid,... (roles api, worker, temporal); empty: found by name")
	fs.StringVar(&f.pspControl, "psp-control", "", "the PSP simulator's control URL: the catch-up's window is told to it (POST /sim/pix); empty: no catch-up figure")
	fs.StringVar(&f.pixctl, "pixctl", "pixctl", "the pixctl binary that runs the catch-up (pixctl psp catchup)")
	fs.Float64Var(&f.retentionRate, "retention-rate", 0, "webhooks per second beside the retention run (0: -rate)")
	fs.DurationVar(&f.retentionStep, "retention-step", time.Second, "duration of each ingest step beside the retention run (a run of a few seconds spans few)")
	fs.IntVar(&f.retentionBaseline, "retention-baseline-steps", 10, "ingest steps before the retention run, and as many after it: its p99's baseline")
	fs.BoolVar(&f.skipRetention, "skip-retention", false, "no retention figure")
	fs.BoolVar(&f.skipCatchUp, "skip-catchup", false, "no catch-up figure")
	fs.BoolVar(&f.skipDrain, "skip-drain", false, "no ingest, drain or steady reconciliation figures")
	fs.BoolVar(&f.skipIngest, "skip-ingest", false, "no ingest or drain figures; the -repeat steady reconciliations still run, with nothing new")
	fs.IntVar(&f.countRuns, "count-runs", 200, "reconciliation runs, at most, after the first two, until one has counted the whole history (0: none)")
	if err := fs.Parse(args); err != nil {
		return f, err
	}
	if f.rate <= 0 || f.step <= 0 || f.repeat < 1 || f.retentionStep <= 0 || f.retentionBaseline < 1 || f.countRuns < 0 {
		return f, errors.New("pixload growth: -rate, -step, -retention-step must be positive, -repeat and -retention-baseline-steps at least 1")
	}
	if f.retentionRate <= 0 {
		f.retentionRate = f.rate
	}
	f.skipCatchUp = f.skipCatchUp || f.pspControl == ""
	var err error
	if f.watch, err = load.ParseProcesses(*watch); err != nil {
		return f, fmt.Errorf("-watch: %w", err)
	}
	if f.signingKey, err = webhooksig.ClientKey(os.Getenv("WEBHOOK_SECRETS")); err != nil {
		return f, fmt.Errorf("WEBHOOK_SECRETS: %w", err)
	}
	return f, nil
}

// growth is `pixload growth`, and `pixload growth compare BASE OTHER`.
func growth(ctx context.Context, args []string, out io.Writer) error {
	if len(args) > 0 && args[0] == "compare" {
		if len(args) != 3 {
			return errors.New("usage: pixload growth compare EMPTY.json HISTORY.json")
		}
		base, err := readGrowthReport(args[1])
		if err != nil {
			return err
		}
		other, err := readGrowthReport(args[2])
		if err != nil {
			return err
		}
		printGrowth(out, base, other)
		return nil
	}
	f, err := parseGrowthFlags(args)
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
	opts, err := cfg.TemporalClientOptions()
	if err != nil {
		return err
	}
	opts.Logger = logging.Temporal(logging.New(os.Stderr, "warn"))
	if cfg.TemporalCodecKeys != nil {
		codec.NewConverters(cfg.PayloadCodec()).ApplyTo(&opts)
	}
	tc, err := client.DialContext(ctx, opts)
	if err != nil {
		return fmt.Errorf("temporal: %w", err)
	}
	defer tc.Close()
	say := func(format string, a ...any) { fmt.Fprintf(out, format+"\n", a...) }
	host, _ := os.Hostname()
	rep := &growthReport{Label: f.label, Started: time.Now().UTC(), Machine: machine(host), Violations: []string{}}
	if rep.PostgreSQL, err = postgresSettings(ctx, pool); err != nil {
		return err
	}
	if rep.Tables, err = tableSizes(ctx, pool); err != nil {
		return err
	}
	say("growth (%s): %s; %s", f.label, rep.PostgreSQL, describeTables(rep.Tables))
	g := &growthRun{f: f, cfg: cfg, pool: pool, tc: tc, rep: rep, say: say}
	procs := f.watch
	if len(procs) == 0 {
		procs = watched(flags{})
	}
	g.procs = procs

	// The first run reads every done inbox row and settles the books; the
	// second still reads every done row (no run bounds them yet): the
	// checkpoint is then as the Schedule keeps it.
	if _, err := g.reconcile(ctx, "first"); err != nil {
		return err
	}
	r, err := g.reconcile(ctx, "second")
	if err != nil {
		return err
	}
	if err := g.countHistory(ctx, r); err != nil {
		return err
	}
	if !f.skipDrain {
		if !f.skipIngest {
			if err := g.ingestAndDrain(ctx); err != nil {
				return err
			}
		}
		for range f.repeat {
			if _, err := g.reconcile(ctx, "steady"); err != nil {
				return err
			}
		}
	}
	if !f.skipCatchUp {
		if err := g.catchUp(ctx); err != nil {
			return err
		}
	}
	if !f.skipRetention {
		if err := g.retention(ctx); err != nil {
			return err
		}
	}
	rep.Figures = rep.figures()
	if f.jsonOut != "" {
		b, _ := json.MarshalIndent(rep, "", "  ") //nolint:errcheck // plain data
		if err := os.WriteFile(f.jsonOut, b, 0o644); err != nil {
			return err
		}
	}
	say("")
	printGrowth(out, nil, rep)
	if len(rep.Violations) > 0 {
		return fmt.Errorf("growth: %s", strings.Join(rep.Violations, "; "))
	}
	return nil
}

// growthRun is one database's run of the figures.
type growthRun struct {
	f     growthFlags
	cfg   config.Config
	pool  *pgxpool.Pool
	tc    client.Client
	rep   *growthReport
	procs []load.Process
	say   func(string, ...any)
}

func (g *growthRun) session() (*load.Session, error) {
	return load.NewSession(load.Options{APIURL: g.f.api, RunID: load.NewRunID(), Accounts: g.f.accounts, DupRatio: g.f.dup,
		BurstRatio: g.f.burst, BurstCopies: g.f.copies, MaxInFlight: 256, RetryUnacked: true, RetryFor: 2 * time.Minute,
		Seed: 1, SigningKey: g.f.signingKey})
}

// ingestAndDrain is figures 2 and 3.
func (g *growthRun) ingestAndDrain(ctx context.Context) error {
	s, err := g.session()
	if err != nil {
		return err
	}
	defer s.Close()
	if err := load.OpenAccounts(ctx, g.pool, s.RunID(), g.f.accounts); err != nil {
		return err
	}
	if g.f.pauseCmd != "" {
		g.say("pausing: %s", g.f.pauseCmd)
		if err := load.Shell(ctx, g.f.pauseCmd); err != nil {
			return err
		}
	}
	if g.f.warmup > 0 {
		if _, err := s.Run(ctx, g.f.rate, g.f.warmup); err != nil {
			return err
		}
	}
	for i := range g.f.repeat {
		g.say("ingest %d: %.0f webhooks/s for %s ...", i+1, g.f.rate, g.f.step)
		var st *load.Step
		var use *load.CPUUse
		reads, err := measureReads(ctx, g.pool, func() (err error) {
			use, err = load.MeasureCPU(func() (err error) {
				st, err = s.Run(ctx, g.f.rate, g.f.step)
				return err
			})
			return err
		})
		if err != nil {
			return err
		}
		in := growthIngest{Rate: g.f.rate, AcceptedPerSec: st.AcceptedPerSecond(), P50Ms: quantileMs(st, 50), P99Ms: quantileMs(st, 99),
			P999Ms: quantileMs(st, 99.9), Unacked: st.Unacked, Load: load.LoadAverage(), hist: st.AckMicros}
		for _, n := range st.Errors {
			in.Errors += n
		}
		if use != nil {
			in.APIMicros = perOp(use.Procs[apiProcess], st.Requests)
			in.PostgresMicros = perOp(use.Trees[g.f.pgPID], st.Requests)
		}
		in.Reads = topReads(reads, st.Requests)
		g.rep.Ingest = append(g.rep.Ingest, in)
		g.say("  accepted %.0f/s, p50 %.1f ms, p99 %.1f ms, p99.9 %.1f ms, errors %d, unacknowledged %d; CPU per request: API %.0f µs, PostgreSQL %.0f µs; blocks read per request: %s; load %s",
			in.AcceptedPerSec, in.P50Ms, in.P99Ms, in.P999Ms, in.Errors, in.Unacked, in.APIMicros, in.PostgresMicros, describeReads(in.Reads), in.Load)
	}
	var drain time.Duration
	var drainErr error
	var use *load.CPUUse
	reads, err := measureReads(ctx, g.pool, func() (err error) {
		use, err = load.MeasureCPU(func() error {
			if g.f.resumeCmd != "" {
				g.say("resuming: %s", g.f.resumeCmd)
				if err := load.Shell(ctx, g.f.resumeCmd); err != nil {
					return err
				}
			}
			g.say("draining ...")
			drain, drainErr = load.Drain(ctx, g.pool, s.RunID(), g.f.drainTimeout)
			return nil
		})
		return err
	})
	if err != nil {
		return err
	}
	d := &growthDrain{Seconds: drain.Seconds(), Load: load.LoadAverage()}
	if drainErr != nil {
		g.rep.Violations = append(g.rep.Violations, drainErr.Error())
	}
	times, err := load.Times(ctx, g.pool, s)
	if err != nil {
		return err
	}
	d.Credits, d.CreditsPerSec = times.Credits, times.CreditsPerSecond
	if use != nil && d.Credits > 0 {
		d.PostgresMicros = perOp(use.Trees[g.f.pgPID], int64(d.Credits))
		var all time.Duration
		for _, v := range use.Procs {
			all += v
		}
		d.AllMicros = perOp(all, int64(d.Credits))
	}
	d.Reads = topReads(reads, int64(d.Credits))
	g.rep.Drain = d
	g.say("  %d credits in %.1f s: %.1f credits/s; CPU per credit: PostgreSQL %.0f µs, all %.0f µs; blocks read per credit: %s; load %s",
		d.Credits, d.Seconds, d.CreditsPerSec, d.PostgresMicros, d.AllMicros, describeReads(d.Reads), d.Load)
	inv, err := load.Check(ctx, g.pool, s)
	if err != nil {
		return err
	}
	g.rep.Violations = append(g.rep.Violations, inv.Violations()...)
	return nil
}

// reconcile is one run of the reconciliation's Schedule, timed.
func (g *growthRun) reconcile(ctx context.Context, which string) (reconcile.Reconciliation, error) {
	g.say("reconciliation (%s run) ...", which)
	var r reconcile.Reconciliation
	run, err := g.scheduledRun(ctx, reconcile.ScheduleID(g.cfg.TaskQueues().Base), &r)
	if err != nil {
		return r, err
	}
	if !r.Balanced() {
		g.rep.Violations = append(g.rep.Violations, fmt.Sprintf("the reconciliation found differences: %+v", r))
	}
	run.RecountedAccounts, run.RecountedMovements = r.Progress.RecountedAccounts, r.Progress.RecountedMovements
	g.say("  %.3f s (%s): %d accounts (%d movements) recounted, %d unchecked, the done rows' first round over: %v; load %s", run.Seconds, run.WorkflowID,
		run.RecountedAccounts, run.RecountedMovements, r.Progress.UncheckedAccounts, !r.Progress.DoneHistoryPending, run.Load)
	switch which {
	case "first":
		g.rep.ReconcileFirst = &run
	case "second":
		g.rep.ReconcileSecond = &run
	case "count":
	default:
		g.rep.ReconcileSteady = append(g.rep.ReconcileSteady, run)
	}
	return r, nil
}

// countHistory runs the reconciliation after last until a run has counted
// the whole history (its budgets a run: docs/operations.md, "The
// reconciliation's rotation"), at most -count-runs runs.
func (g *growthRun) countHistory(ctx context.Context, last reconcile.Reconciliation) error {
	c := &countedRuns{Complete: last.Complete()}
	for ; !c.Complete && c.Runs < g.f.countRuns; c.Runs++ {
		began := time.Now()
		r, err := g.reconcile(ctx, "count")
		if err != nil {
			return err
		}
		c.Seconds += time.Since(began).Seconds()
		c.Complete = r.Complete()
	}
	g.rep.ReconcileCount = c
	g.say("  the history counted in %d more runs (%.0f s): complete %v", c.Runs, c.Seconds, c.Complete)
	return nil
}

// scheduledRun triggers the Schedule id, waits for the run it starts and
// returns its activities' span; result receives the run's result.
func (g *growthRun) scheduledRun(ctx context.Context, id string, result any) (timedRun, error) {
	h := g.tc.ScheduleClient().GetHandle(ctx, id)
	// The worker makes its Schedules once its build is current, a moment
	// after it is ready.
	var before *client.ScheduleDescription
	for deadline := time.Now().Add(time.Minute); ; {
		var err error
		if before, err = h.Describe(ctx); err == nil {
			break
		}
		var notFound *serviceerror.NotFound
		if !errors.As(err, &notFound) || time.Now().After(deadline) {
			return timedRun{}, fmt.Errorf("schedule %s: %w", id, err)
		}
		select {
		case <-ctx.Done():
			return timedRun{}, ctx.Err()
		case <-time.After(time.Second):
		}
	}
	if err := h.Trigger(ctx, client.ScheduleTriggerOptions{Overlap: enumspb.SCHEDULE_OVERLAP_POLICY_ALLOW_ALL}); err != nil {
		return timedRun{}, fmt.Errorf("trigger %s: %w", id, err)
	}
	var started *client.ScheduleWorkflowExecution
	for deadline := time.Now().Add(time.Minute); started == nil; {
		d, err := h.Describe(ctx)
		if err != nil {
			return timedRun{}, fmt.Errorf("schedule %s: %w", id, err)
		}
		if n := len(d.Info.RecentActions); d.Info.NumActions > before.Info.NumActions && n > 0 {
			started = d.Info.RecentActions[n-1].StartWorkflowResult
			break
		}
		if time.Now().After(deadline) {
			return timedRun{}, fmt.Errorf("schedule %s: no run started within a minute of the trigger", id)
		}
		select {
		case <-ctx.Done():
			return timedRun{}, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	if started == nil {
		return timedRun{}, fmt.Errorf("schedule %s: its run started no workflow", id)
	}
	runErr := g.tc.GetWorkflow(ctx, started.WorkflowID, started.FirstExecutionRunID).Get(ctx, result)
	seconds, err := activitySpan(ctx, g.tc, started.WorkflowID, started.FirstExecutionRunID)
	if err != nil {
		return timedRun{}, err
	}
	if runErr != nil {
		g.rep.Violations = append(g.rep.Violations, fmt.Sprintf("%s: %v", started.WorkflowID, runErr))
	}
	return timedRun{WorkflowID: started.WorkflowID, Seconds: seconds, Load: load.LoadAverage()}, nil
}

// activitySpan is the time from the run's first activity started to its
// last one closed: the work, without the engine's scheduling around it.
func activitySpan(ctx context.Context, tc client.Client, workflowID, runID string) (float64, error) {
	var first, last time.Time
	it := tc.GetWorkflowHistory(ctx, workflowID, runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		e, err := it.Next()
		if err != nil {
			return 0, fmt.Errorf("history of %s: %w", workflowID, err)
		}
		at := e.GetEventTime().AsTime()
		switch e.GetEventType() {
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_STARTED:
			if first.IsZero() || at.Before(first) {
				first = at
			}
		case enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED, enumspb.EVENT_TYPE_ACTIVITY_TASK_FAILED, enumspb.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT:
			if at.After(last) {
				last = at
			}
		}
	}
	if first.IsZero() || last.Before(first) {
		return 0, fmt.Errorf("history of %s: no activity ran", workflowID)
	}
	return last.Sub(first).Seconds(), nil
}

// catchUp is figure 5: the catch-up's window (the fixture rows of source
// api_pix, tag C) told to the PSP simulator, then listed by `pixctl psp
// catchup` -repeat times.
func (g *growthRun) catchUp(ctx context.Context) error {
	items, from, to, err := catchUpWindowItems(ctx, g.pool)
	if err != nil {
		return err
	}
	if len(items) == 0 {
		g.say("catch-up: no PIX of the window in the database (scripts/history.sql tag C); not measured")
		return nil
	}
	g.say("catch-up: telling the PSP simulator of %d PIX from %s to %s ...", len(items), from.Format(time.RFC3339), to.Format(time.RFC3339))
	if err := postToSimulator(ctx, g.f.pspControl, items); err != nil {
		return err
	}
	for i := range g.f.repeat {
		g.say("catch-up %d: pixctl psp catchup -from %s -to %s ...", i+1, from.Format(time.RFC3339), to.Format(time.RFC3339))
		cmd := exec.CommandContext(ctx, g.f.pixctl, "psp", "catchup", "-o", "json", "-wait", "30m",
			"-from", from.Format(time.RFC3339), "-to", to.Format(time.RFC3339))
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		var seconds float64
		reads, err := measureReads(ctx, g.pool, func() error {
			start := time.Now()
			err := cmd.Run()
			seconds = time.Since(start).Seconds()
			if err != nil {
				return fmt.Errorf("pixctl psp catchup: %w: %s %s", err, stdout.String(), stderr.String())
			}
			return nil
		})
		if err != nil {
			return err
		}
		c := growthCatchUp{PIX: len(items), Seconds: seconds, Reads: topReads(reads, int64(len(items))), Load: load.LoadAverage()}
		if err := json.Unmarshal(stdout.Bytes(), &c.Counts); err != nil {
			return fmt.Errorf("pixctl psp catchup: its answer %q: %w", stdout.String(), err)
		}
		g.rep.CatchUp = append(g.rep.CatchUp, c)
		g.say("  %.1f s: %v; blocks read per PIX: %s; load %s", c.Seconds, c.Counts, describeReads(c.Reads), c.Load)
	}
	return nil
}

// catchUpWindowItems reads the catch-up's window from the database: the
// API Pix items of the fixture rows (their stored payloads, as the PSP
// would list them), by horario, and the window from the first to the last
// (whole seconds, both included).
func catchUpWindowItems(ctx context.Context, pool *pgxpool.Pool) (items []json.RawMessage, from, to time.Time, err error) {
	rows, err := pool.Query(ctx, `SELECT payload FROM inbox_messages WHERE source = 'api_pix' AND psp = 'pspsim' ORDER BY received_at`)
	if err != nil {
		return nil, from, to, fmt.Errorf("the catch-up's window: %w", err)
	}
	if items, err = pgx.CollectRows(rows, pgx.RowTo[json.RawMessage]); err != nil {
		return nil, from, to, fmt.Errorf("the catch-up's window: %w", err)
	}
	for _, it := range items {
		var p struct {
			Horario time.Time `json:"horario"`
		}
		if err := json.Unmarshal(it, &p); err != nil {
			return nil, from, to, fmt.Errorf("the catch-up's window: %s: %w", it, err)
		}
		if from.IsZero() || p.Horario.Before(from) {
			from = p.Horario
		}
		if p.Horario.After(to) {
			to = p.Horario
		}
	}
	return items, from.Truncate(time.Second), to.Truncate(time.Second).Add(time.Second), nil
}

// postToSimulator tells the PSP simulator of each item (POST /sim/pix), 16
// at a time, about in the order given.
func postToSimulator(ctx context.Context, control string, items []json.RawMessage) error {
	next := make(chan json.RawMessage)
	errs := make(chan error, 16)
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for it := range next {
				req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(control, "/")+"/sim/pix", bytes.NewReader(it))
				if err != nil {
					errs <- err
					return
				}
				req.Header.Set("Content-Type", "application/json")
				res, err := http.DefaultClient.Do(req)
				if err != nil {
					errs <- fmt.Errorf("POST /sim/pix: %w", err)
					return
				}
				body, _ := io.ReadAll(res.Body) //nolint:errcheck // read for the message only
				res.Body.Close()
				if res.StatusCode != http.StatusAccepted {
					errs <- fmt.Errorf("POST /sim/pix: %d %s", res.StatusCode, body)
					return
				}
			}
		})
	}
	var err error
feed:
	for _, it := range items {
		select {
		case next <- it:
		case err = <-errs:
			break feed
		}
	}
	close(next)
	wg.Wait()
	close(errs)
	return errors.Join(err, <-errs)
}

// retention is figure 6: the retention run triggered while webhooks arrive
// at -retention-rate (the workers running: the run is theirs), in steps of
// -retention-step, against -retention-baseline-steps steps before it.
func (g *growthRun) retention(ctx context.Context) error {
	s, err := g.session()
	if err != nil {
		return err
	}
	defer s.Close()
	if err := load.OpenAccounts(ctx, g.pool, s.RunID(), g.f.accounts); err != nil {
		return err
	}
	if g.f.beforeRetentionCmd != "" {
		g.say("before the retention: %s", g.f.beforeRetentionCmd)
		if err := load.Shell(ctx, g.f.beforeRetentionCmd); err != nil {
			return err
		}
	}
	before, err := dueForRetention(ctx, g.pool, g.cfg)
	if err != nil {
		return err
	}
	r := &growthRetention{Rate: g.f.retentionRate, LoadBefore: load.LoadAverage(), Deleted: map[string]int64{}}
	g.say("retention: %v rows due; %d steps of %.0f webhooks/s first ...", before, g.f.retentionBaseline, r.Rate)
	if g.f.warmup > 0 {
		if _, err := s.Run(ctx, r.Rate, g.f.warmup); err != nil {
			return err
		}
	}
	// The baseline brackets the run: steps before it and as many after it,
	// so that a drift of the machine's other load over the figure weighs on
	// both sides alike.
	aroundHist := hdrhistogram.New(1, 60_000_000, 3)
	baseline := func() error {
		for range g.f.retentionBaseline {
			st, err := s.Run(ctx, r.Rate, g.f.retentionStep)
			if err != nil {
				return err
			}
			aroundHist.Merge(st.AckMicros)
			r.StepP99AroundMs = append(r.StepP99AroundMs, quantileMs(st, 99))
			r.IngestUnacked += st.Unacked
			r.StepsAround++
		}
		return nil
	}
	if err := baseline(); err != nil {
		return err
	}
	g.say("  before: p99 %.1f ms; triggering the retention ...", float64(aroundHist.ValueAtQuantile(99))/1000)
	type outcome struct {
		run timedRun
		err error
	}
	done := make(chan outcome, 1)
	readsBefore, err := blockReads(ctx, g.pool)
	if err != nil {
		return err
	}
	go func() {
		run, err := g.scheduledRun(ctx, retention.ScheduleID(g.cfg.TaskQueues().Base), nil)
		done <- outcome{run, err}
	}()
	duringHist := hdrhistogram.New(1, 60_000_000, 3)
	var res outcome
	for finished := false; !finished; {
		st, err := s.Run(ctx, r.Rate, g.f.retentionStep)
		if err != nil {
			return err
		}
		duringHist.Merge(st.AckMicros)
		r.StepP99DuringMs = append(r.StepP99DuringMs, quantileMs(st, 99))
		r.IngestUnacked += st.Unacked
		r.StepsDuring++
		select {
		case res = <-done:
			finished = true
		default:
		}
	}
	if res.err != nil {
		return res.err
	}
	readsAfter, err := blockReads(ctx, g.pool)
	if err != nil {
		return err
	}
	if err := baseline(); err != nil {
		return err
	}
	after, err := dueForRetention(ctx, g.pool, g.cfg)
	if err != nil {
		return err
	}
	var total int64
	for table, n := range before {
		r.Deleted[table] = n - after[table]
		total += n - after[table]
	}
	r.RemainingDue, r.WorkflowID, r.Seconds = after, res.run.WorkflowID, res.run.Seconds
	if r.Seconds > 0 {
		r.RowsPerSec = float64(total) / r.Seconds
	}
	r.Reads = topReads(readsSince(readsBefore, readsAfter), total)
	r.P99AroundMs = float64(aroundHist.ValueAtQuantile(99)) / 1000
	r.P99DuringMs = float64(duringHist.ValueAtQuantile(99)) / 1000
	r.LoadAfter = load.LoadAverage()
	g.rep.Retention = r
	g.say("  deleted %v in %.1f s: %.0f rows/s; ingest p99 %.1f ms before and after, %.1f ms during (%d steps; the steps' median p99 %.1f → %.1f ms); blocks read per row: %s; load %s",
		r.Deleted, r.Seconds, r.RowsPerSec, r.P99AroundMs, r.P99DuringMs, r.StepsDuring, medianOf(r.StepP99AroundMs), medianOf(r.StepP99DuringMs),
		describeReads(r.Reads), r.LoadAfter)
	return nil
}

// medianOf is the median of v (0 for none).
func medianOf(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(v))
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// dueForRetention counts the rows the retention deletes, by table, as its
// statements choose them (saga/retention/maintenance.sql) with the
// service's windows (INBOX_RETENTION, the retention's own; OUTBOX_RETENTION).
func dueForRetention(ctx context.Context, pool *pgxpool.Pool, cfg config.Config) (map[string]int64, error) {
	kept, err := retention.SettingsFrom(os.LookupEnv)
	if err != nil {
		return nil, err
	}
	var inbox, events, keys int64
	err = pool.QueryRow(ctx, `SELECT
		(SELECT count(*) FROM inbox_messages WHERE status = 'done' AND processed_at < now() - $1::interval),
		(SELECT count(*) FROM outbox_events WHERE published_at < now() - $2::interval),
		(SELECT count(*) FROM idempotency_keys WHERE expires_at <= now())`, kept.InboxRetention, cfg.OutboxRetention).Scan(&inbox, &events, &keys)
	if err != nil {
		return nil, fmt.Errorf("rows due for the retention: %w", err)
	}
	return map[string]int64{"inbox_messages": inbox, "outbox_events": events, "idempotency_keys": keys}, nil
}

// relationReads is one relation's blocks read from outside PostgreSQL's
// shared buffers (the operating system's cache, or the disk) per operation:
// a table's heap (and TOAST) by the table's name, an index by its own.
type relationReads struct {
	Name  string  `json:"name"`
	PerOp float64 `json:"per_op"`
}

// blockReads reads pg_statio's counters of blocks read, by relation.
// PostgreSQL publishes a backend's counters within a second or so: over a
// short step they are approximate.
func blockReads(ctx context.Context, pool *pgxpool.Pool) (map[string]int64, error) {
	rows, err := pool.Query(ctx, `
		SELECT relname::text, coalesce(heap_blks_read, 0) + coalesce(toast_blks_read, 0) FROM pg_statio_user_tables
		UNION ALL
		SELECT indexrelname::text, coalesce(idx_blks_read, 0) FROM pg_statio_user_indexes`)
	if err != nil {
		return nil, fmt.Errorf("block reads: %w", err)
	}
	out := map[string]int64{}
	var name string
	var n int64
	if _, err := pgx.ForEachRow(rows, []any{&name, &n}, func() error {
		out[name] += n
		return nil
	}); err != nil {
		return nil, fmt.Errorf("block reads: %w", err)
	}
	return out, nil
}

// measureReads runs f and returns the blocks each relation read meanwhile.
func measureReads(ctx context.Context, pool *pgxpool.Pool, f func() error) (map[string]int64, error) {
	before, err := blockReads(ctx, pool)
	if err != nil {
		return nil, err
	}
	if err := f(); err != nil {
		return nil, err
	}
	after, err := blockReads(ctx, pool)
	if err != nil {
		return nil, err
	}
	return readsSince(before, after), nil
}

func readsSince(before, after map[string]int64) map[string]int64 {
	out := map[string]int64{}
	for name, n := range after {
		if d := n - before[name]; d > 0 {
			out[name] = d
		}
	}
	return out
}

// topReads is the five relations that read the most, per operation.
func topReads(reads map[string]int64, ops int64) []relationReads {
	if ops <= 0 {
		return nil
	}
	var out []relationReads
	for name, n := range reads {
		out = append(out, relationReads{name, float64(n) / float64(ops)})
	}
	slices.SortFunc(out, func(a, b relationReads) int { return cmp.Compare(b.PerOp, a.PerOp) })
	return out[:min(5, len(out))]
}

func describeReads(rs []relationReads) string {
	if len(rs) == 0 {
		return "none"
	}
	parts := make([]string, len(rs))
	for i, r := range rs {
		parts[i] = fmt.Sprintf("%s %.2f", r.Name, r.PerOp)
	}
	return strings.Join(parts, ", ")
}

// postgresSettings names the server and the settings the figures depend on.
func postgresSettings(ctx context.Context, pool *pgxpool.Pool) (string, error) {
	var s string
	err := pool.QueryRow(ctx, `SELECT 'PostgreSQL ' || current_setting('server_version') || ', shared_buffers ' || current_setting('shared_buffers')
		|| ', autovacuum ' || current_setting('autovacuum') || ', autovacuum_vacuum_cost_limit ' || current_setting('autovacuum_vacuum_cost_limit')
		|| ', synchronous_commit ' || current_setting('synchronous_commit')`).Scan(&s)
	if err != nil {
		return "", fmt.Errorf("postgresql settings: %w", err)
	}
	return s, nil
}

// growthTables are the tables that grow with every PIX.
var growthTables = []string{"inbox_messages", "pix_credits", "outbox_events", "idempotency_keys"}

func tableSizes(ctx context.Context, pool *pgxpool.Pool) ([]tableSize, error) {
	rows, err := pool.Query(ctx, `SELECT relname, greatest(reltuples, 0)::bigint, pg_total_relation_size(oid)
		FROM pg_class WHERE relname = ANY($1) AND relkind = 'r' ORDER BY array_position($1, relname::text)`, growthTables)
	if err != nil {
		return nil, fmt.Errorf("table sizes: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (tableSize, error) {
		var t tableSize
		err := r.Scan(&t.Name, &t.Rows, &t.Bytes)
		return t, err
	})
	if err != nil {
		return nil, fmt.Errorf("table sizes: %w", err)
	}
	return out, nil
}

func describeTables(ts []tableSize) string {
	parts := make([]string, len(ts))
	for i, t := range ts {
		parts[i] = fmt.Sprintf("%s %d rows (%.0f MB)", t.Name, t.Rows, mib(t.Bytes))
	}
	return strings.Join(parts, ", ")
}

func perOp(d time.Duration, ops int64) float64 {
	if ops <= 0 {
		return 0
	}
	return float64(d.Microseconds()) / float64(ops)
}

func readGrowthReport(path string) (*growthReport, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r growthReport
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &r, nil
}

// growthFigure is one line of the side-by-side table: the figure's name,
// unit and target.
type growthFigure struct {
	key    string
	name   string
	unit   string
	target string
	// check decides the verdict from the history value and the ratio
	// (nil: reported only).
	check func(hist, ratio float64) bool
}

// figures are the report's figures: the ingest's means over its steps
// (its p99 over all their requests), the others the median of their
// repeats.
func (r *growthReport) figures() map[string]float64 {
	out := map[string]float64{}
	if len(r.Ingest) > 0 {
		merged := hdrhistogram.New(1, 60_000_000, 3)
		var acc, api, pg float64
		for _, in := range r.Ingest {
			if in.hist != nil {
				merged.Merge(in.hist)
			}
			acc += in.AcceptedPerSec
			api += in.APIMicros
			pg += in.PostgresMicros
		}
		n := float64(len(r.Ingest))
		out["accepted"], out["api"], out["pg_webhook"] = acc/n, api/n, pg/n
		out["p99"] = float64(merged.ValueAtQuantile(99)) / 1000
	}
	if r.Drain != nil {
		out["credits"], out["pg_credit"] = r.Drain.CreditsPerSec, r.Drain.PostgresMicros
	}
	// The run after the drain (its PIX new to it), then one with nothing
	// new; without a drain, the median of the runs (nothing new to any).
	if r.Drain != nil && len(r.ReconcileSteady) > 0 {
		out["reconcile"] = r.ReconcileSteady[0].Seconds
	}
	if r.Drain != nil && len(r.ReconcileSteady) > 1 {
		out["reconcile_idle"] = r.ReconcileSteady[1].Seconds
	}
	if r.Drain == nil && len(r.ReconcileSteady) > 0 {
		out["reconcile_steady"] = median(r.ReconcileSteady, func(t timedRun) float64 { return t.Seconds })
	}
	if len(r.ReconcileSteady) > 0 {
		out["recounted"] = median(r.ReconcileSteady, func(t timedRun) float64 { return float64(t.RecountedMovements) })
	}
	if r.ReconcileCount != nil {
		out["reconcile_count"] = float64(r.ReconcileCount.Runs)
	}
	if r.ReconcileFirst != nil {
		out["reconcile_first"] = r.ReconcileFirst.Seconds
	}
	if len(r.CatchUp) > 0 {
		out["catchup"] = median(r.CatchUp, func(c growthCatchUp) float64 { return c.Seconds })
	}
	if r.Retention != nil {
		out["retention"] = r.Retention.RowsPerSec
		if r.Retention.P99AroundMs > 0 {
			out["retention_p99"] = r.Retention.P99DuringMs / r.Retention.P99AroundMs
		}
	}
	return out
}

func median[T any](xs []T, v func(T) float64) float64 {
	vals := make([]float64, len(xs))
	for i, x := range xs {
		vals[i] = v(x)
	}
	for i := range vals { // a few values: insertion sort
		for j := i; j > 0 && vals[j] < vals[j-1]; j-- {
			vals[j], vals[j-1] = vals[j-1], vals[j]
		}
	}
	n := len(vals)
	if n%2 == 1 {
		return vals[n/2]
	}
	return (vals[n/2-1] + vals[n/2]) / 2
}

// printGrowth prints the figures, beside base's when there is one.
func printGrowth(w io.Writer, base, rep *growthReport) {
	cur := rep.Figures
	var old map[string]float64
	if base != nil {
		old = base.Figures
	}
	within := func(_, ratio float64) bool { return ratio <= growthTargetRatio }
	atLeast := func(_, ratio float64) bool { return ratio >= growthMinRatio }
	rate := 0.0
	if len(rep.Ingest) > 0 {
		rate = rep.Ingest[0].Rate
	}
	figs := []growthFigure{
		{key: "accepted", name: fmt.Sprintf("webhooks accepted/s at %.0f/s", rate), unit: "/s", target: "≥ 0.90×", check: atLeast},
		{key: "p99", name: "  acknowledgement p99", unit: "ms", target: "≤ 1.10×", check: within},
		{key: "api", name: "  API CPU per webhook", unit: "µs"},
		{key: "pg_webhook", name: "  PostgreSQL CPU per webhook", unit: "µs"},
		{key: "credits", name: "credits/s over the drain", unit: "/s", target: "≥ 0.90×", check: atLeast},
		{key: "pg_credit", name: "  PostgreSQL CPU per credit", unit: "µs"},
		{key: "reconcile", name: "reconciliation, the run after the drain", unit: "s", target: "≤ 1.10×", check: within},
		{key: "reconcile_idle", name: "  the next, nothing new", unit: "s"},
		{key: "reconcile_steady", name: "reconciliation, a steady run, nothing new (median)", unit: "s", target: "≤ 1.10×", check: within},
		{key: "recounted", name: "  movements recounted a steady run (median)", unit: ""},
		{key: "reconcile_count", name: "  runs after the first two that counted the history", unit: ""},
		{key: "reconcile_first", name: "  the first run (settles the books)", unit: "s"},
		{key: "catchup", name: "catch-up of the window", unit: "s", target: "≤ 1.10×, < 60 s",
			check: func(h, ratio float64) bool { return ratio <= growthTargetRatio && h < catchUpMaxSeconds }},
		{key: "retention", name: "retention, rows deleted/s", unit: "/s", target: "≥ 0.90×, ≥ 2,000/s",
			check: func(h, ratio float64) bool { return ratio >= growthMinRatio && h >= retentionMinPerSec }},
		{key: "retention_p99", name: "  ingest p99 during ÷ before and after", unit: "×", target: "≤ 1.10",
			check: func(h, _ float64) bool { return h <= retentionP99Allowed }},
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	label := rep.Label
	if base != nil {
		fmt.Fprintf(tw, "  figure\t%s\t%s\tratio\ttarget\tverdict\n", base.Label, label)
	} else {
		fmt.Fprintf(tw, "  figure\t%s\n", label)
	}
	for _, fig := range figs {
		h, ok := cur[fig.key]
		if !ok {
			continue
		}
		if old == nil {
			fmt.Fprintf(tw, "  %s\t%s\n", fig.name, formatFigure(h, fig.unit))
			continue
		}
		e := old[fig.key]
		ratio := 0.0
		if e > 0 {
			ratio = h / e
		}
		verdict := ""
		if fig.check != nil {
			verdict = map[bool]string{true: "met", false: "NOT MET"}[fig.check(h, ratio)]
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%.2f\t%s\t%s\n", fig.name, formatFigure(e, fig.unit), formatFigure(h, fig.unit), ratio, fig.target, verdict)
	}
	tw.Flush()
	fmt.Fprintln(w)
	for _, r := range []*growthReport{base, rep} {
		if r != nil {
			fmt.Fprintf(w, "  %s: %s; load average (1 min) %s, from %s\n", r.Label, describeTables(r.Tables), r.loadRange(),
				r.Started.Format(time.RFC3339))
		}
	}
	for _, r := range []*growthReport{base, rep} {
		if r != nil && len(r.Violations) > 0 {
			fmt.Fprintf(w, "  %s: VIOLATIONS: %s\n", r.Label, strings.Join(r.Violations, "; "))
		}
	}
}

// loadRange is the least and the most of the machine's 1-minute load
// average at the report's figures.
func (r *growthReport) loadRange() string {
	var loads []string
	add := func(l string) { loads = append(loads, l) }
	for _, t := range []*timedRun{r.ReconcileFirst, r.ReconcileSecond} {
		if t != nil {
			add(t.Load)
		}
	}
	for _, t := range r.ReconcileSteady {
		add(t.Load)
	}
	for _, in := range r.Ingest {
		add(in.Load)
	}
	if r.Drain != nil {
		add(r.Drain.Load)
	}
	for _, c := range r.CatchUp {
		add(c.Load)
	}
	if r.Retention != nil {
		add(r.Retention.LoadBefore)
		add(r.Retention.LoadAfter)
	}
	lo, hi := 0.0, 0.0
	for i, l := range loads {
		var v float64
		if _, err := fmt.Sscan(l, &v); err != nil {
			continue
		}
		if i == 0 || v < lo {
			lo = v
		}
		hi = max(hi, v)
	}
	return fmt.Sprintf("%.1f–%.1f", lo, hi)
}

func formatFigure(v float64, unit string) string {
	switch unit {
	case "s":
		return fmt.Sprintf("%.3f s", v)
	case "ms":
		return fmt.Sprintf("%.1f ms", v)
	case "×":
		return fmt.Sprintf("%.2f×", v)
	case "µs":
		return fmt.Sprintf("%.0f µs", v)
	default:
		return fmt.Sprintf("%.1f%s", v, unit)
	}
}
