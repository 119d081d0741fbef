package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pixbank/pix/tooling/load"
)

// SoakReport is the outcome of a soak: a fixed number of webhooks through
// the whole pipeline (the worker crediting while they arrive), then the
// books, the time it took and what it used.
type SoakReport struct {
	// Webhooks is the arrivals sent; Requests every POST (copies of a
	// burst, resends); DistinctPIX the PIX among them.
	Webhooks    int64   `json:"webhooks"`
	Requests    int64   `json:"requests"`
	DistinctPIX int     `json:"distinct_pix"`
	Acked       int64   `json:"acked"`
	RatePerSec  float64 `json:"rate_per_sec"`
	DupRatio    float64 `json:"redelivery_ratio"`
	BurstRatio  float64 `json:"burst_ratio"`
	BurstCopies int     `json:"burst_copies"`

	// SendSeconds: the first arrival to the last answer; DrainSeconds: from
	// then until no row was pending; TotalSeconds: both.
	SendSeconds    float64          `json:"send_seconds"`
	DrainSeconds   float64          `json:"drain_seconds"`
	TotalSeconds   float64          `json:"total_seconds"`
	AcceptedPerSec float64          `json:"accepted_per_sec"`
	AckP50Ms       float64          `json:"ack_p50_ms"`
	AckP99Ms       float64          `json:"ack_p99_ms"`
	Errors         map[string]int64 `json:"errors"`
	Unacked        int              `json:"unacked"`
	// PeakPending is the deepest backlog of pending rows seen (sampled
	// with the progress lines).
	PeakPending int64 `json:"peak_pending"`

	Credits            int     `json:"credits"`
	CreditsPerSec      float64 `json:"credits_per_sec"`
	AckToCreditedP50Ms int64   `json:"ack_to_credited_p50_ms"`
	AckToCreditedP99Ms int64   `json:"ack_to_credited_p99_ms"`
	// Lost: acknowledged PIX with no credit. Doubled: end_to_end_ids with
	// more than one pix_credits row. Unbalanced: accounts whose balance is
	// not opening + credits.
	Lost       int   `json:"lost"`
	Doubled    int64 `json:"doubled"`
	Unbalanced int   `json:"unbalanced_accounts"`

	// CPU is the machine's CPU per credit over the whole soak, and
	// CPUSeconds each process group's CPU time (those of at least 1%).
	CPU        *CPUReport         `json:"cpu,omitempty"`
	CPUSeconds map[string]float64 `json:"cpu_seconds,omitempty"`
	// DB is PostgreSQL's commits and log per credit over the whole soak.
	DB     *DBReport         `json:"db,omitempty"`
	Memory []load.MemoryPeak `json:"memory,omitempty"`
	// DatabaseBytes are the databases' sizes before and after.
	DatabaseBytesBefore map[string]int64 `json:"database_bytes_before,omitempty"`
	DatabaseBytesAfter  map[string]int64 `json:"database_bytes_after,omitempty"`
}

