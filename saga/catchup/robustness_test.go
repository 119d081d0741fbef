package catchup_test

// The PSP catch-up against what an attack review of it found (issue 27,
// item 3): clocks, late webhooks, re-listed failed PIX, endless or
// unstable pagination, retried advances. Each test asserts what a
// defect-free catch-up does. They reuse the rig of catchup_test.go (PostgreSQL, a fake PSP record).

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"

	"github.com/pixbank/pix/activities"
	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/internal/psp"
	"github.com/pixbank/pix/saga/catchup"
)

// scheduledRun is one scheduled run: Begin, List, Advance.
func (r *catchUpRig) scheduledRun() catchup.Counts {
	r.t.Helper()
	w := r.begin()
	if w.End.Before(w.Start) {
		// The t0 client refuses it locally (a *RequestError, counted in
		// pix_psp_attention_total); the run fails and advances nothing.
		return catchup.Counts{}
	}
	c, err := r.list(w)
	require.NoError(r.t, err)
	r.advance(w)
	return c
}

// 1. A worker whose clock is ahead by more than the overlap recorded a
// covered end in the future; the next runs started from that end less the
// overlap, and a PIX the PSP received meanwhile (whose webhook was lost, or
// that is to a key and never notified) was never listed by any run. The
// window now ends by the database's clock, and an end past it is refused.
func TestCatchUpWorkerClockAheadSkipsPIXForEver(t *testing.T) {
	r := newCatchUpRig(t)
	r.store.clock = nil // PostgreSQL's clock, as in production
	ctx := context.Background()
	t0, err := r.store.Now(ctx)
	require.NoError(t, err)
	t0 = t0.Truncate(time.Second)
	_, err = r.store.Advance(ctx, nil, t0) // an earlier run covered up to now
	require.NoError(t, err)

	// The Schedule's run lands on a worker whose clock is 20 minutes ahead:
	// its window ends by the database's clock, not its own.
	w := r.begin()
	require.False(t, w.End.After(t0.Add(15*time.Minute)), "the window's end is the database's clock: %s", w.End)
	// An end in the future (what such a worker recorded before) is refused.
	ahead := w
	ahead.End = t0.Add(21 * time.Minute)
	require.False(t, r.advance(ahead), "an end in the database's future is not recorded")
	require.False(t, r.covered().After(t0.Add(15*time.Minute)), "the covered end is in the future: %s", r.covered())

	// The PSP receives a PIX that no webhook tells us of; the next runs list it.
	lost := catchUpID(1)
	r.psp.add(listedPix{id: lost, key: "catchup@example.com", cents: 700, at: t0})
	for range 3 {
		r.scheduledRun()
	}
	_, err = r.store.GetCredit(ctx, lost)
	require.NoError(t, err, "a PIX the PSP lists, 3 runs later, was never stored: the window skipped it for ever")
}

// tieShuffler is a PSP record that sorts by horario only (to the second, as
// many PSPs write it), and whose database orders equal horarios differently
// from one query to the next (OFFSET pagination without a unique
// tie-breaker). The spec says nothing of the order.
type tieShuffler struct {
	mu    sync.Mutex
	pix   []listedPix
	calls int
}

func (s *tieShuffler) ListReceived(_ context.Context, q psp.ReceivedQuery) (psp.ReceivedPage, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var in []listedPix
	for _, p := range s.pix {
		if !p.at.Before(q.Start) && !p.at.After(q.End) {
			in = append(in, p)
		}
	}
	desc := s.calls%2 == 1
	s.calls++
	slices.SortStableFunc(in, func(a, b listedPix) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		if desc {
			return -cmpString(a.id, b.id)
		}
		return cmpString(a.id, b.id)
	})
	pages := max(1, (len(in)+q.PerPage-1)/q.PerPage)
	out := psp.ReceivedPage{Page: q.Page, Pages: pages, TotalItems: len(in)}
	for _, p := range in[min(len(in), q.Page*q.PerPage):min(len(in), (q.Page+1)*q.PerPage)] {
		out.Items = append(out.Items, p.item())
	}
	return out, nil
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// 2. The pages of one listing are taken as a consistent snapshot: nothing
// checks that the PIX seen add up to quantidadeTotalDeItens. A PSP whose
// order is not stable across queries shows some PIX twice and others never;
// the run succeeds and advances. For the part of a window older than the
// overlap (the first run's lookback, a window after an outage, an
// operator's window) no later run lists it again: skipped for ever.
func TestCatchUpUnstableOrderSkipsPIXAndAdvances(t *testing.T) {
	r := newCatchUpRig(t)
	rec := &tieShuffler{}
	r.acts.PSP = rec
	at := r.now.Add(-3 * time.Hour) // inside the lookback, outside any overlap
	for i := range 4 {
		rec.pix = append(rec.pix, listedPix{id: catchUpID(10 + i), key: "catchup@example.com", cents: 100, at: at})
	}
	w := r.begin()
	counts, err := r.list(w)
	if err == nil {
		r.advance(w)
	}
	var missing []string
	for i := range 4 {
		if _, err := r.store.GetCredit(context.Background(), catchUpID(10+i)); err != nil {
			missing = append(missing, catchUpID(10+i))
		}
	}
	if len(missing) > 0 {
		covered, ok, _ := r.store.CoveredUntil(context.Background())
		t.Fatalf("the PSP said 4 PIX; the run listed %+v and stored %d (missing %v), and the covered window moved (%v, %s): "+
			"the lookback's part older than the overlap is never listed again", counts, 4-len(missing), missing, ok, covered)
	}
}

