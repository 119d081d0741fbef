package scheduled_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/api"
	"github.com/pixbank/pix/saga/sagakit"
	"github.com/pixbank/pix/saga/sagatest"
	"github.com/pixbank/pix/saga/scheduled"
)

// harness is the saga's routes served over PostgreSQL (sagatest.API), the
// store's fixture, and the signals its cancels sent.
type harness struct {
	*sagatest.API
	f       *fixture
	signals *sagatest.Signals
}

func newAPI(t *testing.T, now time.Time) *harness {
	sig := &sagatest.Signals{}
	a := newAPIWith(t, now, sig)
	a.signals = sig
	return a
}

// newAPIWith is newAPI whose cancels signal through temporal (signals is
// nil).
func newAPIWith(t *testing.T, now time.Time, temporal sagakit.Signaller) *harness {
	f := newFixture(t)
	h := &scheduled.Handlers{Store: f.store, Keys: f.s, Temporal: temporal, Settings: scheduled.Settings{Hour: 6},
		Log: sagatest.Discard(), Now: func() time.Time { return now }}
	a := sagatest.NewAPI(t, f.s, sagatest.Options{Sagas: []api.SagaHTTP{h.HTTP()}, Deps: api.Deps{Keys: f.keys},
		Callers: sagatest.Callers{
			"maria": sagatest.Customer("maria", "acc-maria"),
			"joao":  sagatest.Customer("joao", "acc-joao"),
			"ro":    sagatest.Reader("maria-ro", "acc-maria"),
		}})
	f.account("acc-maria", 50_000)
	f.account("acc-joao", 50_000)
	return &harness{API: a, f: f}
}

// The routes end to end over PostgreSQL: schedule (nothing debited,
// replayed by its key), read, list, cancel (again: the same answer), and
// another customer's looks missing.
func TestTheRoutes(t *testing.T) {
	now := time.Date(2026, 12, 2, 13, 0, 0, 0, time.UTC)
	a := newAPI(t, now)
	key := uuid.NewString()
	body := map[string]any{"account_id": "acc-maria", "amount_cents": 15000, "pix_key": "joao@example.com", "scheduled_for": "2026-12-24"}

	status, created := a.Call(http.MethodPost, "/pix/scheduled", "maria", key, body)
	require.Equal(t, http.StatusCreated, status, "%v", created)
	require.Equal(t, "scheduled", created["status"])
	require.Equal(t, "2026-12-24", created["scheduled_for"])
	require.Equal(t, "2026-12-24T09:00:00Z", created["run_at"], "06:00 in São Paulo")
	id := created["id"].(string)
	require.Equal(t, "pix-scheduled:"+id, created["workflow_id"])
	require.EqualValues(t, 50_000, a.f.balance("acc-maria"), "nothing debited")

	status, replay := a.Call(http.MethodPost, "/pix/scheduled", "maria", key, body)
	require.Equal(t, http.StatusCreated, status)
	require.Equal(t, id, replay["id"], "the key replays its answer")

	status, got := a.Call(http.MethodGet, "/pix/scheduled/"+id, "maria", "", nil)
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, id, got["id"])
	status, listed := a.Call(http.MethodGet, "/pix/scheduled?account_id=acc-maria", "maria", "", nil)
	require.Equal(t, http.StatusOK, status)
	require.Len(t, listed["scheduled"], 1)

	// Another customer's: missing, never cancellable.
	status, other := a.Call(http.MethodGet, "/pix/scheduled/"+id, "joao", "", nil)
	require.Equal(t, http.StatusNotFound, status)
	require.Equal(t, "scheduled_pix_not_found", sagatest.Code(other))
	status, other = a.Call(http.MethodDelete, "/pix/scheduled/"+id, "joao", "", nil)
	require.Equal(t, http.StatusNotFound, status)
	require.Equal(t, "scheduled_pix_not_found", sagatest.Code(other))
	status, other = a.Call(http.MethodGet, "/pix/scheduled?account_id=acc-maria", "joao", "", nil)
	require.Equal(t, http.StatusNotFound, status)
	require.Equal(t, "account_not_found", sagatest.Code(other))
	status, other = a.Call(http.MethodPost, "/pix/scheduled", "joao", uuid.NewString(), body)
	require.Equal(t, http.StatusForbidden, status)
	require.Equal(t, "forbidden_account", sagatest.Code(other))
	status, _ = a.Call(http.MethodDelete, "/pix/scheduled/"+id, "ro", "", nil)
	require.Equal(t, http.StatusForbidden, status, "a cancel needs pix:write")

	status, cancelled := a.Call(http.MethodDelete, "/pix/scheduled/"+id, "maria", "", nil)
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, "cancelled", cancelled["status"])
	require.Equal(t, []string{"pix-scheduled:" + id + " " + scheduled.CancelSignal}, a.signals.Sent(), "its run is woken")
	a.signals.NoRunOpen()
	status, again := a.Call(http.MethodDelete, "/pix/scheduled/"+id, "maria", "", nil)
	require.Equal(t, http.StatusOK, status, "asked again (an answer lost), with no run open: the same answer")
	require.Equal(t, "cancelled", again["status"])
	require.EqualValues(t, 50_000, a.f.balance("acc-maria"))
}

