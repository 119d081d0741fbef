//go:build e2e

package e2e

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"golang.org/x/sync/errgroup"

	"github.com/pixbank/pix/internal/config"
	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/internal/tooling/temporaltest"
	"github.com/pixbank/pix/tooling/load"
	"github.com/pixbank/pix/worker"
	"github.com/pixbank/pix/workflows"
)

// A credit that succeeds costs the Temporal server what the engine ceiling's
// no-op workflow (one local activity, started eagerly) costs, plus the one
// upsert that moves PixStatus to done for the UI search: one workflow task,
// no version marker, nothing else. Its history is the no-op's six events
// and that upsert. So it is on versioned workers (the stack's default, as
// pixd's): the start is still eager (the server took it: the first task
// came back in the start's answer, never through matching), and the run
// is on the workers' deployment version, auto-upgrade.
func TestCreditIsOneWorkflowTask(t *testing.T) {
	s := newStack(t, shared, nil)
	require.True(t, s.cfg.WorkerVersioning, "the stack's workers are versioned, as pixd's are by default")
	account := "acc-shape-" + randomSuffix()
	s.openAccount(account, 0)
	id := pixID()
	r := s.request(http.MethodPost, "/webhooks/pix", map[string]any{
		"end_to_end_id": id, "account_id": account, "amount_cents": 1_500,
		"payer": map[string]any{"name": "Joana Dias", "document": "12345678901", "ispb": "12345678"},
	})
	require.Equal(t, http.StatusAccepted, r.Status, "%v", r.Body)
	s.waitStatus(id, pix.StatusDone, 30*time.Second)
	ctx := context.Background()
	require.NoError(t, s.client().GetWorkflow(ctx, workflows.CreditWorkflowID(id), "").Get(ctx, nil))

	h := s.history(workflows.CreditWorkflowID(id))
	require.Equal(t, []enumspb.EventType{
		enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED,
		enumspb.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED,
		enumspb.EVENT_TYPE_WORKFLOW_TASK_STARTED,
		enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED,
		enumspb.EVENT_TYPE_MARKER_RECORDED, // the credit: a local activity marker
		enumspb.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES,
		enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED,
	}, eventTypes(h), "a credit's history")
	require.Equal(t, "LocalActivity", h[4].GetMarkerRecordedEventAttributes().GetMarkerName())
	upserted := h[5].GetUpsertWorkflowSearchAttributesEventAttributes().GetSearchAttributes().GetIndexedFields()
	require.ElementsMatch(t, []string{"PixStatus", "PixAccountId"}, slices.Collect(maps.Keys(upserted)),
		"the upsert moves the status (and names the account, which an API Pix notification resolves only in the credit)")
	started := h[0].GetWorkflowExecutionStartedEventAttributes()
	require.Contains(t, started.GetSearchAttributes().GetIndexedFields(), "PixEndToEndId", "the start lists the PIX")
	require.Contains(t, started.GetMemo().GetFields(), "payer", "the start carries the memo")
	require.True(t, started.GetEagerExecutionAccepted(), "the dispatcher's start is eager on a versioned worker too")
	desc, err := s.client().DescribeWorkflow(ctx, workflows.CreditWorkflowID(id), "")
	require.NoError(t, err)
	versioning := desc.RawResponse.GetWorkflowExecutionInfo().GetVersioningInfo()
	require.Equal(t, enumspb.VERSIONING_BEHAVIOR_AUTO_UPGRADE, versioning.GetBehavior(), "the credit auto-upgrades")
	v := worker.ThisBuild(s.cfg.TaskQueues())
	require.Equal(t, v.DeploymentName, versioning.GetDeploymentVersion().GetDeploymentName(), "the run is on the workers' deployment")
	require.Equal(t, v.BuildID, versioning.GetDeploymentVersion().GetBuildId(), "and on their build")
}

func eventTypes(h []*historypb.HistoryEvent) []enumspb.EventType {
	types := make([]enumspb.EventType, len(h))
	for i, e := range h {
		types[i] = e.GetEventType()
	}
	return types
}