// failSecondCall lists through a tieShuffler, its second page getting no
// answer however often the attempt asks (the attempt fails after page 0
// was stored and heartbeated).
type failSecondCall struct {
	mu    sync.Mutex
	inner *tieShuffler
	calls int
}

func (f *failSecondCall) ListReceived(ctx context.Context, q psp.ReceivedQuery) (psp.ReceivedPage, error) {
	f.mu.Lock()
	f.calls++
	n := f.calls
	f.mu.Unlock()
	if n >= 2 && n < 2+catchup.PageTries {
		return psp.ReceivedPage{}, fmt.Errorf("%w: connection reset", psp.ErrTransient)
	}
	return f.inner.ListReceived(ctx, q)
}

// The PSP of test 2 (its order unstable), whose listing fails after page 0:
// the retry resumes from its heartbeat at page 1, where the PSP's order
// shows page 0's PIX again. Resumed, the listing can't be judged (page 0's
// ids are lost); it used to report success, and the window advanced over
// two PIX never listed. The retry now lists the window again from page 0,
// judges that listing, and lists again until it saw every PIX.
func TestCatchUpResumedListingIsJudgedBeforeTheWindowAdvances(t *testing.T) {
	r := newCatchUpRig(t)
	rec := &tieShuffler{}
	r.acts.PSP = &failSecondCall{inner: rec}
	at := r.now.Add(-3 * time.Hour) // inside the lookback, outside any overlap
	for i := range 4 {
		rec.pix = append(rec.pix, listedPix{id: catchUpID(20 + i), key: "catchup@example.com", cents: 100, at: at})
	}
	w := r.begin()
	_, err := r.list(w) // page 0 stored (ascending: the first two), then no answer
	require.Error(t, err)
	// Temporal's retry of the activity gets the last heartbeat.
	r.env.SetHeartbeatDetails(map[string]any{"NextPage": 1, "Counts": catchup.Counts{Pages: 1, Listed: 2, New: 2}})
	_, err = r.list(w) // page 1, the PSP's order now descending: the first two again
	require.NoError(t, err)
	for i := range 4 {
		_, err := r.store.GetCredit(context.Background(), catchUpID(20+i))
		require.NoError(t, err, "PIX %s never listed, yet the run succeeded", catchUpID(20+i))
	}
	require.True(t, r.advance(w))
}

// overstatedTotal is a PSP record whose quantidadeTotalDeItens is always
// one more than it lists.
type overstatedTotal struct{ *fakeRecord }

func (o overstatedTotal) ListReceived(ctx context.Context, q psp.ReceivedQuery) (psp.ReceivedPage, error) {
	p, err := o.fakeRecord.ListReceived(ctx, q)
	p.TotalItems++
	p.Pages = (p.TotalItems + q.PerPage - 1) / q.PerPage
	return p, err
}

// A resumed listing whose PSP never lists as many PIX as it says is listed
// again from page 0 a bounded number of times, as one from page 0 is, then
// fails the run visibly (PSPListingIncomplete, pix_psp_attention_total);
// the covered window stays.
func TestCatchUpResumedListingShortOfTheTotalFails(t *testing.T) {
	r := newCatchUpRig(t)
	r.acts.PSP = overstatedTotal{r.psp}
	for i := range 4 {
		r.psp.add(listedPix{id: catchUpID(60 + i), key: "catchup@example.com", cents: 100, at: r.now.Add(-time.Duration(4-i) * time.Minute)})
	}
	_, err := r.store.Advance(context.Background(), nil, r.now.Add(-5*time.Minute))
	require.NoError(t, err)
	w := r.begin()
	r.env.SetHeartbeatDetails(map[string]any{"NextPage": 1, "Counts": catchup.Counts{Pages: 1, Listed: 2, New: 0, Duplicate: 2}})
	_, err = r.list(w)
	var app *temporal.ApplicationError
	require.ErrorAs(t, err, &app)
	require.Equal(t, catchup.ErrTypePSPListingIncomplete, app.Type())
	// A retry of an attempt that had begun lists its part again from page 0
	// (the ids the attempt saw are lost: its pages can't be judged), then
	// once at each other page size.
	require.Equal(t, []int{0, 1, 2, 0, 0}, r.psp.pagesAsked())
	require.EqualValues(t, 1, r.counter("pix_psp_attention_total", "kind", catchup.ErrTypePSPListingIncomplete))
	require.True(t, r.covered().Equal(catchUpNow.Add(-5*time.Minute)), "the failed run moved nothing")
}

