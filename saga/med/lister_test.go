package med_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/pixbank/pix/internal/dict"
	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/internal/tooling/dictsim"
	"github.com/pixbank/pix/saga/covered"
	"github.com/pixbank/pix/saga/med"
	"github.com/pixbank/pix/saga/sagatest"
)

// countingDoors are the saga's doors (med.Doors over PostgreSQL), counting
// what each intake changed: a report taken in is changed once, whatever
// the lister hands again.
type countingDoors struct {
	doors   *med.Doors
	mu      sync.Mutex
	changed map[string]int
	handed  int
	// refuse are the reports the doors answer with an error of their own,
	// by id (a test's poison or failure).
	refuse map[string]error
}

func (d *countingDoors) Intake(ctx context.Context, in dict.InfractionReport) (med.Report, bool, error) {
	d.mu.Lock()
	refused := d.refuse[in.ID]
	d.mu.Unlock()
	if refused != nil {
		d.count(in.ID, false, refused)
		return med.Report{}, false, refused
	}
	r, changed, err := d.doors.Intake(ctx, in)
	d.count(in.ID, changed, err)
	return r, changed, err
}

func (d *countingDoors) IntakeRefund(ctx context.Context, in dict.Refund) (med.Report, bool, error) {
	r, changed, err := d.doors.IntakeRefund(ctx, in)
	d.count("refund:"+in.ID, changed, err)
	return r, changed, err
}

func (d *countingDoors) count(id string, changed bool, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.handed++
	if changed && err == nil {
		d.changed[id]++
	}
}

// listerFixture is a lister over a DICT simulator (mutual TLS, signatures)
// and PostgreSQL: the saga's doors, its covered window.
type listerFixture struct {
	*fixture
	ts     *dictsim.TestServer
	client *dict.HTTPClient
	doors  *countingDoors
	lister *med.Lister
	env    *testsuite.TestActivityEnvironment
}

func newListerFixture(t *testing.T, opts dictsim.Options) *listerFixture {
	f := newFixture(t)
	ts := dictsim.NewTestServer(t, opts)
	c, err := dict.New(ts.Config)
	require.NoError(t, err)
	doors := &countingDoors{doors: &med.Doors{Store: f.store, Temporal: &sagatest.Signals{}, Log: sagatest.Discard()}, changed: map[string]int{}}
	l := &med.Lister{Covered: covered.NewStore(f.s, med.ListerName), DICT: c, Doors: doors, Quarantine: doors.doors, Log: sagatest.Discard(),
		Window: covered.Settings{Overlap: 2 * time.Minute, Lookback: time.Hour, Grace: 0}, RateLimitWait: 50 * time.Millisecond, BucketWait: 5 * time.Millisecond}
	return &listerFixture{fixture: f, ts: ts, client: c, doors: doors, lister: l, env: sagatest.Activities(l)}
}

// open opens a report, at the DICT, of a PIX we credited.
func (f *listerFixture) open() dict.InfractionReport {
	c := f.credit(10_000, 0)
	r, err := f.ts.OpenReport(dictsim.NewReport{EndToEndID: c.EndToEndID, Amount: 10_000, Debited: dictsim.TestPayer, Credited: dictsim.TestBank})
	require.NoError(f.t, err)
	// A run's window ends at the database's now cut to milliseconds; a
	// report modified within that same millisecond is the next run's (the
	// overlap lists it again). The tests that run once after opening want
	// it in this run: wait out the millisecond (the simulator's clock and
	// PostgreSQL's are this host's).
	time.Sleep(time.Until(r.LastModified.Add(time.Millisecond)))
	return r
}

// run runs the lister's activities as one run of its workflow does (its
// parts until the window's end), and returns the covered end.
func (f *listerFixture) run() (time.Time, error) {
	w, err := sagatest.Run[covered.Window](f.t, f.env, f.lister.BeginDICTList)
	require.NoError(f.t, err)
	for {
		part, err := sagatest.Run[med.ListPart](f.t, f.env, f.lister.ListDICTPart, w)
		if err != nil {
			return time.Time{}, err
		}
		if w.CoveredFrom == nil || part.Through.After(*w.CoveredFrom) {
			adv := w
			adv.End = part.Through
			moved, err := sagatest.Run[bool](f.t, f.env, f.lister.AdvanceDICTList, adv)
			require.NoError(f.t, err)
			require.True(f.t, moved)
			through := part.Through
			w.CoveredFrom = &through
		}
		if !part.Through.Before(w.End) {
			until, ok, err := f.lister.Covered.CoveredUntil(context.Background())
			require.NoError(f.t, err)
			require.True(f.t, ok)
			return until, nil
		}
		w.Start = part.Through
	}
}