// runSoak sends f.soak webhooks at f.soakRate through the running pipeline
// (the worker is not paused), waits for every PIX to be credited, checks the
// books and reports the duration and resource use into rep.
func runSoak(ctx context.Context, f flags, pool *pgxpool.Pool, procs []load.Process, rep *Report, say func(string, ...any)) error {
	runID := load.NewRunID()
	sr := &SoakReport{Webhooks: f.soak, RatePerSec: f.soakRate, DupRatio: f.soakDup, BurstRatio: f.burst, BurstCopies: f.copies}
	rep.Soak = sr
	var err error
	if sr.DatabaseBytesBefore, err = load.DatabaseSizes(ctx, pool, f.otherDBs); err != nil {
		return err
	}
	session, err := load.NewSession(load.Options{
		APIURLs: f.apis, RunID: runID, Accounts: f.accounts, DupRatio: f.soakDup, BurstRatio: f.burst, BurstCopies: f.copies,
		MaxInFlight: f.maxInFlight, RetryUnacked: f.retryUnacked, RetryFor: f.retryFor, Seed: 1, SigningKey: f.signingKey,
	})
	if err != nil {
		return err
	}
	defer session.Close()
	if err := load.OpenAccounts(ctx, pool, runID, f.accounts); err != nil {
		return err
	}
	var sampler *load.MemorySampler
	if len(procs) > 0 {
		sampler = load.StartMemorySampler(procs, f.memoryEvery)
	}
	say("soak: %s webhooks at %.0f/s (redeliveries %.0f%%, bursts %.0f%% × %d) through the whole pipeline, over %d API(s) ...",
		thousands(float64(f.soak)), f.soakRate, 100*f.soakDup, 100*f.burst, f.copies, len(f.apis))

	dbBefore, dbErr := load.ReadDBStats(ctx, pool, f.otherDBs)
	cpuBefore, cpuErr := load.ReadCPU()
	started := time.Now()
	progressCtx, stopProgress := context.WithCancel(ctx)
	var progress sync.WaitGroup
	var peakPending atomic.Int64
	progress.Go(func() { soakProgress(progressCtx, pool, session, procs, started, f, say, &peakPending) })
	step, sendErr := session.RunN(ctx, f.soakRate, f.soak)
	sent := time.Since(started)
	var drain time.Duration
	var drainErr error
	if sendErr == nil {
		say("  sent in %.0f s; draining: waiting for every PIX to be credited ...", sent.Seconds())
		drain, drainErr = load.Drain(ctx, pool, runID, f.drainTimeout)
	}
	stopProgress()
	progress.Wait()
	cpuAfter, cpuAfterErr := load.ReadCPU()
	if sampler != nil {
		sr.Memory = sampler.Stop()
	}
	if sendErr != nil {
		return sendErr
	}
	dbAfter, dbAfterErr := load.ReadDBStats(ctx, pool, f.otherDBs)

	sr.Requests, sr.Acked, sr.Errors, sr.Unacked = step.Requests, step.Acked, step.Errors, step.Unacked
	sr.AcceptedPerSec = float64(step.Acked) / sent.Seconds()
	sr.AckP50Ms, sr.AckP99Ms = quantileMs(step, 50), quantileMs(step, 99)
	sr.SendSeconds, sr.DrainSeconds, sr.TotalSeconds = sent.Seconds(), drain.Seconds(), (sent + drain).Seconds()
	sr.PeakPending = peakPending.Load()
	if sr.DatabaseBytesAfter, err = load.DatabaseSizes(ctx, pool, f.otherDBs); err != nil {
		return err
	}
	if rep.Invariants, err = load.Check(ctx, pool, session); err != nil {
		return err
	}
	if sr.Doubled, err = load.Doubled(ctx, pool, runID); err != nil {
		return err
	}
	times, err := load.Times(ctx, pool, session)
	if err != nil {
		return err
	}
	sr.DistinctPIX = len(session.Sent())
	sr.Credits, sr.CreditsPerSec = times.Credits, times.CreditsPerSecond
	sr.AckToCreditedP50Ms = times.AckToCreditedMicros.ValueAtQuantile(50) / 1000
	sr.AckToCreditedP99Ms = times.AckToCreditedMicros.ValueAtQuantile(99) / 1000
	sr.Lost, sr.Unbalanced = rep.Invariants.AckedMissing, rep.Invariants.UnbalancedAccounts
	if cpuErr == nil && cpuAfterErr == nil {
		use := cpuAfter.Since(cpuBefore)
		sr.CPU = cpuReport(&use, int64(times.Credits)).withProcesses(&use, procs, int64(times.Credits))
		sr.CPUSeconds = cpuSeconds(use, 0.01)
	}
	if dbErr == nil && dbAfterErr == nil {
		use := dbAfter.Since(dbBefore)
		sr.DB = dbReport(&use, int64(times.Credits))
	}
	rep.CreditsPerSec, rep.DrainSeconds = sr.CreditsPerSec, sr.DrainSeconds
	rep.AckToCreditedP50Ms, rep.AckToCreditedP99Ms = sr.AckToCreditedP50Ms, sr.AckToCreditedP99Ms
	rep.Violations = rep.Invariants.Violations()
	if sr.Doubled > 0 {
		rep.Violations = append(rep.Violations, fmt.Sprintf("%d end_to_end_ids credited more than once", sr.Doubled))
	}
	if drainErr != nil {
		rep.Violations = append(rep.Violations, drainErr.Error())
	}
	return nil
}