// 3. A listed PIX whose chave or txid differs from the stored row's is the
// payload mismatch, visible and counted, whatever the row's status: it
// once was only while the row was pending; once credited (the usual case:
// the webhook came first and was credited within a second) another chave
// under the same end_to_end_id and amount was a silent duplicate, the
// credit compared by its amount alone. The PSP's record says the money
// went to another key than the account we credited: a human must look.
func TestCatchUpOtherKeyIsAMismatchWhateverTheStatus(t *testing.T) {
	r := newCatchUpRig(t)
	ctx := context.Background()
	_, err := r.store.CreateAccount(ctx, db.NewAccount{ID: "acc-other", OwnerName: "O"})
	require.NoError(t, err)
	_, err = r.store.CreatePixKey(ctx, db.NewPixKey{Key: "other@example.com", KeyType: "email", AccountID: "acc-other"})
	require.NoError(t, err)
	otherKey, otherTxid := catchUpID(20), catchUpID(21)
	for _, id := range []string{otherKey, otherTxid} {
		_, err = r.store.ReceiveBatch(ctx, []pix.Notification{{EndToEndID: id, Source: pix.SourceAPIPix, PixKey: "catchup@example.com",
			TxID: "cob20", AmountCents: 300, PSP: "psp-a", Payload: json.RawMessage(`{}`)}})
		require.NoError(t, err)
	}
	r.psp.add(listedPix{id: otherKey, key: "other@example.com", txid: "cob20", cents: 300, at: r.now.Add(-time.Minute)},
		listedPix{id: otherTxid, key: "catchup@example.com", txid: "cob21", cents: 300, at: r.now.Add(-time.Minute)})
	listed := func(status string) {
		t.Helper()
		counts, err := r.list(r.begin())
		require.NoError(t, err)
		require.Equal(t, catchup.Counts{Pages: 1, Listed: 2, Mismatched: 2}, counts, "row %s: both visible", status)
	}
	listed("pending")
	out, err := r.store.Credit(ctx, otherKey, 1, 1)
	require.NoError(t, err)
	require.True(t, out.Credited)
	out, err = r.store.Credit(ctx, otherTxid, 1, 1)
	require.NoError(t, err)
	require.True(t, out.Credited)
	listed("done")
	require.EqualValues(t, 4, r.counter("pix_psp_catchup_rejected_total", "reason", "payload_mismatch"))
	require.Contains(t, r.logs.String(), `"differs":"chave"`)
	require.Contains(t, r.logs.String(), `"differs":"txid"`)
	// And once its row is cleaned up, against the credit: another
	// account is a mismatch too.
	_, err = r.store.Pool().Exec(ctx, "DELETE FROM inbox_messages WHERE end_to_end_id = $1", otherKey)
	require.NoError(t, err)
	counts, err := r.list(r.begin())
	require.NoError(t, err)
	require.Equal(t, 2, counts.Mismatched, "credited, its row cleaned up: %+v", counts)
}