// A date refused, and a cancel after the run: 409.
func TestTheRoutesRefuse(t *testing.T) {
	now := time.Date(2026, 12, 2, 13, 0, 0, 0, time.UTC)
	a := newAPI(t, now)
	for _, date := range []string{"2026-12-01", "2027-12-03", "24/12/2026"} {
		status, refused := a.Call(http.MethodPost, "/pix/scheduled", "maria", uuid.NewString(),
			map[string]any{"account_id": "acc-maria", "amount_cents": 100, "pix_key": "k", "scheduled_for": date})
		require.Equal(t, http.StatusUnprocessableEntity, status, date)
		require.Equal(t, "invalid_request", sagatest.Code(refused), date)
	}
	status, refused := a.Call(http.MethodPost, "/pix/scheduled", "maria", uuid.NewString(),
		map[string]any{"account_id": "acc-maria", "amount_cents": 100, "pix_key": "k", "scheduled_for": "2026-12-03", "amount": 1})
	require.Equal(t, http.StatusUnprocessableEntity, status)
	require.Equal(t, "invalid_request", sagatest.Code(refused), "a member it does not know")

	status, created := a.Call(http.MethodPost, "/pix/scheduled", "maria", uuid.NewString(),
		map[string]any{"account_id": "acc-maria", "amount_cents": 100, "pix_key": "k", "scheduled_for": "2026-12-02"})
	require.Equal(t, http.StatusCreated, status, "%v", created)
	id := uuid.MustParse(created["id"].(string))
	_, _, err := a.f.store.Run(context.Background(), id, ispb)
	require.NoError(t, err)
	status, refused = a.Call(http.MethodDelete, "/pix/scheduled/"+id.String(), "maria", "", nil)
	require.Equal(t, http.StatusConflict, status)
	require.Equal(t, "scheduled_pix_already_ran", sagatest.Code(refused))
	status, _ = a.Call(http.MethodGet, "/pix/scheduled/not-a-uuid", "maria", "", nil)
	require.Equal(t, http.StatusBadRequest, status)
}

// walk follows the list query's pages as token and returns the ids of
// every row in the order listed.
func (a *harness) walk(query, token string) []string {
	a.f.t.Helper()
	var ids []string
	for _, r := range a.Walk("/pix/scheduled?"+query, "scheduled", token) {
		ids = append(ids, r["id"].(string))
	}
	return ids
}

// GET /pix/scheduled pages by cursor (api.PageOf): every scheduled PIX of
// the account once, by date then id, whatever the page size and the
// status asked; limits and cursors refused as on every list; another
// customer's never listed, whatever cursor they send.
func TestTheListPages(t *testing.T) {
	now := time.Date(2026, 12, 2, 13, 0, 0, 0, time.UTC)
	a := newAPI(t, now)
	var all []scheduled.Scheduled
	for i := range 11 {
		runAt := now.AddDate(0, 0, 1+i/3) // three PIX a day: the id decides
		s := a.f.schedule("acc-maria", int64(100+i), runAt)
		if i%4 == 0 {
			var err error
			s, _, err = a.f.store.Cancel(context.Background(), s.ID)
			require.NoError(t, err)
		}
		all = append(all, s)
	}
	for range 4 { // after every one of Maria's in the order
		a.f.schedule("acc-joao", 100, now.AddDate(0, 0, 10))
	}
	slices.SortFunc(all, func(x, y scheduled.Scheduled) int {
		if c := strings.Compare(x.ScheduledFor, y.ScheduledFor); c != 0 {
			return c
		}
		return strings.Compare(x.ID.String(), y.ID.String())
	})
	want := func(status string) []string {
		var out []string
		for _, s := range all {
			if status == "" || s.Status == status {
				out = append(out, s.ID.String())
			}
		}
		return out
	}
	for _, status := range []string{"", scheduled.StatusScheduled, scheduled.StatusCancelled, scheduled.StatusExecuted} {
		for _, limit := range []int{1, 2, 3, 10, 11, 1000} {
			got := a.walk(fmt.Sprintf("account_id=acc-maria&status=%s&limit=%d", status, limit), "maria")
			require.Equal(t, want(status), got, "status %q, limit %d", status, limit)
		}
	}
	require.Len(t, want(scheduled.StatusCancelled), 3)

	// Maria's cursor in João's hands: his own rows after that position
	// (all four), never hers; her account stays missing to him.
	_, first := a.Call(http.MethodGet, "/pix/scheduled?account_id=acc-maria&limit=1", "maria", "", nil)
	cursor := first["next_cursor"].(string)
	status, his := a.Call(http.MethodGet, "/pix/scheduled?account_id=acc-joao&cursor="+cursor, "joao", "", nil)
	require.Equal(t, http.StatusOK, status)
	require.Len(t, his["scheduled"], 4)
	for _, r := range his["scheduled"].([]any) {
		require.Equal(t, "acc-joao", r.(map[string]any)["account_id"])
	}
	status, refused := a.Call(http.MethodGet, "/pix/scheduled?account_id=acc-maria&cursor="+cursor, "joao", "", nil)
	require.Equal(t, http.StatusNotFound, status)
	require.Equal(t, "account_not_found", sagatest.Code(refused))

	badKey := base64.RawURLEncoding.EncodeToString([]byte(`{"scheduled_for":"2026-13-45","id":"` + uuid.NewString() + `"}`))
	otherList := base64.RawURLEncoding.EncodeToString([]byte(`{"failed_at":"2026-01-01T00:00:00Z","end_to_end_id":"E1234567820261129120000000000001"}`))
	for _, q := range []string{"limit=0", "limit=1001", "limit=x", "cursor=abc", "cursor=" + badKey, "cursor=" + otherList} {
		status, refused := a.Call(http.MethodGet, "/pix/scheduled?account_id=acc-maria&"+q, "maria", "", nil)
		require.Equal(t, http.StatusBadRequest, status, q)
		require.Equal(t, "invalid_request", sagatest.Code(refused), q)
	}
}