// soakProgress prints a line every f.soakProgress until ctx ends: what was
// sent and acknowledged, credited and pending, and the watched processes'
// resident memory now. It records the deepest backlog in peakPending.
func soakProgress(ctx context.Context, pool *pgxpool.Pool, s *load.Session, procs []load.Process, started time.Time, f flags,
	say func(string, ...any), peakPending *atomic.Int64,
) {
	t := time.NewTicker(f.soakProgress)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		sent, acked := s.Progress()
		credited, err1 := load.CreditCount(ctx, pool, s.RunID())
		pending, err2 := load.Pending(ctx, pool, s.RunID())
		if err1 != nil || err2 != nil {
			if ctx.Err() != nil {
				return
			}
			say("  [%4.0f s] progress unreadable: %v", time.Since(started).Seconds(), cmp.Or(err1, err2))
			continue
		}
		if pending > peakPending.Load() {
			peakPending.Store(pending)
		}
		var mem []string
		for _, p := range procs {
			if m, err := load.ReadMemory(p.PID); err == nil {
				mem = append(mem, fmt.Sprintf("%s %d %.0f MB", p.Role, p.PID, mib(m.RSS)))
			}
		}
		say("  [%4.0f s] %s PIX sent, %s acknowledged; %s credited, %s pending; RSS %s", time.Since(started).Seconds(),
			thousands(float64(sent)), thousands(float64(acked)), thousands(float64(credited)), thousands(float64(pending)), strings.Join(mem, ", "))
	}
}

// cpuSeconds is each process group's CPU time, in seconds, for those that
// took at least minShare of the total; the rest as "other".
func cpuSeconds(u load.CPUUse, minShare float64) map[string]float64 {
	var total time.Duration
	for _, d := range u.Procs {
		total += d
	}
	out := map[string]float64{}
	for name, d := range u.Procs {
		if float64(d) >= minShare*float64(total) {
			out[name] = d.Seconds()
		} else {
			out["other"] += d.Seconds()
		}
	}
	return out
}

// printSoak writes the soak's figures.
func printSoak(w io.Writer, sr *SoakReport) {
	fmt.Fprintln(w, "\nsoak")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(k, format string, a ...any) { fmt.Fprintf(tw, "  %s\t%s\n", k, fmt.Sprintf(format, a...)) }
	row("webhooks", "%s arrivals at %.0f/s (redeliveries %.0f%%, bursts %.0f%% × %d): %s requests, %s distinct PIX",
		thousands(float64(sr.Webhooks)), sr.RatePerSec, 100*sr.DupRatio, 100*sr.BurstRatio, sr.BurstCopies,
		thousands(float64(sr.Requests)), thousands(float64(sr.DistinctPIX)))
	row("acknowledged", "%s (%.0f/s), ack p50 %.1f ms, p99 %.1f ms; errors %v; never acknowledged %d",
		thousands(float64(sr.Acked)), sr.AcceptedPerSec, sr.AckP50Ms, sr.AckP99Ms, sr.Errors, sr.Unacked)
	row("duration", "%.0f s sending, then %.0f s draining: %.0f s (%.1f min)", sr.SendSeconds, sr.DrainSeconds, sr.TotalSeconds, sr.TotalSeconds/60)
	row("credits", "%s at %.1f/s; acknowledgement → credited p50 %s ms, p99 %s ms; deepest backlog %s pending",
		thousands(float64(sr.Credits)), sr.CreditsPerSec, thousands(float64(sr.AckToCreditedP50Ms)), thousands(float64(sr.AckToCreditedP99Ms)), thousands(float64(sr.PeakPending)))
	row("lost (acknowledged, not credited)", "%d", sr.Lost)
	row("doubled (end_to_end_ids credited twice)", "%d", sr.Doubled)
	row("balances not opening + credits", "%d", sr.Unbalanced)
	if sr.CPU != nil {
		row("CPU per credit", "%s", sr.CPU)
		names := make([]string, 0, len(sr.CPUSeconds))
		for name := range sr.CPUSeconds {
			names = append(names, name)
		}
		slices.SortFunc(names, func(a, b string) int { return cmp.Compare(sr.CPUSeconds[b], sr.CPUSeconds[a]) })
		parts := make([]string, len(names))
		for i, name := range names {
			parts[i] = fmt.Sprintf("%s %.0f s", name, sr.CPUSeconds[name])
		}
		row("CPU by process", "%s", strings.Join(parts, ", "))
	}
	if sr.DB != nil {
		row("PostgreSQL per credit", "%s", sr.DB)
	}
	for _, p := range sr.Memory {
		row(fmt.Sprintf("peak RSS, %s (pid %d)", p.Role, p.PID), "%.0f MB (VmHWM; sampled peak %.0f MB over %d samples)", mib(p.HWMBytes), mib(p.PeakRSSBytes), p.Samples)
	}
	names := make([]string, 0, len(sr.DatabaseBytesAfter))
	for name := range sr.DatabaseBytesAfter {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		before, after := sr.DatabaseBytesBefore[name], sr.DatabaseBytesAfter[name]
		row("database "+name, "%.0f MB → %.0f MB (+%.0f MB)", mib(before), mib(after), mib(after-before))
	}
	tw.Flush()
}