// 4. A PIX a native webhook told us of (source 'native', account named),
// listed by the catch-up (source 'api_pix', key named) is the same PIX
// when the amount is and the key names the very account: a duplicate,
// whatever the row's status (it was once the critical
// PixPSPRecordMismatch while pending or failed, "what was credited may be
// wrong. A human must look, now.", at every run for PSP_CATCHUP_OVERLAP,
// and a duplicate once credited: an answer of timing, not of the PIX). A
// key of another account, or of none, is a mismatch, whatever the status.
func TestCatchUpNativePIXListedIsJudgedByItsAccount(t *testing.T) {
	r := newCatchUpRig(t)
	ctx := context.Background()
	_, err := r.store.CreateAccount(ctx, db.NewAccount{ID: "acc-other", OwnerName: "O"})
	require.NoError(t, err)
	same, otherAccount, unknownKey := catchUpID(30), catchUpID(31), catchUpID(32)
	for _, id := range []string{same, otherAccount, unknownKey} {
		_, err := r.store.Receive(ctx, pix.Notification{EndToEndID: id, Source: pix.SourceNative, AccountID: "acc-catchup",
			AmountCents: 400, PSP: "psp-a", Payload: json.RawMessage(`{}`)})
		require.NoError(t, err)
	}
	_, err = r.store.CreatePixKey(ctx, db.NewPixKey{Key: "other@example.com", KeyType: "email", AccountID: "acc-other"})
	require.NoError(t, err)
	r.psp.add(listedPix{id: same, key: "catchup@example.com", cents: 400, at: r.now.Add(-time.Minute)},
		listedPix{id: otherAccount, key: "other@example.com", cents: 400, at: r.now.Add(-time.Minute)},
		listedPix{id: unknownKey, key: "nobody@example.com", cents: 400, at: r.now.Add(-time.Minute)})
	listed := func(status string) {
		t.Helper()
		counts, err := r.list(r.begin())
		require.NoError(t, err)
		require.Equal(t, catchup.Counts{Pages: 2, Listed: 3, Duplicate: 1, Mismatched: 2}, counts, "row %s", status)
	}
	listed("pending")
	for _, id := range []string{same, otherAccount, unknownKey} {
		out, err := r.store.MarkFailed(ctx, id, 1, 1, "a test's failure")
		require.NoError(t, err)
		require.True(t, out.Marked)
	}
	listed("failed")
	for _, id := range []string{same, otherAccount, unknownKey} {
		_, err := r.store.Redrive(ctx, id)
		require.NoError(t, err)
		out, err := r.store.Credit(ctx, id, 2, 2)
		require.NoError(t, err)
		require.True(t, out.Credited)
	}
	listed("done")
}

// 5. Each listing of a failed PIX re-drives it, "as by a PSP's
// redelivery". A PSP redelivers only what we did not acknowledge; the
// catch-up lists every PIX again at every run for PSP_CATCHUP_OVERLAP (10
// runs at the defaults). A PIX that fails at once (a closed account, an
// unknown account or key: 5 attempts in ~15 s) is re-driven, fails again,
// writes another pix.credit.failed event and counts another
// pix_credit_failures_total, at every run; the first run (24 h lookback)
// re-drives every failed PIX of the last day at once.
func TestCatchUpFailedPIXReDrivenAtEveryRun(t *testing.T) {
	r := newCatchUpRig(t)
	ctx := context.Background()
	id := catchUpID(40)
	_, err := r.store.ReceiveBatch(ctx, []pix.Notification{{EndToEndID: id, Source: pix.SourceAPIPix, PixKey: "nobody@example.com",
		AmountCents: 500, PSP: "psp-a", Payload: json.RawMessage(`{}`)}})
	require.NoError(t, err)
	fail := func(drive int) {
		out, err := r.store.MarkFailed(ctx, id, drive, 5, "PixKeyNotFound: nobody@example.com")
		require.NoError(t, err)
		require.True(t, out.Marked)
	}
	fail(1)
	r.psp.add(listedPix{id: id, key: "nobody@example.com", cents: 500, at: r.now.Add(-30 * time.Second)})
	_, err = r.store.Advance(ctx, nil, r.now.Add(-time.Minute))
	require.NoError(t, err)

	var drive int
	for m := 1; m <= 10; m++ {
		r.now = catchUpNow.Add(time.Duration(m) * time.Minute)
		r.scheduledRun()
		require.NoError(t, r.store.Pool().QueryRow(ctx, "SELECT drive FROM inbox_messages WHERE end_to_end_id = $1", id).Scan(&drive))
		if st, _ := r.store.GetCredit(ctx, id); st.Status == pix.StatusPending {
			fail(drive) // its new run fails again within the minute
		}
	}
	var events int
	require.NoError(t, r.store.Pool().QueryRow(ctx,
		"SELECT count(*) FROM outbox_events WHERE aggregate_id = $1 AND event_type = 'pix.credit.failed'", id).Scan(&events))
	require.LessOrEqual(t, drive, 2, "one failed PIX re-driven %d times by 10 listings; %d pix.credit.failed events for it", drive-1, events)
}

