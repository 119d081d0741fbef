package catchup_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/internal/psp"
	"github.com/pixbank/pix/saga/catchup"
)

// run runs the catch-up workflow itself (catchup.Workflow) with the
// rig's activities, in Temporal's test environment (its retries, with the
// last heartbeat, and its continue-as-new followed as the Schedule does):
// what a Schedule's run (in empty) or an operator's does.
func (r *catchUpRig) run(in catchup.Input) (catchup.Result, error) {
	r.t.Helper()
	for {
		var suite testsuite.WorkflowTestSuite
		suite.SetLogger(quietLogger{})
		env := suite.NewTestWorkflowEnvironment()
		env.RegisterWorkflowWithOptions(catchup.Workflow, workflow.RegisterOptions{Name: catchup.WorkflowName})
		env.RegisterActivity(r.acts)
		env.ExecuteWorkflow(catchup.WorkflowName, in)
		require.True(r.t, env.IsWorkflowCompleted())
		err := env.GetWorkflowError()
		var cont *workflow.ContinueAsNewError
		if errors.As(err, &cont) {
			in = catchup.Input{}
			require.NoError(r.t, converter.GetDefaultDataConverter().FromPayloads(cont.Input, &in))
			continue
		}
		var out catchup.Result
		if err == nil {
			require.NoError(r.t, env.GetWorkflowResult(&out))
		}
		return out, err
	}
}

// quietLogger drops the test environment's logs: a history of hundreds of
// runs would print tens of thousands of lines.
type quietLogger struct{}

func (quietLogger) Debug(string, ...any) {}
func (quietLogger) Info(string, ...any)  {}
func (quietLogger) Warn(string, ...any)  {}
func (quietLogger) Error(string, ...any) {}

// cappedRecord is a PSP that lists at most max PIX a page whatever it is
// asked (the spec lets the PSP choose), and whose every ask goes
// unanswered with probability fail.
type cappedRecord struct {
	inner *fakeRecord
	mu    sync.Mutex
	rnd   *rand.Rand
	max   int
	fail  float64
	asks  int
}

func (c *cappedRecord) ListReceived(ctx context.Context, q psp.ReceivedQuery) (psp.ReceivedPage, error) {
	c.mu.Lock()
	c.asks++
	fail := c.rnd.Float64() < c.fail
	c.mu.Unlock()
	if fail {
		return psp.ReceivedPage{}, fmt.Errorf("%w: connection reset", psp.ErrTransient)
	}
	q.PerPage = min(q.PerPage, c.max)
	return c.inner.ListReceived(ctx, q)
}

// crashingStore is the rig's store whose listing path and advances fail
// now and then: before the page is stored (the worker died), or after it
// was (its answer lost); the activity is retried from its last heartbeat.
type crashingStore struct {
	*notingStore
	mu    sync.Mutex
	rnd   *rand.Rand
	crash float64
}

var errCrash = errors.New("the worker died")

func (s *crashingStore) dice() (before, after bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v := s.rnd.Float64()
	return v < s.crash/2, v >= s.crash/2 && v < s.crash
}

func (s *crashingStore) StoreListed(ctx context.Context, ns []pix.Notification) ([]db.ListedOutcome, error) {
	before, after := s.dice()
	if before {
		return nil, errCrash
	}
	out, err := s.notingStore.StoreListed(ctx, ns)
	if err == nil && after {
		return nil, errCrash
	}
	return out, err
}

func (s *crashingStore) Advance(ctx context.Context, from *time.Time, to time.Time) (bool, error) {
	before, after := s.dice()
	if before {
		return false, errCrash
	}
	moved, err := s.notingStore.Advance(ctx, from, to)
	if err == nil && after {
		return false, errCrash
	}
	return moved, err
}

// catchUpHistorySeeds is how many random histories the property test runs
// (PIX_CATCHUP_PROPERTY_SEEDS more, or fewer).
func catchUpHistorySeeds(t *testing.T) int {
	if v := os.Getenv("PIX_CATCHUP_PROPERTY_SEEDS"); v != "" {
		n, err := strconv.Atoi(v)
		require.NoError(t, err)
		return n
	}
	return 5
}

