package catchup_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/pixbank/pix/activities"
	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/db/dbtest"
	"github.com/pixbank/pix/internal/metrics"
	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/internal/psp"
	"github.com/pixbank/pix/saga/catchup"
	"github.com/pixbank/pix/saga/sagatest"
)

// The PSP catch-up's activities against PostgreSQL, with a PSP whose
// record (GET /pix) the test writes.

// listedPix is one PIX of the fake PSP's record.
type listedPix struct {
	id, key, txid string
	cents         int64
	at            time.Time
	devolucoes    string // raw JSON, "" for none
	raw           string // the whole item as the PSP sends it, over the fields above
}

func (p listedPix) item() json.RawMessage {
	if p.raw != "" {
		return json.RawMessage(p.raw)
	}
	m := map[string]any{"endToEndId": p.id, "valor": fmt.Sprintf("%d.%02d", p.cents/100, p.cents%100), "horario": p.at.UTC().Format(time.RFC3339)}
	if p.key != "" {
		m["chave"] = p.key
	}
	if p.txid != "" {
		m["txid"] = p.txid
	}
	if p.devolucoes != "" {
		m["devolucoes"] = json.RawMessage(p.devolucoes)
	}
	b, _ := json.Marshal(m)
	return b
}

// fakeRecord is a PSP's record of the PIX it received, listed by creation
// time as GET /pix lists it, failing where the test says.
type fakeRecord struct {
	mu      sync.Mutex
	pix     []listedPix
	queries []psp.ReceivedQuery
	// failPage fails the listing of that page with failErr, failTimes times
	// (negative: always).
	failPage, failTimes int
	failErr             error
}

func (f *fakeRecord) add(p ...listedPix) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pix = append(f.pix, p...)
}

func (f *fakeRecord) failOn(page, times int, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failPage, f.failTimes, f.failErr = page, times, err
}

func (f *fakeRecord) ListReceived(_ context.Context, q psp.ReceivedQuery) (psp.ReceivedPage, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.queries = append(f.queries, q)
	if f.failErr != nil && q.Page == f.failPage && f.failTimes != 0 {
		f.failTimes--
		return psp.ReceivedPage{}, f.failErr
	}
	var in []listedPix
	for _, p := range f.pix {
		if !p.at.Before(q.Start) && !p.at.After(q.End) {
			in = append(in, p)
		}
	}
	slices.SortStableFunc(in, func(a, b listedPix) int { return a.at.Compare(b.at) })
	pages := max(1, (len(in)+q.PerPage-1)/q.PerPage)
	out := psp.ReceivedPage{Page: q.Page, Pages: pages, TotalItems: len(in)}
	for _, p := range in[min(len(in), q.Page*q.PerPage):min(len(in), (q.Page+1)*q.PerPage)] {
		out.Items = append(out.Items, p.item())
	}
	return out, nil
}

func (f *fakeRecord) pagesAsked() []int {
	f.mu.Lock()
	defer f.mu.Unlock()
	var pages []int
	for _, q := range f.queries {
		pages = append(pages, q.Page)
	}
	f.queries = nil
	return pages
}

// notingStore is the store, recording the refund notices it is given,
// with the database's clock the test's (clock nil: PostgreSQL's).
type notingStore struct {
	*catchup.Store
	mu      sync.Mutex
	notices []db.RefundNotice
	clock   func() time.Time
}

func (s *notingStore) Now(ctx context.Context) (time.Time, error) {
	if s.clock != nil {
		return s.clock(), nil
	}
	return s.Store.Now(ctx)
}

func (s *notingStore) NoteRefundOutcomes(ctx context.Context, notices []db.RefundNotice) (db.NotedRefunds, error) {
	s.mu.Lock()
	s.notices = append(s.notices, notices...)
	s.mu.Unlock()
	return s.Store.NoteRefundOutcomes(ctx, notices)
}

type catchUpRig struct {
	t        *testing.T
	store    *notingStore
	psp      *fakeRecord
	acts     *catchup.Activities
	env      *testsuite.TestActivityEnvironment
	registry *prometheus.Registry
	logs     *bytes.Buffer
	now      time.Time
}

var catchUp *catchup.Activities