// 6. The catch-up lists up to the very second it runs. A PIX of a charge
// whose webhook is merely a second or two behind the run is stored by the
// catch-up first: psp='catchup', pix_psp_catchup_found_total{txid="true"}
// +1, and PixPSPWebhooksLost fires ("its webhooks are being lost"), then the
// webhook arrives as a duplicate. With a 1 min interval, webhook latency L
// gives about L/60 of every charge's PIX: under load the alert never
// clears.
func TestCatchUpWebhookASecondLateCountsAsLost(t *testing.T) {
	r := newCatchUpRig(t)
	ctx := context.Background()
	id := catchUpID(50)
	r.acts.Grace = time.Minute // PSP_CATCHUP_GRACE's default
	r.psp.add(listedPix{id: id, key: "catchup@example.com", txid: "cob123", cents: 900, at: r.now.Add(-time.Second)})
	r.scheduledRun()
	// The PSP's webhook, 2 s after the PIX.
	rs, err := r.store.ReceiveBatch(ctx, []pix.Notification{{EndToEndID: id, Source: pix.SourceAPIPix, PixKey: "catchup@example.com", TxID: "cob123",
		AmountCents: 900, PSP: "psp-a", Payload: json.RawMessage(`{}`)}})
	require.NoError(t, err)
	require.False(t, rs[0].Duplicate, "the window ended a grace before now: the webhook stores it first")
	name, _, _ := r.row(id)
	require.Zero(t, r.counter("pix_psp_catchup_found_total", "txid", "true"),
		"a webhook 2 s late counted as lost (row psp=%q): PixPSPWebhooksLost fires", name)
	// The next run lists the grace it left (it starts at End - overlap): a duplicate.
	r.now = r.now.Add(time.Minute)
	require.Equal(t, 1, r.scheduledRun().Duplicate, "the next run lists it")
}

// endlessPSP says there are always more pages, each empty.
type endlessPSP struct {
	mu    sync.Mutex
	calls int
}

func (e *endlessPSP) ListReceived(_ context.Context, q psp.ReceivedQuery) (psp.ReceivedPage, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.calls++
	if e.calls > 200 { // the test's own stop: the activity never stops by itself
		return psp.ReceivedPage{}, &psp.RequestError{StatusCode: 400, Code: "stop", Message: "test stop"}
	}
	return psp.ReceivedPage{Page: q.Page, Pages: 1 << 30, TotalItems: 0}, nil
}

// 7. quantidadeDePaginas is believed whatever the page says: a PSP (or a
// proxy's bug) that answers quantidadeDePaginas 2^30 with no items and
// quantidadeTotalDeItens 0 keeps one activity listing empty pages for its
// 2 h start-to-close, 10 attempts (each resumes from its heartbeat), ~20 h
// during which the Schedule (overlap SKIP) starts no other run; then the
// next run starts again from page 0.
func TestCatchUpEndlessEmptyPages(t *testing.T) {
	r := newCatchUpRig(t)
	e := &endlessPSP{}
	r.acts.PSP = e
	_, err := r.list(r.begin())
	require.NoError(t, err, "after %d empty pages, with quantidadeTotalDeItens 0", e.calls)
	require.LessOrEqual(t, e.calls, 2, "pages asked although the PSP said it has 0 PIX")
}

// 8. AdvanceCatchUp is not idempotent: a retry of it whose first try
// committed (its answer lost, a worker gone after the commit) finds the
// covered end at w.End, not at w.CoveredFrom, and answers moved=false, logs
// "another run covered it" at WARN, and leaves this worker's gauge where it
// was. The window is right; the run's result and log say otherwise.
func TestCatchUpRetriedAdvanceSaysNotMoved(t *testing.T) {
	r := newCatchUpRig(t)
	_, err := r.store.Advance(context.Background(), nil, r.now)
	require.NoError(t, err)
	r.now = r.now.Add(time.Minute)
	w := r.begin()
	require.True(t, r.advance(w))
	require.True(t, r.advance(w), "the same advance again (a retried activity whose first try committed): the window is at w.End, yet moved=false and a WARN")
}

// manyPagesPSP says its window holds more pages than MaxPages.
type manyPagesPSP struct{ calls int }

func (m *manyPagesPSP) ListReceived(_ context.Context, q psp.ReceivedQuery) (psp.ReceivedPage, error) {
	m.calls++
	return psp.ReceivedPage{Page: q.Page, Pages: 2 * catchup.MaxPages, TotalItems: 2 * catchup.MaxPages * q.PerPage}, nil
}

// A run begun before parts lists its window whole (ListPSPWindow): a PSP
// that says the window has more than MaxPages pages fails it after
// its first page, not after listing MaxPages of them.
func TestCatchUpWholeWindowOfTooManyPagesFailsAtOnce(t *testing.T) {
	r := newCatchUpRig(t)
	m := &manyPagesPSP{}
	r.acts.PSP = m
	_, err := r.env.ExecuteActivity(catchUp.ListPSPWindow, r.begin())
	var app *temporal.ApplicationError
	require.ErrorAs(t, err, &app)
	require.Equal(t, catchup.ErrTypePSPListingIncomplete, app.Type())
	require.Equal(t, 1, m.calls, "pages asked of a window the PSP says has more than MaxPages pages")
}