// A report opened at the DICT is taken in once, though the runs list it
// again (their overlap); a report where we are the debited party is not
// ours to list (IsCredited); a refund request comes in after its report.
func TestTheListerTakesAReportInOnce(t *testing.T) {
	f := newListerFixture(t, dictsim.Options{})
	r1, r2 := f.open(), f.open()
	_, err := f.ts.OpenReport(dictsim.NewReport{EndToEndID: f.credit(5_000, 0).EndToEndID, Amount: 5_000,
		Debited: dictsim.TestBank, Credited: dictsim.TestPayer})
	require.NoError(t, err)
	_, err = f.run()
	require.NoError(t, err)
	_, err = f.run() // the overlap hands both again
	require.NoError(t, err)
	require.Equal(t, map[string]int{r1.ID: 1, r2.ID: 1}, f.doors.changed)
	for _, r := range []dict.InfractionReport{r1, r2} {
		got, err := f.store.Get(context.Background(), uuid.MustParse(r.ID))
		require.NoError(t, err)
		require.Equal(t, med.StatusReceived, got.Status)
	}
	require.Equal(t, 2, f.ts.Calls()["listRefund"], "each run lists the refund requests too")
}

// The answer to a page is lost (a gateway's 504) mid-window: the
// attempt fails, what was covered before stays covered and nothing after
// it, and the next run takes every report once.
func TestTheListerRetriesAPageWhoseAnswerWasLost(t *testing.T) {
	f := newListerFixture(t, dictsim.Options{})
	reports := []dict.InfractionReport{f.open(), f.open(), f.open()}
	f.lister.PartItems = 1 // a part a report: the second part's list is lost
	var lists atomic.Int32
	f.ts.SetAnswerHook(func(x *dictsim.Exchange, model func() dictsim.Answer) dictsim.Answer {
		a := model()
		if x.Op == "listInfractionReport" && lists.Add(1) == 2 {
			a.Loss = dictsim.LossGatewayTimeout
		}
		return a
	})
	_, err := f.run()
	require.Error(t, err, "a lost answer fails the attempt")
	until, ok, err := f.lister.Covered.CoveredUntil(context.Background())
	require.NoError(t, err)
	require.True(t, ok)
	require.True(t, until.Equal(reports[0].LastModified.Truncate(time.Microsecond)), "covered through the first part only: %s", until)
	_, err = f.run()
	require.NoError(t, err)
	want := map[string]int{}
	for _, r := range reports {
		want[r.ID] = 1
	}
	require.Equal(t, want, f.doors.changed)
}

// A rate-limit storm: every list is 429 for a while; the lister waits it
// out (the DICT's refill time, a doubling wait) and takes every report
// once.
func TestTheListerWaitsOutARateLimitStorm(t *testing.T) {
	f := newListerFixture(t, dictsim.Options{})
	reports := []dict.InfractionReport{f.open(), f.open()}
	require.NoError(t, f.ts.RateLimitStorm(2*time.Second))
	start := time.Now()
	_, err := f.run()
	require.NoError(t, err)
	require.GreaterOrEqual(t, time.Since(start), time.Second, "the storm was waited out")
	require.Equal(t, map[string]int{reports[0].ID: 1, reports[1].ID: 1}, f.doors.changed)
}

// Whatever the reports and how small the parts, a run covers the window up
// to its end (now less the grace: so at least now less the overlap), each
// report taken in once, the covered end never past the database's clock.
func TestTheCoveredEndReachesNowLessTheOverlap(t *testing.T) {
	for seed := range uint64(4) {
		rnd := rand.New(rand.NewPCG(seed, 37))
		f := newListerFixture(t, dictsim.Options{})
		f.lister.PartItems = 1 + rnd.IntN(4)
		f.lister.Window.Grace = 10 * time.Millisecond
		want := map[string]int{}
		for range 3 {
			for range rnd.IntN(6) {
				want[f.open().ID] = 1
			}
			until, err := f.run()
			require.NoError(t, err)
			now, err := f.lister.Covered.Now(context.Background())
			require.NoError(t, err)
			require.False(t, until.After(now), "seed %d: never past the database's clock", seed)
			require.False(t, until.Before(now.Add(-f.lister.Window.Overlap)), "seed %d: covered until %s, now %s", seed, until, now)
		}
		// What was modified within the grace of the last run's end is the
		// next run's.
		time.Sleep(2 * f.lister.Window.Grace)
		_, err := f.run()
		require.NoError(t, err)
		require.Equal(t, want, f.doors.changed, "seed %d", seed)
	}
}

