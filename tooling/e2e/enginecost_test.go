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
	"regexp"
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

	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/internal/tooling/temporaltest"
	"github.com/pixbank/pix/tooling/load"
	"github.com/pixbank/pix/workflows"
)

// A credit that succeeds costs the Temporal server what the engine ceiling's
// no-op workflow (one local activity, started eagerly) costs, plus the one
// upsert that moves PixStatus to done for the UI search: one workflow task,
// no version marker, nothing else. Its history is the no-op's six events
// and that upsert.
func TestCreditIsOneWorkflowTask(t *testing.T) {
	s := newStack(t, shared, nil)
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
// eager start), in alternating rounds on the same server: the server's own
// counters of the work it did (requests, persistence and visibility
// operations and history tasks, by operation), which the machine's load
// does not change, and the CPU time of
// the server, of this process (API, worker, dispatcher, no-op worker and
// the drivers) and of PostgreSQL (every postgres process on the machine:
// on a shared machine, others' too), which it does.
//
//	cd tooling && TEMPORAL_CLI=../.bin/temporal PIX_ENGINE_COST=300 go test -tags e2e ./e2e -run TestEngineCostPerCredit -v
//
// PIX_ENGINE_COST_ROUNDS sets the rounds (3); PIX_ENGINE_COST_DEV_FLAGS
// runs it on a dev server of its own started with more flags, such as
// "--dynamic-config-value system.forceSearchAttributesCacheRefreshOnRead=false";
// PIX_ENGINE_COST_SERVER="address metrics-address pid" on a server already
// running (scripts/temporal-postgres.sh's), whose PostgreSQL backends'
// CPU is counted by database.
//
// Credits are inserted straight into the inbox (no HTTP) from 8 loops
// and drained by the worker's dispatcher; no-ops are started by 16
// concurrent starters, as pixload's engine ceiling does, each waiting for
// its run's result. It fails only when a credit or a no-op does not
// complete.
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
	s := newStack(t, srv, nil)
	ctx := context.Background()
	accounts := make([]string, 50)
	for i := range accounts {
		accounts[i] = fmt.Sprintf("acc-cost-%02d-%s", i, randomSuffix())
		s.openAccount(accounts[i], 0)
	}
	engine, err := load.StartEngine(s.client(), randomSuffix())
	require.NoError(t, err)
	defer engine.Stop()

	credits := func(k int) {
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
	}
	noops := func(k int) {
		_, err := engine.Throughput(ctx, load.EngineLocalEager, k, 16)
		require.NoError(t, err)
	}

	// Warm both paths up (connections, caches, the SQLite file) unmeasured.
	credits(20)
	noops(20)
	idle := s.measureEngine(t, pid, 0, func() {})
	var credit, noop engineCost
	for range rounds {
		credit.add(s.measureEngine(t, pid, per, func() { credits(per) }))
		noop.add(s.measureEngine(t, pid, per, func() { noops(per) }))
	}
	t.Logf("idle server for %s: %.1f ms of CPU (temporal)", idle.wall.Round(time.Millisecond), ms(idle.cpu["temporal"]))
	t.Log("\n" + costTable(credit, noop))
}

// engineCost is what a number of runs cost, summed over rounds.
type engineCost struct {
	runs     int
	rounds   int
	wall     time.Duration
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
	for k, v := range o.cpu {
		c.cpu[k] += v
	}
	for k, v := range o.counters {
		c.counters[k] += v
	}
}

// rate is runs per second, the settling left out.
func (c engineCost) rate() float64 {
	return float64(c.runs) / (c.wall - time.Duration(c.rounds)*engineSettle).Seconds()
}

// engineSettle is how long a measurement waits after its runs, so that
// the server's last tasks of them (visibility records) and its counters
// (which it reports a moment late) are in it.
const engineSettle = 2 * time.Second

// measureEngine runs f, which completes runs workflows, and returns what
// the server and the machine did meanwhile.
func (s *stack) measureEngine(t *testing.T, pid, runs int, f func()) engineCost {
	t.Helper()
	require.NotZero(t, pid, "the Temporal server's process id")
	before := scrapeEngine(t, s.srv.MetricsAddress)
	cpuBefore, err := load.ReadCPU()
	require.NoError(t, err)
	f()
	time.Sleep(engineSettle)
	cpuAfter, err := load.ReadCPU()
	require.NoError(t, err)
	after := scrapeEngine(t, s.srv.MetricsAddress)
	c := engineCost{runs: runs, wall: cpuAfter.At.Sub(cpuBefore.At), cpu: map[string]time.Duration{}, counters: map[string]float64{}}
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

// costTable prints both kinds per run, side by side.
func costTable(credit, noop engineCost) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d credits in %s (%.1f/s), %d no-ops in %s (%.1f/s), settle %s per round included\n",
		credit.runs, credit.wall.Round(time.Millisecond), credit.rate(),
		noop.runs, noop.wall.Round(time.Millisecond), noop.rate(), engineSettle)
	fmt.Fprintf(&b, "%-70s %10s %10s %7s\n", "per run", "credit", "no-op", "ratio")
	for _, k := range slices.Sorted(maps.Keys(credit.cpu)) {
		c, n := ms(credit.cpu[k])/float64(credit.runs), ms(noop.cpu[k])/float64(noop.runs)
		fmt.Fprintf(&b, "%-70s %8.2fms %8.2fms %7.2f\n", "CPU "+k, c, n, c/n)
	}
	keys := slices.Collect(maps.Keys(credit.counters))
	for k := range noop.counters {
		if _, ok := credit.counters[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b string) int { return cmp.Compare(a, b) })
	for _, k := range keys {
		c, n := credit.counters[k]/float64(credit.runs), noop.counters[k]/float64(noop.runs)
		if c < 0.05 && n < 0.05 {
			continue
		}
		fmt.Fprintf(&b, "%-70s %10.2f %10.2f\n", k, c, n)
	}
	return b.String()
}