// A PSP that says every window, however short, holds more pages than a
// part takes, and then lists none of them, is cut down to a second, and
// then its empty page (more pages said to be left) is unintelligible: the
// run fails, visibly, after a few asks, not after listing for ever.
func TestCatchUpPartsOfALyingPSPFailSoon(t *testing.T) {
	r := newCatchUpRig(t)
	m := &manyPagesPSP{}
	r.acts.PSP = m
	_, err := r.listPart(r.begin())
	var app *temporal.ApplicationError
	require.ErrorAs(t, err, &app)
	require.Equal(t, activities.ErrTypePSPUnavailable, app.Type())
	require.Less(t, m.calls, 4*catchup.PageTries, "asks of a PSP whose pages are all empty")
}

// blipEvery is a PSP record (stable order, an honest total) whose every
// n-th GET /pix gets no answer; the same page asked again is answered.
type blipEvery struct {
	mu     sync.Mutex
	inner  *fakeRecord
	every  int
	calls  int
	failed *psp.ReceivedQuery // the last query that got no answer
}

func (b *blipEvery) ListReceived(ctx context.Context, q psp.ReceivedQuery) (psp.ReceivedPage, error) {
	b.mu.Lock()
	b.calls++
	blip := b.calls%b.every == 0
	if blip {
		b.failed = &q
	}
	b.mu.Unlock()
	if blip {
		return psp.ReceivedPage{}, fmt.Errorf("%w: connection reset", psp.ErrTransient)
	}
	return b.inner.ListReceived(ctx, q)
}

// A window of 6 pages (PerPage 2) at a PSP that drops one GET /pix in 5,
// each page answered when asked again. Temporal retries the listing with
// its last heartbeat (the workflow allows 10 attempts). A retry that
// resumes must list the whole window again from page 0 before it is
// judged; were a page without an answer to fail the attempt, a PSP that
// blips more often than once a window would fail every attempt, and the
// covered window would never advance (found by the third attack review):
// a page is asked again within the attempt (PageTries).
func TestCatchUpBlippingPSPStillCoversItsWindow(t *testing.T) {
	r := newCatchUpRig(t)
	b := &blipEvery{inner: r.psp, every: 5}
	r.acts.PSP = b
	for i := range 12 {
		r.psp.add(listedPix{id: catchUpID(300 + i), key: "catchup@example.com", cents: 100, at: r.now.Add(-time.Duration(20-i) * time.Minute)})
	}
	_, err := r.store.Advance(context.Background(), nil, r.now.Add(-30*time.Minute))
	require.NoError(t, err)
	w := r.begin()

	const attempts = 10 // catchup.Workflow's listing RetryPolicy.MaximumAttempts
	var lastErr error
	for attempt := 1; attempt <= attempts; attempt++ {
		_, lastErr = r.list(w)
		if lastErr == nil {
			break
		}
		// Temporal hands the retry the last heartbeat: the page that got no
		// answer is the next to list (every page before it in this pass was
		// stored and heartbeated; page 0 of the pass after the resumed
		// pages is heartbeated before it is asked).
		b.mu.Lock()
		next := b.failed.Page
		b.mu.Unlock()
		r.env.SetHeartbeatDetails(map[string]any{"NextPage": next})
	}
	require.NoError(t, lastErr, "a PSP that answers every page when asked again never let the listing finish in %d attempts (%d GET /pix for a 6-page window)", attempts, b.calls)
	require.True(t, r.advance(w))
}

// askLog orders the PSP's asks and the activity's heartbeats in one log.
type askLog struct {
	mu      sync.Mutex
	entries []string
}

func (l *askLog) add(e string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.entries = append(l.entries, e)
}

// loggedAsks lists through inner, logging each ask's page.
type loggedAsks struct {
	inner psp.ReceivedLister
	log   *askLog
}

func (l loggedAsks) ListReceived(ctx context.Context, q psp.ReceivedQuery) (psp.ReceivedPage, error) {
	l.log.add(fmt.Sprintf("ask %d", q.Page))
	return l.inner.ListReceived(ctx, q)
}

// heartbeatLogger logs every heartbeat an activity records (the test
// environment's listener sees only those it would send, batched).
type heartbeatLogger struct {
	interceptor.WorkerInterceptorBase
	log *askLog
}

func (h *heartbeatLogger) InterceptActivity(ctx context.Context, next interceptor.ActivityInboundInterceptor) interceptor.ActivityInboundInterceptor {
	return &heartbeatInbound{ActivityInboundInterceptorBase: interceptor.ActivityInboundInterceptorBase{Next: next}, log: h.log}
}