// engineCostEnv names how many runs of each kind TestEngineCostPerCredit
// measures; unset, the measurement is skipped (it takes minutes).
const engineCostEnv = "PIX_ENGINE_COST"

// TestEngineCostPerCredit measures what a credit costs a Temporal server
// beside the engine ceiling's best no-op workflow (one local activity,
// eager start), each both ways: on workers of a Worker Deployment (Worker
// Versioning, pixd's default; the no-op auto-upgrade as the credit is) and
// on unversioned workers, in interleaved rounds on the same server, so that
// what versioning costs the engine (the versioned no-op against the
// unversioned one) is told from what it costs the service (the versioned
// credit against the versioned no-op). Per run: the rate, the server's own
// counters of the work it did (requests, persistence and visibility
// operations, history tasks, eager starts asked and denied, by operation),
// which the machine's load does not change, and the CPU time of the
// server, of this process (APIs, workers, dispatchers, no-op workers and
// the drivers) and of PostgreSQL (every postgres process on the machine:
// on a shared machine, others' too), which it does.
//
//	cd tooling && TEMPORAL_CLI=../.bin/temporal PIX_ENGINE_COST=300 go test -tags e2e ./e2e -run TestEngineCostPerCredit -v
//
// PIX_ENGINE_COST_ROUNDS sets the rounds (3), each running every shape
// once, in the opposite order to the round before; PIX_ENGINE_COST_DEV_FLAGS
// runs it on a dev server of its own started with more flags, such as
// "--dynamic-config-value system.forceSearchAttributesCacheRefreshOnRead=false";
// PIX_ENGINE_COST_SERVER="address metrics-address pid" on a server already
// running (scripts/temporal-postgres.sh's), whose PostgreSQL backends'
// CPU is counted by database; PIX_ENGINE_COST_PROFILE=dir writes this
// process's CPU profile of each shape's rounds there (<shape>-<round>.pprof:
// `go tool pprof -top dir/credit-versioned-*.pprof`).
//
// Credits are inserted straight into the inbox (no HTTP) from 8 loops
// and drained by the worker's dispatcher; their rate is the credits over
// the span from the first to the last (pix_credits.credited_at), as
// pixload's drain measures it. No-ops are started by 16 concurrent
// starters, as pixload's engine ceiling does, each waiting for its run's
// result. It fails only when a credit or a no-op does not complete.
func TestEngineCostPerCredit(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv(engineCostEnv))
	if n <= 0 {
		t.Skipf("a measurement: set %s to the number of runs of each kind (300, say)", engineCostEnv)
	}
	rounds := 3
	if r, err := strconv.Atoi(os.Getenv(engineCostEnv + "_ROUNDS")); err == nil && r > 0 {
		rounds = r
	}
	per := max(1, n/rounds)
	srv, pid := shared, 0
	if server := strings.Fields(os.Getenv(engineCostEnv + "_SERVER")); len(server) > 0 {
		// A server already running (the PostgreSQL-backed one, say), with
		// the PIX search attributes registered: its address, the address
		// of its metrics, its process id.
		require.Len(t, server, 3, "%s_SERVER: address metrics-address pid", engineCostEnv)
		srv = &temporaltest.Server{Address: server[0], MetricsAddress: server[1]}
		var err error
		pid, err = strconv.Atoi(server[2])
		require.NoError(t, err)
	} else if flags := strings.Fields(os.Getenv(engineCostEnv + "_DEV_FLAGS")); len(flags) > 0 {
		// A server of its own, started with those flags (the dev server's
		// dynamic config, say).
		var err error
		srv, err = temporaltest.StartWith(t.TempDir(), flags...)
		require.NoError(t, err)
		t.Cleanup(srv.Stop)
	}
	if pid == 0 {
		pid = srv.PID()
	}
	profiles := os.Getenv(engineCostEnv + "_PROFILE")
	ctx := context.Background()
	// The service twice, its workers versioned (the default: a deployment
	// of their own, promoted as they start) and not.
	versioned := newStack(t, srv, nil)
	unversioned := newStack(t, srv, func(c *config.Config) { c.WorkerVersioning = false })
	require.True(t, versioned.cfg.WorkerVersioning)
	engine, err := load.StartEngine(versioned.client(), randomSuffix())
	require.NoError(t, err)
	defer engine.Stop()
	require.NoError(t, engine.StartVersioned(ctx))

	shapes := []costShape{
		{name: "no-op", run: noops(t, engine, load.EngineLocalEager)},
		{name: "no-op versioned", run: noops(t, engine, load.EngineLocalEagerVersioned)},
		{name: "credit", run: creditsOf(t, unversioned)},
		{name: "credit versioned", run: creditsOf(t, versioned)},
	}
	// Warm every path up (connections, caches, the SQLite file) unmeasured.
	for _, sh := range shapes {
		sh.run(20)
	}
	loadBefore := load.LoadAverage()
	idle := versioned.measureEngine(t, pid, 0, func() float64 { return 0 })
	costs := make([]engineCost, len(shapes))
	for r := range rounds {
		for k := range shapes {
			if r%2 == 1 {
				k = len(shapes) - 1 - k
			}
			sh := shapes[k]
			stop := startProfile(t, profiles, fmt.Sprintf("%s-%d", strings.ReplaceAll(sh.name, " ", "-"), r+1))
			costs[k].add(versioned.measureEngine(t, pid, per, func() float64 { return sh.run(per) }))
			stop()
		}
	}
	t.Logf("idle server for %s: %.1f ms of CPU (temporal)", idle.wall.Round(time.Millisecond), ms(idle.cpu["temporal"]))
	names := make([]string, len(shapes))
	for i, sh := range shapes {
		names[i] = sh.name
	}
	t.Logf("load average %s before, %s after", loadBefore, load.LoadAverage())
	t.Log("\n" + costTable(names, costs))
	// The figures of docs/benchmarks.md: each credit against the no-op of
	// its versioning, and versioned against unversioned.
	t.Logf("credit ÷ no-op: unversioned %.0f%%, versioned %.0f%%; versioned ÷ unversioned: no-op %.0f%%, credit %.0f%%",
		100*costs[2].rate()/costs[0].rate(), 100*costs[3].rate()/costs[1].rate(),
		100*costs[1].rate()/costs[0].rate(), 100*costs[3].rate()/costs[2].rate())
}