// The clock of the rig (the database's, as BeginCatchUp reads it): a fixed
// instant, to the second, in PostgreSQL's past (AdvanceCatchUp refuses an
// end after PostgreSQL's now()).
var catchUpNow = time.Date(2026, 6, 3, 12, 0, 0, 0, time.UTC)

func newCatchUpRig(t *testing.T) *catchUpRig {
	t.Helper()
	r := &catchUpRig{t: t, store: &notingStore{Store: catchup.NewStore(dbtest.New(t))}, psp: &fakeRecord{}, registry: prometheus.NewRegistry(), logs: &bytes.Buffer{}, now: catchUpNow}
	log := slog.New(slog.NewJSONHandler(r.logs, nil))
	r.acts = &catchup.Activities{Store: r.store, PSP: r.psp, Overlap: 10 * time.Minute, Lookback: 24 * time.Hour, PerPage: 2, PageRetryWait: time.Millisecond,
		Logger: log, Metrics: metrics.NewWorker(r.registry), Found: catchup.NewMetrics(r.registry)}
	r.store.clock = func() time.Time { return r.now }
	var suite testsuite.WorkflowTestSuite
	r.env = suite.NewTestActivityEnvironment()
	r.env.RegisterActivity(r.acts)
	ctx := context.Background()
	_, err := r.store.CreateAccount(ctx, db.NewAccount{ID: "acc-catchup", OwnerName: "C"})
	require.NoError(t, err)
	_, err = r.store.CreatePixKey(ctx, db.NewPixKey{Key: "catchup@example.com", KeyType: "email", AccountID: "acc-catchup"})
	require.NoError(t, err)
	return r
}

func (r *catchUpRig) begin() catchup.Window {
	r.t.Helper()
	v, err := r.env.ExecuteActivity(catchUp.BeginCatchUp)
	require.NoError(r.t, err)
	var w catchup.Window
	require.NoError(r.t, v.Get(&w))
	return w
}

// list lists w with ListPSPPart, which must list it whole (a window of at
// most PartPages pages): listPart says where a part ends.
func (r *catchUpRig) list(w catchup.Window) (catchup.Counts, error) {
	r.t.Helper()
	part, err := r.listPart(w)
	if err != nil {
		return catchup.Counts{}, err
	}
	require.True(r.t, part.Through.Equal(w.End), "listed whole: through %s, not %s", part.Through, w.End)
	return part.Counts, nil
}

func (r *catchUpRig) listPart(w catchup.Window) (catchup.Part, error) {
	v, err := r.env.ExecuteActivity(catchUp.ListPSPPart, w)
	if err != nil {
		return catchup.Part{}, err
	}
	var part catchup.Part
	require.NoError(r.t, v.Get(&part))
	return part, nil
}

func (r *catchUpRig) beginManual(w catchup.Window) catchup.Window {
	r.t.Helper()
	v, err := r.env.ExecuteActivity(catchUp.BeginManualCatchUp, w)
	require.NoError(r.t, err)
	var out catchup.Window
	require.NoError(r.t, v.Get(&out))
	require.True(r.t, out.Manual)
	return out
}

func (r *catchUpRig) advance(w catchup.Window) bool {
	r.t.Helper()
	v, err := r.env.ExecuteActivity(catchUp.AdvanceCatchUp, w)
	require.NoError(r.t, err)
	var moved bool
	require.NoError(r.t, v.Get(&moved))
	return moved
}

func (r *catchUpRig) covered() time.Time {
	r.t.Helper()
	until, ok, err := r.store.CoveredUntil(context.Background())
	require.NoError(r.t, err)
	require.True(r.t, ok, "a window was covered")
	return until
}

// row is an inbox row's psp, amount and deliveries.
func (r *catchUpRig) row(id string) (pspName string, cents int64, deliveries int) {
	r.t.Helper()
	var name *string
	require.NoError(r.t, r.store.Pool().QueryRow(context.Background(),
		"SELECT psp, amount_cents, deliveries FROM inbox_messages WHERE end_to_end_id = $1", id).Scan(&name, &cents, &deliveries))
	if name != nil {
		pspName = *name
	}
	return pspName, cents, deliveries
}