type heartbeatInbound struct {
	interceptor.ActivityInboundInterceptorBase
	log *askLog
}

func (h *heartbeatInbound) Init(outbound interceptor.ActivityOutboundInterceptor) error {
	return h.Next.Init(&heartbeatOutbound{ActivityOutboundInterceptorBase: interceptor.ActivityOutboundInterceptorBase{Next: outbound}, log: h.log})
}

type heartbeatOutbound struct {
	interceptor.ActivityOutboundInterceptorBase
	log *askLog
}

func (h *heartbeatOutbound) RecordHeartbeat(ctx context.Context, details ...any) {
	h.log.add("heartbeat")
	h.Next.RecordHeartbeat(ctx, details...)
}

// A page that gets no answer is asked again within the attempt, and the
// listing heartbeats before each wait: the heartbeat timeout bounds one ask
// and one wait, never a page's every try (found by the fourth attack
// review: with PSP_TIMEOUT 30 s, four asks outlasted the 2-minute timeout).
func TestCatchUpHeartbeatsBetweenAPagesAsks(t *testing.T) {
	r := newCatchUpRig(t)
	log := &askLog{}
	r.acts.PSP = loggedAsks{inner: r.psp, log: log}
	r.env.SetWorkerOptions(worker.Options{Interceptors: []interceptor.WorkerInterceptor{&heartbeatLogger{log: log}}})
	for i := range 4 {
		r.psp.add(listedPix{id: catchUpID(400 + i), key: "catchup@example.com", cents: 100, at: r.now.Add(-time.Duration(4-i) * time.Minute)})
	}
	_, err := r.store.Advance(context.Background(), nil, r.now.Add(-5*time.Minute))
	require.NoError(t, err)
	r.psp.failOn(1, catchup.PageTries-1, fmt.Errorf("%w: connection reset", psp.ErrTransient))
	_, err = r.list(r.begin())
	require.NoError(t, err, "the page answered at its last try")
	first, last := -1, -1
	for i, e := range log.entries {
		if e != "ask 1" {
			continue
		}
		if first < 0 {
			first = i
		}
		last = i
	}
	require.GreaterOrEqual(t, first, 0, "page 1 asked: %v", log.entries)
	pageOne := log.entries[first : last+1]
	want := []string{"ask 1", "heartbeat", "ask 1", "heartbeat", "ask 1", "heartbeat", "ask 1"}
	require.Equal(t, want[:2*catchup.PageTries-1], pageOne, "a heartbeat between each two asks of the page: %v", log.entries)
}

// slowRecord is a PSP record that answers slowly: one attempt of the
// listing activity (StartToCloseTimeout 2h) gets at most perAttempt
// answers before its time is up (say 7.2 s a page: 1,000 pages an
// attempt); after that every ask of the attempt fails, as the attempt's
// context would once its StartToClose expired. next() starts an attempt.
type slowRecord struct {
	inner      psp.ReceivedLister
	mu         sync.Mutex
	perAttempt int
	asked      int
}

func (s *slowRecord) next() { s.mu.Lock(); s.asked = 0; s.mu.Unlock() }

func (s *slowRecord) ListReceived(ctx context.Context, q psp.ReceivedQuery) (psp.ReceivedPage, error) {
	s.mu.Lock()
	s.asked++
	over := s.asked > s.perAttempt
	s.mu.Unlock()
	if over {
		return psp.ReceivedPage{}, fmt.Errorf("attempt out of time: %w", psp.ErrTransient)
	}
	return s.inner.ListReceived(ctx, q)
}