// costShape is one kind of run TestEngineCostPerCredit measures: run
// completes k of them and returns their rate (runs per second).
type costShape struct {
	name string
	run  func(k int) float64
}

// noops runs k no-op workflows of mode (one local activity, eager start)
// on e from 16 concurrent starters: pixload's engine ceiling.
func noops(t *testing.T, e *load.Engine, mode load.EngineMode) func(k int) float64 {
	return func(k int) float64 {
		perSec, err := e.Throughput(context.Background(), mode, k, 16)
		require.NoError(t, err)
		return perSec
	}
}

// creditsOf inserts k PIX into s's inbox from 8 loops, waits until its
// dispatcher and worker credited every one, and returns the credits over
// the span from the first to the last.
func creditsOf(t *testing.T, s *stack) func(k int) float64 {
	ctx := context.Background()
	accounts := make([]string, 50)
	for i := range accounts {
		accounts[i] = fmt.Sprintf("acc-cost-%02d-%s", i, randomSuffix())
		s.openAccount(accounts[i], 0)
	}
	return func(k int) float64 {
		began := time.Now()
		var next atomic.Int64
		g, gctx := errgroup.WithContext(ctx)
		for range 8 {
			g.Go(func() error {
				for i := int(next.Add(1)); i <= k; i = int(next.Add(1)) {
					id := pixID()
					account := accounts[i%len(accounts)]
					payload, _ := json.Marshal(map[string]any{
						"end_to_end_id": id, "account_id": account, "amount_cents": 100,
						"payer": map[string]any{"name": "Joana Dias", "document": "12345678901", "ispb": "12345678"},
					})
					if _, err := s.store.Receive(gctx, pix.Notification{EndToEndID: id, AccountID: account, AmountCents: 100, PSP: "e2e-psp", Payload: payload}); err != nil {
						return err
					}
				}
				return nil
			})
		}
		require.NoError(t, g.Wait())
		for deadline := time.Now().Add(5 * time.Minute); ; time.Sleep(50 * time.Millisecond) {
			var pending int
			require.NoError(t, s.store.Pool().QueryRow(ctx, `SELECT count(*) FROM inbox_messages WHERE status = 'pending'`).Scan(&pending))
			if pending == 0 {
				break
			}
			require.True(t, time.Now().Before(deadline), "credits never drained: %d pending", pending)
		}
		var credits int
		var span float64
		require.NoError(t, s.store.Pool().QueryRow(ctx, `SELECT count(*), COALESCE(EXTRACT(EPOCH FROM max(credited_at) - min(credited_at)), 0)::float8
			FROM pix_credits WHERE credited_at >= $1`, began).Scan(&credits, &span))
		require.Equal(t, k, credits, "the round's credits")
		if span <= 0 {
			return 0
		}
		return float64(credits-1) / span
	}
}