func (r *catchUpRig) counter(name, label, value string) float64 {
	r.t.Helper()
	return sagatest.Value(r.t, r.registry, name, label, value)
}

func catchUpID(n int) string { return fmt.Sprintf("E%031d", 7_000_000+n) }

// The first run lists the lookback up to now, every page, and stores each
// PIX once, as a webhook would, under the catch-up's psp; then the covered
// window's end is now.
func TestCatchUpFirstRunListsTheLookbackEveryPage(t *testing.T) {
	r := newCatchUpRig(t)
	for i := range 5 {
		r.psp.add(listedPix{id: catchUpID(i), key: "catchup@example.com", cents: int64(100 + i), at: r.now.Add(-time.Duration(i+1) * time.Hour)})
	}
	r.psp.add(listedPix{id: catchUpID(9), key: "catchup@example.com", cents: 1, at: r.now.Add(-25 * time.Hour)}) // before the lookback

	w := r.begin()
	require.Equal(t, catchup.Window{Start: r.now.Add(-24 * time.Hour), End: r.now}, w, "no covered window: the lookback")
	counts, err := r.list(w)
	require.NoError(t, err)
	require.Equal(t, catchup.Counts{Pages: 3, Listed: 5, New: 5}, counts)
	require.Equal(t, []int{0, 1, 2}, r.psp.pagesAsked())
	for i := range 5 {
		name, cents, deliveries := r.row(catchUpID(i))
		require.Equal(t, catchup.PSPName, name)
		require.EqualValues(t, 100+i, cents)
		require.Equal(t, 1, deliveries)
		c, err := r.store.GetCredit(context.Background(), catchUpID(i))
		require.NoError(t, err)
		require.Equal(t, pix.SourceAPIPix, c.Source)
		require.Equal(t, pix.StatusPending, c.Status, "pending: due for the dispatcher, as a webhook's")
	}
	_, err = r.store.GetCredit(context.Background(), catchUpID(9))
	require.ErrorIs(t, err, pix.ErrCreditNotFound, "before the lookback: not listed")
	require.EqualValues(t, 5, r.counter("pix_psp_catchup_found_total", "txid", "false"))

	require.True(t, r.advance(w))
	require.True(t, r.covered().Equal(r.now))

	// The next run starts from the covered end less the overlap: what it
	// lists again is a duplicate, and changes nothing.
	r.now = r.now.Add(time.Minute)
	next := r.begin()
	require.True(t, next.Start.Equal(catchUpNow.Add(-10*time.Minute)), "overlap applied: %s", next.Start)
	require.True(t, next.End.Equal(r.now))
	require.NotNil(t, next.CoveredFrom)
	require.True(t, next.CoveredFrom.Equal(catchUpNow))
	r.psp.add(listedPix{id: catchUpID(5), key: "catchup@example.com", cents: 50, at: catchUpNow.Add(-time.Minute)}) // listed late
	counts, err = r.list(next)
	require.NoError(t, err)
	require.Equal(t, catchup.Counts{Pages: 1, Listed: 1, New: 1}, counts, "the PIX the PSP listed late, inside the overlap")
	require.True(t, r.advance(next))
	require.True(t, r.covered().Equal(r.now))
}

// A PIX a webhook stored first is a duplicate: nothing changes (a listing
// is no delivery), and it keeps its PSP.
func TestCatchUpDuplicateChangesNothing(t *testing.T) {
	r := newCatchUpRig(t)
	id := catchUpID(1)
	_, err := r.store.ReceiveBatch(context.Background(), []pix.Notification{{EndToEndID: id, Source: pix.SourceAPIPix, PixKey: "catchup@example.com",
		AmountCents: 300, PSP: "psp-a", Payload: json.RawMessage(`{}`)}})
	require.NoError(t, err)
	r.psp.add(listedPix{id: id, key: "catchup@example.com", cents: 300, at: r.now.Add(-time.Minute)})

	counts, err := r.list(r.begin())
	require.NoError(t, err)
	require.Equal(t, catchup.Counts{Pages: 1, Listed: 1, Duplicate: 1}, counts)
	name, cents, _ := r.row(id)
	require.Equal(t, "psp-a", name)
	require.EqualValues(t, 300, cents)
	require.Zero(t, r.counter("pix_psp_catchup_found_total", "txid", "false"), "a webhook came: not found by the catch-up")
}