// I12: no PSP pace keeps the catch-up failing at the same place for ever.
// A part is chosen by pages, and a retry can't judge the pages its earlier
// attempt listed: a PSP slow enough that one attempt can't list a part (at
// the defaults, 1,000 pages in a 2 h try: about 7 s a page), or workers
// that die more often than a part takes, would never complete one. A retry
// of an attempt that began its part lists a part of half as many pages, so
// that a part fits an attempt sooner or later. (Found by an attack review:
// 30 attempts, no part listed.)
func TestCatchUpASlowPSPCompletesSmallerParts(t *testing.T) {
	r := newCatchUpRig(t)
	r.acts.PerPage, r.acts.PartPages = 2, 20
	slow := &slowRecord{inner: r.psp, perAttempt: 8}
	r.acts.PSP = slow
	// An outage's backlog: 200 PIX, one every 10 s, in the last 40 minutes.
	for i := range 200 {
		r.psp.add(listedPix{id: catchUpID(900 + i), key: "catchup@example.com", cents: 100, at: r.now.Add(-40*time.Minute + time.Duration(i)*10*time.Second)})
	}
	_, err := r.store.Advance(context.Background(), nil, r.now.Add(-45*time.Minute))
	require.NoError(t, err)
	w := r.begin()

	var last json.RawMessage
	r.env.SetOnActivityHeartbeatListener(func(_ *activity.Info, d converter.EncodedValues) {
		var v json.RawMessage
		if d.Get(&v) == nil {
			last = v
		}
	})
	var through time.Time
	for attempt := 1; attempt <= 30 && through.IsZero(); attempt++ { // 3 runs of 10 attempts
		slow.next()
		if attempt%10 == 1 {
			last = nil // a new run (the Schedule's next): no heartbeat, the part chosen again
			r.env.SetHeartbeatDetails(nil)
		}
		if last != nil {
			var hb map[string]any
			require.NoError(t, json.Unmarshal(last, &hb))
			r.env.SetHeartbeatDetails(hb)
		}
		part, err := r.listPart(w)
		if err == nil {
			through = part.Through
			break
		}
		t.Logf("attempt %d: %v; heartbeat %s", attempt, err, last)
	}
	require.False(t, through.IsZero(), "30 attempts (3 runs) of a PSP that answers 8 pages an attempt: no part ever listed, the covered end stays at %s",
		r.covered().Format(time.RFC3339))
}

// cutsFim is a PSP that reads fim to the second (the echo psp.ListReceived
// accepts: "the times may be cut to the second"), inicio as sent.
type cutsFim struct{ inner psp.ReceivedLister }

func (c cutsFim) ListReceived(ctx context.Context, q psp.ReceivedQuery) (psp.ReceivedPage, error) {
	q.End = q.End.Truncate(time.Second)
	return c.inner.ListReceived(ctx, q)
}

// Every PIX listed, the covered end only over what was listed, at a PSP
// that reads fim to the second (psp.ListReceived accepts its echo): a
// window whose start has a fraction of a second (an operator's, started
// directly) is widened to whole seconds, and so is every part and covered
// end. (Found by an attack review: parts cut in whole seconds from a start
// at .5 ended at .5; the PSP listed each only to its whole second, and the
// half second between was listed by neither, the covered end moving over
// it.)
func TestCatchUpFractionalWindowsSkipNothingAtAPSPCuttingFim(t *testing.T) {
	r := newCatchUpRig(t)
	r.acts.PerPage, r.acts.PartPages = 10, 50
	r.acts.PSP = cutsFim{r.psp}
	base := r.now.Add(-2 * time.Hour)
	var ids []string
	for i := range 1800 { // a PIX each second, at .3 s, for 30 minutes
		id := catchUpID(5000 + i)
		ids = append(ids, id)
		r.psp.add(listedPix{id: id, key: "catchup@example.com", cents: 100, at: base.Add(time.Duration(i)*time.Second + 300*time.Millisecond)})
	}
	ctx := context.Background()
	_, err := r.store.Advance(ctx, nil, base.Add(10*time.Second))
	require.NoError(t, err)
	// pixctl psp catchup -from <base>.5 -to <base+70s>
	w := r.beginManual(catchup.Window{Start: base.Add(-500 * time.Millisecond), End: base.Add(30 * time.Minute), Manual: true})
	require.NotNil(t, w.CoveredFrom, "the window starts before the covered end: it advances it")
	for parts := 0; parts < 100; parts++ { // as catchup.Workflow does
		part, err := r.listPart(w)
		require.NoError(t, err)
		if w.CoveredFrom != nil && part.Through.After(*w.CoveredFrom) {
			covered := w
			covered.End = part.Through
			require.True(t, r.advance(covered))
			through := part.Through
			w.CoveredFrom = &through
		}
		if !part.Through.Before(w.End) {
			break
		}
		w.Start = part.Through
	}
	t.Logf("covered end now %s", r.covered().Format(time.RFC3339Nano))
	// The Schedule's next runs list from the covered end less the overlap.
	for range 2 {
		next := r.begin()
		for {
			part, err := r.listPart(next)
			require.NoError(t, err)
			if !part.Through.Before(next.End) {
				break
			}
			next.Start = part.Through
		}
	}
	var missing []string
	for _, id := range ids {
		if _, err := r.store.GetCredit(ctx, id); err != nil {
			var n int
			require.NoError(t, r.store.Pool().QueryRow(ctx, "SELECT count(*) FROM inbox_messages WHERE end_to_end_id = $1", id).Scan(&n))
			if n == 0 {
				missing = append(missing, id)
			}
		}
	}
	require.Empty(t, missing, "PIX of the window never stored, the covered end past them (%s)", r.covered().Format(time.RFC3339Nano))
}