// startProfile writes this process's CPU profile to dir/name.pprof until
// the function it returns is called; with dir empty it does nothing.
func startProfile(t *testing.T, dir, name string) (stop func()) {
	if dir == "" {
		return func() {}
	}
	f, err := os.Create(filepath.Join(dir, name+".pprof"))
	require.NoError(t, err)
	require.NoError(t, pprof.StartCPUProfile(f))
	return func() {
		pprof.StopCPUProfile()
		require.NoError(t, f.Close())
	}
}

// engineCost is what a number of runs cost, summed over rounds.
type engineCost struct {
	runs   int
	rounds int
	wall   time.Duration
	// rates are the rounds' own rates (runs per second), as each kind
	// measures it.
	rates    []float64
	cpu      map[string]time.Duration
	counters map[string]float64
}

func (c *engineCost) add(o engineCost) {
	if c.cpu == nil {
		c.cpu, c.counters = map[string]time.Duration{}, map[string]float64{}
	}
	c.runs += o.runs
	c.rounds++
	c.wall += o.wall
	c.rates = append(c.rates, o.rates...)
	for k, v := range o.cpu {
		c.cpu[k] += v
	}
	for k, v := range o.counters {
		c.counters[k] += v
	}
}

// rate is the rounds' median rate: a round that met a burst of the
// machine's other work moves it less than the mean.
func (c engineCost) rate() float64 {
	if len(c.rates) == 0 {
		return 0
	}
	r := slices.Sorted(slices.Values(c.rates))
	return (r[(len(r)-1)/2] + r[len(r)/2]) / 2
}

// engineSettle is how long a measurement waits after its runs, so that
// the server's last tasks of them (visibility records) and its counters
// (which it reports a moment late) are in it.
const engineSettle = 2 * time.Second

// measureEngine runs f, which completes runs workflows and returns their
// rate, and returns what the server and the machine did meanwhile.
func (s *stack) measureEngine(t *testing.T, pid, runs int, f func() float64) engineCost {
	t.Helper()
	require.NotZero(t, pid, "the Temporal server's process id")
	before := scrapeEngine(t, s.srv.MetricsAddress)
	cpuBefore, err := load.ReadCPU()
	require.NoError(t, err)
	rate := f()
	time.Sleep(engineSettle)
	cpuAfter, err := load.ReadCPU()
	require.NoError(t, err)
	after := scrapeEngine(t, s.srv.MetricsAddress)
	c := engineCost{runs: runs, wall: cpuAfter.At.Sub(cpuBefore.At), rates: []float64{rate}, cpu: map[string]time.Duration{}, counters: map[string]float64{}}
	c.cpu["temporal"] = cpuAfter.Procs[pid].CPU - cpuBefore.Procs[pid].CPU
	c.cpu["this process"] = cpuAfter.Procs[os.Getpid()].CPU - cpuBefore.Procs[os.Getpid()].CPU
	for p, v := range cpuAfter.Procs {
		if v.Name == "postgres" {
			c.cpu["postgres (machine)"] += v.CPU - cpuBefore.Procs[p].CPU
			// A Temporal server's own databases are its persistence.
			if db := postgresDatabase(p); strings.HasPrefix(db, "temporal") {
				c.cpu["postgres "+db] += v.CPU - cpuBefore.Procs[p].CPU
			}
		}
	}
	for k, v := range after {
		if d := v - before[k]; d != 0 {
			c.counters[k] = d
		}
	}
	return c
}