// The catch-up's property (I10, I12): whatever the PSP's page size (1 to
// 1,000 PIX, however many we ask), the part size, the arrival rate and its
// bursts, outages of the catch-up (no run for a while), a PSP that drops
// asks and workers that die between pages (before a page is stored, or
// after, its answer lost), every PIX the PSP's record lists is stored once
// (by its webhook or by the catch-up, never both, never in conflict), the
// covered end never moves back nor past the database's clock, every run
// that ends well covers its whole window, and once the faults stop one
// run brings the covered end to "now less the grace" (within the
// overlap). Each history is seeded: a failure names its seed
// (PIX_CATCHUP_PROPERTY_SEED=n runs that one alone).
func TestCatchUpPropertyEveryListedPIXStoredOnceAndTheCoveredEndReachesNow(t *testing.T) {
	seeds := catchUpHistorySeeds(t)
	first := 0
	if v := os.Getenv("PIX_CATCHUP_PROPERTY_SEED"); v != "" {
		n, err := strconv.Atoi(v)
		require.NoError(t, err)
		first, seeds = n, 1
	}
	for seed := first; seed < first+seeds; seed++ {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) { catchUpHistory(t, uint64(seed)) })
	}
}

func catchUpHistory(t *testing.T, seed uint64) {
	rnd := rand.New(rand.NewPCG(seed, 35))
	small := func(hi int) int { // half the time 1 to 5, else 1 to hi
		if rnd.IntN(2) == 0 {
			return 1 + rnd.IntN(5)
		}
		return 1 + rnd.IntN(hi)
	}
	r := newCatchUpRig(t)
	ctx := context.Background()
	record := &cappedRecord{inner: r.psp, rnd: rand.New(rand.NewPCG(seed, 1)), max: small(1000)}
	store := &crashingStore{notingStore: r.store, rnd: rand.New(rand.NewPCG(seed, 2))}
	r.acts.PSP, r.acts.Store = record, store
	r.acts.PerPage, r.acts.PartPages = small(1000), 2+rnd.IntN(6)
	r.acts.Grace, r.acts.Overlap, r.acts.Lookback = 30*time.Second, 5*time.Minute, time.Hour
	rate := rnd.IntN(12)             // PIX a minute
	webhooks := rnd.Float64()        // the share whose webhook comes
	faulty := 0.05 + rnd.Float64()/5 // how often an ask or a store fails, while faults last
	t.Logf("seed %d: the PSP lists %d a page, we ask %d, a part takes %d pages; %d PIX a minute, %.0f%% notified; faults %.0f%%",
		seed, record.max, r.acts.PerPage, r.acts.PartPages, rate, 100*webhooks, 100*faulty)

	type arrival struct {
		id      string
		at      time.Time
		cents   int64
		deliver time.Time // when its webhook comes (zero: never)
		native  bool
	}
	var pending []arrival // webhooks on their way
	var all []arrival
	firstByWebhook := 0
	deliver := func(a arrival) {
		n := pix.Notification{EndToEndID: a.id, AmountCents: a.cents, Source: pix.SourceAPIPix, PixKey: "catchup@example.com",
			PSP: "psp-a", Payload: json.RawMessage(`{}`)}
		if a.native {
			n.Source, n.PixKey, n.AccountID = pix.SourceNative, "", "acc-catchup"
		}
		rs, err := r.store.ReceiveBatch(ctx, []pix.Notification{n})
		require.NoError(t, err)
		if !rs[0].Duplicate {
			firstByWebhook++
		}
	}
	var counts catchup.Counts
	var covered time.Time
	checkCovered := func(what string) time.Time {
		until, ok, err := r.store.CoveredUntil(ctx)
		require.NoError(t, err)
		if !ok {
			return covered
		}
		require.False(t, until.Before(covered), "%s: the covered end went back from %s to %s", what, covered, until)
		require.False(t, until.After(r.now), "%s: the covered end %s is past the clock %s", what, until, r.now)
		covered = until
		return until
	}
	runOnce := func(what string) (catchup.Result, error) {
		r.logs.Reset()
		out, err := r.run(catchup.Input{})
		if os.Getenv("DBG") != "" {
			t.Log(what, err, r.logs.String())
		}
		counts.Add(out.Counts)
		checkCovered(what)
		if err == nil {
			// A run that ends well covered its whole window: its end
			// is the covered end, unless it began before the first
			// window was covered... it always starts from one.
			require.True(t, covered.Equal(out.Window.End) || covered.After(out.Window.End),
				"%s: a run that ended well left the covered end at %s, its window ends %s (%+v)", what, covered, out.Window.End, out)
		}
		return out, err
	}

	const minutes = 40
	outage := 0
	next := 0
	for minute := range minutes {
		prev := r.now
		r.now = r.now.Add(time.Minute)
		n := rate
		if rnd.IntN(15) == 0 {
			n += 40 + rnd.IntN(120) // a burst
		}
		for range n {
			a := arrival{id: catchUpID(100_000 + next), at: prev.Add(time.Duration(1 + rnd.Int64N(int64(time.Minute-1)))).Truncate(time.Millisecond),
				cents: 1 + rnd.Int64N(100_000), native: rnd.IntN(5) == 0}
			next++
			if rnd.Float64() < webhooks {
				a.deliver = a.at.Add(time.Duration(rnd.Int64N(int64(3 * time.Minute))))
			}
			all = append(all, a)
			r.psp.add(listedPix{id: a.id, key: "catchup@example.com", cents: a.cents, at: a.at})
			if !a.deliver.IsZero() {
				pending = append(pending, a)
			}
		}
		// The webhooks due by now.
		left := pending[:0]
		for _, a := range pending {
			if a.deliver.After(r.now) {
				left = append(left, a)
				continue
			}
			deliver(a)
		}
		pending = left
		// The Schedule's tick, unless the catch-up is down.
		switch {
		case outage > 0:
			outage--
			continue
		case rnd.IntN(12) == 0:
			outage = 5 + rnd.IntN(25)
			continue
		}
		record.fail, store.crash = faulty, faulty/3
		_, _ = runOnce(fmt.Sprintf("minute %d", minute)) // a run may fail: the next goes on
	}
	// The faults stop; the webhooks still on their way come; one run more
	// brings the covered end to now less the grace.
	for _, a := range pending {
		deliver(a)
	}
	record.fail, store.crash = 0, 0
	r.now = r.now.Add(time.Minute)
	out, err := runOnce("after the faults")
	require.NoError(t, err)
	require.True(t, checkCovered("after the faults").Equal(r.now.Add(-r.acts.Grace)),
		"one run after the faults: the covered end %s, now %s (%+v)", covered, r.now, out)
	require.False(t, covered.Before(r.now.Add(-r.acts.Overlap)))

	// Every PIX the record holds is stored, once: first by its webhook or
	// by the catch-up, never both, and never in conflict.
	ids := make([]string, len(all))
	for i, a := range all {
		ids[i] = a.id
	}
	var stored, byCatchUp int
	require.NoError(t, r.store.Pool().QueryRow(ctx,
		"SELECT count(*), count(*) FILTER (WHERE psp = $2) FROM inbox_messages WHERE end_to_end_id = ANY($1)", ids, catchup.PSPName).Scan(&stored, &byCatchUp))
	require.Equal(t, len(all), stored, "PIX of the PSP's record stored")
	var total int
	require.NoError(t, r.store.Pool().QueryRow(ctx, "SELECT count(*) FROM inbox_messages").Scan(&total))
	require.Equal(t, len(all), total, "rows of PIX the PSP never listed")
	require.Equal(t, len(all), firstByWebhook+byCatchUp, "each stored first by one of the two")
	require.Zero(t, counts.Mismatched, "the same PIX judged a mismatch: %+v", counts)
	require.Zero(t, counts.Refused)
	require.LessOrEqual(t, counts.New, byCatchUp, "what the catch-up stored, counted at most once (a run that failed after storing counts nothing of it)")
	t.Logf("seed %d: %d PIX, %d first by the catch-up; %d asks of the PSP; %+v", seed, len(all), byCatchUp, record.asks, counts)
}
