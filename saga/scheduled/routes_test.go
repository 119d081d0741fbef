package scheduled_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"

	"github.com/pixbank/pix/api"
	"github.com/pixbank/pix/internal/auth"
	"github.com/pixbank/pix/saga/scheduled"
)

// tokens are the test's bearer tokens: each names its caller.
type tokens map[string]auth.Caller

func (ts tokens) Verify(_ context.Context, token string) (auth.Caller, error) {
	if c, ok := ts[token]; ok {
		return c, nil
	}
	return auth.Caller{}, &auth.TokenError{Reason: "unknown token"}
}

// signals records the signals sent; missing makes every one answer that
// no run is open.
type signals struct {
	mu      sync.Mutex
	sent    []string
	missing bool
}

func (s *signals) SignalWorkflow(_ context.Context, workflowID, _, name string, _ any) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.missing {
		return serviceerror.NewNotFound("no such workflow")
	}
	s.sent = append(s.sent, workflowID+" "+name)
	return nil
}

type harness struct {
	t       *testing.T
	f       *fixture
	server  *httptest.Server
	signals *signals
}

func newAPI(t *testing.T, now time.Time) *harness {
	f := newFixture(t)
	sig := &signals{}
	h := &scheduled.Handlers{Store: f.store, Keys: f.s, Temporal: sig, Settings: scheduled.Settings{Hour: 6},
		Log: slog.New(slog.NewJSONHandler(io.Discard, nil)), Now: func() time.Time { return now }}
	handler, err := api.NewRouter(api.Deps{Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)), Keys: f.keys,
		Tokens: tokens{
			"maria": {Subject: "maria", Scopes: []string{auth.ScopeRead, auth.ScopeWrite}, Accounts: []string{"acc-maria"}},
			"joao":  {Subject: "joao", Scopes: []string{auth.ScopeRead, auth.ScopeWrite}, Accounts: []string{"acc-joao"}},
			"ro":    {Subject: "maria-ro", Scopes: []string{auth.ScopeRead}, Accounts: []string{"acc-maria"}},
		},
		Sagas: []api.SagaHTTP{h.HTTP()}}, api.CustomerRoutes)
	require.NoError(t, err)
	srv := httptest.NewServer(handler)
	t.Cleanup(srv.Close)
	f.account("acc-maria", 50_000)
	f.account("acc-joao", 50_000)
	return &harness{t: t, f: f, server: srv, signals: sig}
}

// call sends a request and returns the status and the decoded body.
func (a *harness) call(method, path, token, key string, body any) (int, map[string]any) {
	a.t.Helper()
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		require.NoError(a.t, err)
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, a.server.URL+path, r)
	require.NoError(a.t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(a.t, err)
	defer res.Body.Close()
	var out map[string]any
	require.NoError(a.t, json.NewDecoder(res.Body).Decode(&out))
	return res.StatusCode, out
}

func code(body map[string]any) string {
	e, _ := body["error"].(map[string]any)
	c, _ := e["code"].(string)
	return c
}

// The routes end to end over PostgreSQL: schedule (nothing debited,
// replayed by its key), read, list, cancel (again: the same answer), and
// another customer's looks missing.
func TestTheRoutes(t *testing.T) {
	now := time.Date(2026, 12, 2, 13, 0, 0, 0, time.UTC)
	a := newAPI(t, now)
	key := uuid.NewString()
	body := map[string]any{"account_id": "acc-maria", "amount_cents": 15000, "pix_key": "joao@example.com", "scheduled_for": "2026-12-24"}

	status, created := a.call(http.MethodPost, "/pix/scheduled", "maria", key, body)
	require.Equal(t, http.StatusCreated, status, "%v", created)
	require.Equal(t, "scheduled", created["status"])
	require.Equal(t, "2026-12-24", created["scheduled_for"])
	require.Equal(t, "2026-12-24T09:00:00Z", created["run_at"], "06:00 in São Paulo")
	id := created["id"].(string)
	require.Equal(t, "pix-scheduled:"+id, created["workflow_id"])
	require.EqualValues(t, 50_000, a.f.balance("acc-maria"), "nothing debited")

	status, replay := a.call(http.MethodPost, "/pix/scheduled", "maria", key, body)
	require.Equal(t, http.StatusCreated, status)
	require.Equal(t, id, replay["id"], "the key replays its answer")

	status, got := a.call(http.MethodGet, "/pix/scheduled/"+id, "maria", "", nil)
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, id, got["id"])
	status, listed := a.call(http.MethodGet, "/pix/scheduled?account_id=acc-maria", "maria", "", nil)
	require.Equal(t, http.StatusOK, status)
	require.Len(t, listed["scheduled"], 1)

	// Another customer's: missing, never cancellable.
	status, other := a.call(http.MethodGet, "/pix/scheduled/"+id, "joao", "", nil)
	require.Equal(t, http.StatusNotFound, status)
	require.Equal(t, "scheduled_pix_not_found", code(other))
	status, other = a.call(http.MethodDelete, "/pix/scheduled/"+id, "joao", "", nil)
	require.Equal(t, http.StatusNotFound, status)
	require.Equal(t, "scheduled_pix_not_found", code(other))
	status, other = a.call(http.MethodGet, "/pix/scheduled?account_id=acc-maria", "joao", "", nil)
	require.Equal(t, http.StatusNotFound, status)
	require.Equal(t, "account_not_found", code(other))
	status, other = a.call(http.MethodPost, "/pix/scheduled", "joao", uuid.NewString(), body)
	require.Equal(t, http.StatusForbidden, status)
	require.Equal(t, "forbidden_account", code(other))
	status, _ = a.call(http.MethodDelete, "/pix/scheduled/"+id, "ro", "", nil)
	require.Equal(t, http.StatusForbidden, status, "a cancel needs pix:write")

	status, cancelled := a.call(http.MethodDelete, "/pix/scheduled/"+id, "maria", "", nil)
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, "cancelled", cancelled["status"])
	require.Equal(t, []string{"pix-scheduled:" + id + " " + scheduled.CancelSignal}, a.signals.sent, "its run is woken")
	a.signals.missing = true
	status, again := a.call(http.MethodDelete, "/pix/scheduled/"+id, "maria", "", nil)
	require.Equal(t, http.StatusOK, status, "asked again (an answer lost), with no run open: the same answer")
	require.Equal(t, "cancelled", again["status"])
	require.EqualValues(t, 50_000, a.f.balance("acc-maria"))
}