// postgresDatabase is the database a PostgreSQL backend serves (its title
// is "postgres: [cluster:] user database host(port) state"), "" for the
// server's other processes.
func postgresDatabase(pid int) string {
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return ""
	}
	f := strings.Fields(strings.ReplaceAll(string(cmdline), "\x00", " "))
	for i := 2; i < len(f); i++ {
		if strings.Contains(f[i], "(") {
			return f[i-1]
		}
	}
	return ""
}

// engineMetrics are the server's counters of its work, by operation.
var engineMetrics = map[string]string{
	"service_requests":                "operation",
	"persistence_requests":            "operation",
	"visibility_persistence_requests": "operation",
	"task_requests":                   "task_type",
	// Eager starts asked for, by workflow type, and those the server
	// refused (the first task then goes through matching), by reason.
	"workflow_eager_execution":        "workflowType",
	"workflow_eager_execution_denied": "reason",
}

var promLabel = regexp.MustCompile(`(\w+)="([^"]*)"`)

// scrapeEngine reads the server's counters, keyed "metric service
// operation"; the server's own system workflows (namespace
// temporal_system) are left out.
func scrapeEngine(t *testing.T, addr string) map[string]float64 {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		name, rest, ok := strings.Cut(line, "{")
		by, tracked := engineMetrics[name]
		if !ok || !tracked {
			continue
		}
		labels, value, ok := strings.Cut(rest, "} ")
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil {
			continue
		}
		l := map[string]string{}
		for _, m := range promLabel.FindAllStringSubmatch(labels, -1) {
			l[m[1]] = m[2]
		}
		if l["namespace"] == "temporal_system" {
			continue
		}
		out[name+" "+l["service_name"]+" "+l[by]] += v
	}
	require.NoError(t, sc.Err())
	return out
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// costTable prints the kinds per run, side by side, and how each compares
// with the first (its rate, its CPU).
func costTable(names []string, costs []engineCost) string {
	var b strings.Builder
	for i, c := range costs {
		fmt.Fprintf(&b, "%-18s %5d runs in %d rounds, %s (settle %s per round included): median %6.1f/s (rounds: %s)\n",
			names[i], c.runs, c.rounds, c.wall.Round(time.Millisecond), engineSettle, c.rate(), rates(c.rates))
	}
	fmt.Fprintf(&b, "%-60s", "per run")
	for _, n := range names {
		fmt.Fprintf(&b, " %18s", n)
	}
	b.WriteString("\n")
	cpuKeys := map[string]bool{}
	counterKeys := map[string]bool{}
	for _, c := range costs {
		for k := range c.cpu {
			cpuKeys[k] = true
		}
		for k := range c.counters {
			counterKeys[k] = true
		}
	}
	for _, k := range slices.Sorted(maps.Keys(cpuKeys)) {
		fmt.Fprintf(&b, "%-60s", "CPU ms "+k)
		for _, c := range costs {
			fmt.Fprintf(&b, " %18.2f", ms(c.cpu[k])/float64(c.runs))
		}
		b.WriteString("\n")
	}
	for _, k := range slices.SortedFunc(maps.Keys(counterKeys), cmp.Compare) {
		per := make([]float64, len(costs))
		shown := false
		for i, c := range costs {
			per[i] = c.counters[k] / float64(c.runs)
			shown = shown || per[i] >= 0.05
		}
		if !shown {
			continue
		}
		fmt.Fprintf(&b, "%-60s", k)
		for _, v := range per {
			fmt.Fprintf(&b, " %18.2f", v)
		}
		b.WriteString("\n")
	}
	return b.String()
}

func rates(rs []float64) string {
	s := make([]string, len(rs))
	for i, r := range rs {
		s[i] = fmt.Sprintf("%.1f", r)
	}
	return strings.Join(s, " ")
}