// A listed PIX whose money fields differ from the stored row is a payload
// mismatch: logged with its end_to_end_id, counted, never stored again;
// the page's other PIX are stored all the same, and the window advances.
// So is an item our decoder refuses.
func TestCatchUpMismatchIsVisibleAndHoldsNothingBack(t *testing.T) {
	r := newCatchUpRig(t)
	mismatched, other, invalid := catchUpID(1), catchUpID(2), catchUpID(3)
	_, err := r.store.ReceiveBatch(context.Background(), []pix.Notification{{EndToEndID: mismatched, Source: pix.SourceAPIPix, PixKey: "catchup@example.com",
		AmountCents: 300, PSP: "psp-a", Payload: json.RawMessage(`{}`)}})
	require.NoError(t, err)
	at := r.now.Add(-time.Minute)
	r.psp.add(
		listedPix{id: mismatched, key: "catchup@example.com", cents: 30000, at: at},
		listedPix{id: other, key: "catchup@example.com", cents: 200, at: at.Add(time.Second)},
		// No chave nor txid: no account can be found for it.
		listedPix{id: invalid, at: at.Add(2 * time.Second), raw: fmt.Sprintf(`{"endToEndId":%q,"valor":"1.00","horario":%q}`, invalid, at.Format(time.RFC3339))},
	)

	w := r.begin()
	counts, err := r.list(w)
	require.NoError(t, err)
	require.Equal(t, catchup.Counts{Pages: 2, Listed: 3, New: 1, Mismatched: 1, Refused: 1}, counts)
	_, cents, _ := r.row(mismatched)
	require.EqualValues(t, 300, cents, "never a second amount")
	_, cents, _ = r.row(other)
	require.EqualValues(t, 200, cents, "the page's other PIX is stored")
	_, err = r.store.GetCredit(context.Background(), invalid)
	require.ErrorIs(t, err, pix.ErrCreditNotFound)
	require.EqualValues(t, 1, r.counter("pix_psp_catchup_rejected_total", "reason", catchup.ReasonPayloadMismatch))
	require.EqualValues(t, 1, r.counter("pix_psp_catchup_rejected_total", "reason", catchup.ReasonInvalid))
	for _, id := range []string{mismatched, invalid} {
		require.True(t, slices.ContainsFunc(strings.Split(r.logs.String(), "\n"), func(line string) bool {
			return strings.Contains(line, `"level":"ERROR"`) && strings.Contains(line, `"end_to_end_id":"`+id+`"`)
		}), "an error line names %s:\n%s", id, r.logs)
	}
	require.True(t, r.advance(w), "nothing stalls the window")
}

// A listing that fails on its second page leaves the window where it was;
// the next run lists it again and stores what was missing. A retry of the
// activity resumes after the last page stored (its heartbeat), then lists
// the window again from page 0: only a listing it saw whole is judged.
func TestCatchUpFailureMidWindowSkipsNothing(t *testing.T) {
	r := newCatchUpRig(t)
	for i := range 4 {
		r.psp.add(listedPix{id: catchUpID(i), key: "catchup@example.com", cents: 100, at: r.now.Add(-time.Duration(4-i) * time.Minute)})
	}
	_, err := r.store.Advance(context.Background(), nil, r.now.Add(-5*time.Minute)) // covered by an earlier run
	require.NoError(t, err)
	first := r.begin()
	r.psp.failOn(1, catchup.PageTries, fmt.Errorf("%w: connection reset", psp.ErrTransient)) // no answer however often asked
	_, err = r.list(first)
	var appErr *temporal.ApplicationError
	require.ErrorAs(t, err, &appErr)
	require.Equal(t, activities.ErrTypePSPUnavailable, appErr.Type())
	require.Equal(t, []int{0, 1, 1, 1, 1}, r.psp.pagesAsked(), "the page that got no answer asked PageTries times")
	require.True(t, r.covered().Equal(catchUpNow.Add(-5*time.Minute)), "the failed run moved nothing")
	_, err = r.store.GetCredit(context.Background(), catchUpID(2))
	require.ErrorIs(t, err, pix.ErrCreditNotFound, "page 2 was not stored")

	// The next scheduled run lists the same window again.
	r.now = r.now.Add(time.Minute)
	next := r.begin()
	require.True(t, next.Start.Equal(first.Start))
	counts, err := r.list(next)
	require.NoError(t, err)
	require.Equal(t, catchup.Counts{Pages: 2, Listed: 4, New: 2, Duplicate: 2}, counts)
	require.Equal(t, []int{0, 1}, r.psp.pagesAsked())
	require.True(t, r.advance(next))

	// A retry of the activity whose attempt had begun its part.
	r.env.SetHeartbeatDetails(struct {
		NextPage int
		Counts   catchup.Counts
	}{NextPage: 1, Counts: catchup.Counts{Pages: 1, Listed: 2, New: 2}})
	counts, err = r.list(next)
	require.NoError(t, err)
	require.Equal(t, []int{0, 1}, r.psp.pagesAsked(), "an attempt that had begun its part: listed again from page 0, judged")
	require.Equal(t, catchup.Counts{Pages: 3, Listed: 6, New: 2, Duplicate: 4}, counts, "the heartbeat's counts, and each page listed since")
}