// A poison item, one the doors refuse for good (here a report the table
// can't hold), is quarantined: recorded once, with the refusal's code and
// no text of the DICT's, counted once though the overlap lists it again,
// and the window moves past it, the reports after it taken in. A failure
// of the doors that may clear (PostgreSQL unavailable) still fails the
// attempt, the covered end kept before the item, nothing quarantined.
func TestAPoisonItemIsQuarantinedAndTheWindowMovesPastIt(t *testing.T) {
	f := newListerFixture(t, dictsim.Options{})
	ctx := context.Background()
	counted := med.QuarantinedItems.WithLabelValues(med.QuarantinedReport)
	before := testutil.ToFloat64(counted)
	r1, poison, r3 := f.open(), f.open(), f.open()
	f.doors.refuse = map[string]error{poison.ID: pix.Invalid("report_details", "must be at most 2000 characters")}
	until, err := f.run()
	require.NoError(t, err, "a poison item fails no run")
	require.False(t, until.Before(r3.LastModified.Truncate(time.Microsecond)), "covered past the poison: %s", until)
	_, err = f.run() // the overlap lists the poison again
	require.NoError(t, err)
	require.Equal(t, map[string]int{r1.ID: 1, r3.ID: 1}, f.doors.changed)
	type row struct{ Kind, ID, Reason string }
	quarantined := func() []row {
		rows, err := f.s.Pool().Query(ctx, "SELECT kind, dict_id, reason FROM pix_med_quarantine ORDER BY dict_id")
		require.NoError(t, err)
		var out []row
		for rows.Next() {
			var r row
			require.NoError(t, rows.Scan(&r.Kind, &r.ID, &r.Reason))
			out = append(out, r)
		}
		require.NoError(t, rows.Err())
		return out
	}
	require.Equal(t, []row{{med.QuarantinedReport, poison.ID, "invalid_request:report_details"}}, quarantined())
	require.Equal(t, 1.0, testutil.ToFloat64(counted)-before, "counted once, though listed twice")

	r4 := f.open()
	// (The poison still refused: taken in, its quarantine would clear.)
	f.doors.refuse = map[string]error{poison.ID: f.doors.refuse[poison.ID], r4.ID: fmt.Errorf("record infraction report: %w", pix.ErrUnavailable)}
	covered, _, err := f.lister.Covered.CoveredUntil(ctx)
	require.NoError(t, err)
	_, err = f.run()
	require.Error(t, err, "a failure that may clear is retried, never quarantined")
	after, _, err := f.lister.Covered.CoveredUntil(ctx)
	require.NoError(t, err)
	require.True(t, after.Before(r4.LastModified), "covered until %s, before the report that failed (%s)", after, r4.LastModified)
	require.True(t, !after.Before(covered))
	require.Len(t, quarantined(), 1)
	delete(f.doors.refuse, r4.ID)
	_, err = f.run()
	require.NoError(t, err)
	require.Equal(t, 1, f.doors.changed[r4.ID])
}

// stuckDICT is a DICT whose list of reports can't get past an instant.
type stuckDICT struct{ *dict.HTTPClient }

func (stuckDICT) WalkInfractionReports(context.Context, dict.ReportQuery, func(dict.InfractionReport) error) (time.Time, error) {
	return time.Time{}, fmt.Errorf("%w: more than 200 items OPEN", dict.ErrInstantTooFull)
}

// A list the DICT refuses (4xx), or one that can't get past an instant,
// fails the run for good and is counted (PixMEDDICTListFailed): never
// silent; the covered end stays.
func TestAListThatFailsForGoodIsCounted(t *testing.T) {
	f := newListerFixture(t, dictsim.Options{})
	f.open()
	refused, stuck := med.ListFailures.WithLabelValues("refused"), med.ListFailures.WithLabelValues("instant_too_full")
	r0, s0 := testutil.ToFloat64(refused), testutil.ToFloat64(stuck)
	f.ts.SetAnswerHook(func(x *dictsim.Exchange, model func() dictsim.Answer) dictsim.Answer {
		if x.Op == "listInfractionReport" {
			return dictsim.ProblemAnswer(http.StatusForbidden, "Forbidden", "")
		}
		return model()
	})
	_, err := f.run()
	var app *temporal.ApplicationError
	require.ErrorAs(t, err, &app)
	require.Equal(t, med.ListedType, app.Type())
	require.True(t, app.NonRetryable())
	require.Equal(t, 1.0, testutil.ToFloat64(refused)-r0)

	f.ts.SetAnswerHook(nil)
	f.lister.DICT = stuckDICT{f.client}
	f.env = sagatest.Activities(f.lister)
	_, err = f.run()
	require.ErrorAs(t, err, &app)
	require.Equal(t, med.ListStuckType, app.Type())
	require.True(t, app.NonRetryable())
	require.Equal(t, 1.0, testutil.ToFloat64(stuck)-s0)
	_, ok, err := f.lister.Covered.CoveredUntil(context.Background())
	require.NoError(t, err)
	require.False(t, ok, "nothing covered")
}