// A date refused, and a cancel after the run: 409.
func TestTheRoutesRefuse(t *testing.T) {
	now := time.Date(2026, 12, 2, 13, 0, 0, 0, time.UTC)
	a := newAPI(t, now)
	for _, date := range []string{"2026-12-01", "2027-12-03", "24/12/2026"} {
		status, refused := a.call(http.MethodPost, "/pix/scheduled", "maria", uuid.NewString(),
			map[string]any{"account_id": "acc-maria", "amount_cents": 100, "pix_key": "k", "scheduled_for": date})
		require.Equal(t, http.StatusUnprocessableEntity, status, date)
		require.Equal(t, "invalid_request", code(refused), date)
	}
	status, refused := a.call(http.MethodPost, "/pix/scheduled", "maria", uuid.NewString(),
		map[string]any{"account_id": "acc-maria", "amount_cents": 100, "pix_key": "k", "scheduled_for": "2026-12-03", "amount": 1})
	require.Equal(t, http.StatusUnprocessableEntity, status)
	require.Equal(t, "invalid_request", code(refused), "a member it does not know")

	status, created := a.call(http.MethodPost, "/pix/scheduled", "maria", uuid.NewString(),
		map[string]any{"account_id": "acc-maria", "amount_cents": 100, "pix_key": "k", "scheduled_for": "2026-12-02"})
	require.Equal(t, http.StatusCreated, status, "%v", created)
	id := uuid.MustParse(created["id"].(string))
	_, _, err := a.f.store.Run(context.Background(), id, ispb)
	require.NoError(t, err)
	status, refused = a.call(http.MethodDelete, "/pix/scheduled/"+id.String(), "maria", "", nil)
	require.Equal(t, http.StatusConflict, status)
	require.Equal(t, "scheduled_pix_already_ran", code(refused))
	status, _ = a.call(http.MethodGet, "/pix/scheduled/not-a-uuid", "maria", "", nil)
	require.Equal(t, http.StatusBadRequest, status)
}

// walk follows next_cursor from the first page of the list query to the
// last, as token, and returns the ids of every row in the order listed.
func (a *harness) walk(query, token string) []string {
	a.t.Helper()
	var ids []string
	next := ""
	for page := 0; ; page++ {
		require.Less(a.t, page, 1000, "a walk ends")
		path := "/pix/scheduled?" + query
		if next != "" {
			path += "&cursor=" + url.QueryEscape(next)
		}
		status, body := a.call(http.MethodGet, path, token, "", nil)
		require.Equal(a.t, http.StatusOK, status, "%s: %v", path, body)
		rows := body["scheduled"].([]any)
		for _, r := range rows {
			ids = append(ids, r.(map[string]any)["id"].(string))
		}
		nc, present := body["next_cursor"]
		require.True(a.t, present, "next_cursor is always there, null on the last page")
		if nc == nil {
			return ids
		}
		require.NotEmpty(a.t, rows, "a page with a next page has rows")
		next = nc.(string)
	}
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
	_, first := a.call(http.MethodGet, "/pix/scheduled?account_id=acc-maria&limit=1", "maria", "", nil)
	cursor := first["next_cursor"].(string)
	status, his := a.call(http.MethodGet, "/pix/scheduled?account_id=acc-joao&cursor="+cursor, "joao", "", nil)
	require.Equal(t, http.StatusOK, status)
	require.Len(t, his["scheduled"], 4)
	for _, r := range his["scheduled"].([]any) {
		require.Equal(t, "acc-joao", r.(map[string]any)["account_id"])
	}
	status, refused := a.call(http.MethodGet, "/pix/scheduled?account_id=acc-maria&cursor="+cursor, "joao", "", nil)
	require.Equal(t, http.StatusNotFound, status)
	require.Equal(t, "account_not_found", code(refused))

	badKey := base64.RawURLEncoding.EncodeToString([]byte(`{"scheduled_for":"2026-13-45","id":"` + uuid.NewString() + `"}`))
	otherList := base64.RawURLEncoding.EncodeToString([]byte(`{"failed_at":"2026-01-01T00:00:00Z","end_to_end_id":"E1234567820261129120000000000001"}`))
	for _, q := range []string{"limit=0", "limit=1001", "limit=x", "cursor=abc", "cursor=" + badKey, "cursor=" + otherList} {
		status, refused := a.call(http.MethodGet, "/pix/scheduled?account_id=acc-maria&"+q, "maria", "", nil)
		require.Equal(t, http.StatusBadRequest, status, q)
		require.Equal(t, "invalid_request", code(refused), q)
	}
}