// A PSP that refuses our request (credentials, a wrong URL) is counted as
// an answer that needs attention, and nothing advances.
func TestCatchUpRefusedRequestNeedsAttention(t *testing.T) {
	r := newCatchUpRig(t)
	r.psp.failOn(0, -1, &psp.RequestError{StatusCode: 403})
	_, err := r.list(r.begin())
	var appErr *temporal.ApplicationError
	require.ErrorAs(t, err, &appErr)
	require.Equal(t, activities.ErrTypePSPRequestRefused, appErr.Type())
	require.EqualValues(t, 1, r.counter("pix_psp_attention_total", "status_code", "403"))
}

// The covered window moves only from the value its run started from, and
// only forwards: a late run changes nothing.
func TestCatchUpStaleRunCannotMoveTheWindow(t *testing.T) {
	r := newCatchUpRig(t)
	early := r.begin()
	r.now = r.now.Add(time.Minute)
	late := r.begin()
	require.True(t, r.advance(late))
	require.False(t, r.advance(early), "a run that began from the same value, with an earlier end, is late")
	require.True(t, r.covered().Equal(late.End))

	r.now = r.now.Add(time.Minute)
	b, a := r.begin(), r.begin()
	a.End = a.End.Add(time.Minute) // a began later, and lists further
	require.True(t, r.advance(b))
	require.False(t, r.advance(a), "the window moved since a began: a's end is not recorded, although later")
	require.True(t, r.covered().Equal(b.End))
	require.False(t, r.advance(catchup.Window{CoveredFrom: &b.End, End: b.End.Add(-time.Hour)}), "never backwards")
	require.True(t, r.covered().Equal(b.End))

	// An operator's window that starts after the covered end moves
	// nothing; one that starts at or before it moves it, from the end
	// BeginManualCatchUp read.
	after := r.beginManual(catchup.Window{Start: b.End.Add(time.Second), End: b.End.Add(time.Hour)})
	require.Nil(t, after.CoveredFrom)
	require.False(t, r.advance(after), "an operator's window after the covered end moves nothing")
	require.True(t, r.covered().Equal(b.End))
	from := r.beginManual(catchup.Window{Start: a.Start, End: b.End.Add(time.Hour)})
	require.NotNil(t, from.CoveredFrom)
	require.True(t, from.CoveredFrom.Equal(b.End))
	require.True(t, r.advance(from), "an operator's window from before the covered end moves it")
	require.True(t, r.covered().Equal(b.End.Add(time.Hour)))
	require.True(t, r.advance(from), "the same advance again (a retry whose first try committed) is moved, and changes nothing")
	require.True(t, r.covered().Equal(b.End.Add(time.Hour)))
}

// A final devolução in a listed PIX's devolucoes is noted for its refund
// saga, as from a webhook.
func TestCatchUpNotesRefundOutcomes(t *testing.T) {
	r := newCatchUpRig(t)
	id := catchUpID(1)
	r.psp.add(listedPix{id: id, key: "catchup@example.com", cents: 500, at: r.now.Add(-time.Minute),
		devolucoes: `[{"id":"D1","rtrId":"D12345678202612031200abcdefghijk","valor":"1.00","status":"DEVOLVIDO"},{"id":"D2","status":"EM_PROCESSAMENTO"}]`})
	_, err := r.list(r.begin())
	require.NoError(t, err)
	require.Equal(t, []db.RefundNotice{{ID: "D1", EndToEndID: id, Status: "DEVOLVIDO"}}, r.store.notices)
}

// rowVersions is the version (xmin, ctid) of every row of the tables a
// listing may write, by table and key.
func (r *catchUpRig) rowVersions() map[string]string {
	r.t.Helper()
	out := map[string]string{}
	for _, table := range []struct{ name, key string }{
		{"inbox_messages", "end_to_end_id"}, {"pix_credits", "end_to_end_id"}, {"accounts", "id"}, {"pix_refunds", "id"}, {"outbox_events", "id::text"},
	} {
		rows, err := r.store.Pool().Query(context.Background(), "SELECT "+table.key+", xmin::text || ctid::text FROM "+table.name)
		require.NoError(r.t, err)
		for rows.Next() {
			var key, version string
			require.NoError(r.t, rows.Scan(&key, &version))
			out[table.name+":"+key] = version
		}
		require.NoError(r.t, rows.Err())
	}
	return out
}

// A run over an overlap of stored rows writes nothing (I12): each PIX is
// read and compared, not written, whatever its row's status (pending,
// done, failed; stored by a webhook or by an earlier listing) and whatever
// its devolucoes the PSP's record shows that were noted already. Every
// row keeps its version (xmin, ctid).
func TestCatchUpListingStoredPIXWritesNothing(t *testing.T) {
	r := newCatchUpRig(t)
	ctx := context.Background()
	var ids []string
	for i := range 6 {
		id := catchUpID(500 + i)
		ids = append(ids, id)
		p := listedPix{id: id, key: "catchup@example.com", cents: int64(100 + i), at: r.now.Add(-time.Duration(6-i) * time.Minute)}
		if i == 1 || i == 3 {
			p.devolucoes = `[{"id":"D` + strconv.Itoa(i) + `","rtrId":"D12345678202612031200abcdefghijk","valor":"0.50","status":"DEVOLVIDO"}]`
		}
		r.psp.add(p)
	}
	// Two stored by their webhooks; the others by the first listing, which
	// records the devolucoes the record shows.
	for _, id := range ids[:2] {
		_, err := r.store.ReceiveBatch(ctx, []pix.Notification{{EndToEndID: id, Source: pix.SourceAPIPix, PixKey: "catchup@example.com",
			AmountCents: int64(100 + slices.Index(ids, id)), PSP: "psp-a", Payload: json.RawMessage(`{}`)}})
		require.NoError(t, err)
	}
	_, err := r.store.Advance(ctx, nil, r.now.Add(-10*time.Minute))
	require.NoError(t, err)
	counts, err := r.list(r.begin())
	require.NoError(t, err)
	require.Equal(t, 4, counts.New)
	// One credited, one failed, the rest pending.
	out, err := r.store.Credit(ctx, ids[0], 1, 1)
	require.NoError(t, err)
	require.True(t, out.Credited)
	failed, err := r.store.MarkFailed(ctx, ids[2], 1, 1, "a test's failure")
	require.NoError(t, err)
	require.True(t, failed.Marked)

	var notices int
	require.NoError(t, r.store.Pool().QueryRow(ctx, "SELECT count(*) FROM inbox_messages WHERE refund_notice IS NOT NULL").Scan(&notices))
	require.Equal(t, 2, notices, "the devolucoes listed are recorded on their rows")

	before := r.rowVersions()
	for range 2 {
		counts, err = r.list(r.begin())
		require.NoError(t, err)
		require.Equal(t, catchup.Counts{Pages: 3, Listed: 6, Duplicate: 6}, counts)
		require.Equal(t, before, r.rowVersions(), "a listing of stored PIX wrote rows")
	}
}
