package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/pixbank/pix/api"
	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/db/dbtest"
	"github.com/pixbank/pix/internal/auth"
	"github.com/pixbank/pix/internal/cli"
	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/saga/scheduled"
)

// pagedList is a list route in memory, as the API pages one: limit rows
// after the cursor (here the index of the next row), next_cursor null on
// the last page. It records the query of every request; a request whose
// cursor is failAt answers 503; selfAt makes the page at that cursor name
// itself as the next.
type pagedList struct {
	member  string
	rows    []map[string]any
	failAt  string
	selfAt  string
	mu      sync.Mutex
	queries []string
}

func (l *pagedList) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	l.mu.Lock()
	l.queries = append(l.queries, r.URL.RawQuery)
	l.mu.Unlock()
	q := r.URL.Query()
	cursor := q.Get("cursor")
	if cursor != "" && cursor == l.failAt {
		writeJSONAnswer(w, http.StatusServiceUnavailable, errorAnswer("service_unavailable", "retry later"))
		return
	}
	limit, start := 100, 0
	if v := q.Get("limit"); v != "" {
		limit, _ = strconv.Atoi(v)
	}
	if cursor != "" {
		start, _ = strconv.Atoi(strings.TrimPrefix(cursor, "c"))
	}
	end := min(start+limit, len(l.rows))
	var next any
	switch {
	case cursor != "" && cursor == l.selfAt:
		next = cursor
	case end < len(l.rows):
		next = fmt.Sprintf("c%d", end)
	}
	writeJSONAnswer(w, http.StatusOK, map[string]any{l.member: l.rows[start:end], "next_cursor": next})
}

// The list commands read every page, in order, whatever the page size:
// -limit is the page asked for, -cursor where to start; -o json prints a
// page's answer a line; a page that can't be read stops the listing after
// what was printed, naming the cursor to start again from; an API whose
// page names itself as the next is not followed for ever.
func TestListCommandsFollowEveryPage(t *testing.T) {
	t.Parallel()
	failedList := &pagedList{member: "pix"}
	for i := range 7 {
		failedList.rows = append(failedList.rows, map[string]any{"end_to_end_id": fmt.Sprintf("E12345678202611291200%011d", i+1),
			"account_id": "acc-1", "amount_cents": 100 + i, "status": "failed", "attempts": 1, "last_error": fmt.Sprintf("reason %d", i+1)})
	}
	scheduledList := &pagedList{member: "scheduled"}
	for i := range 5 {
		scheduledList.rows = append(scheduledList.rows, map[string]any{"id": uuid.NewString(), "account_id": "acc-1", "amount_cents": 100,
			"pix_key": "k", "scheduled_for": fmt.Sprintf("2026-12-%02d", 10+i), "status": "scheduled"})
	}
	mux := http.NewServeMux()
	mux.Handle("GET /admin/pix/credits", failedList)
	mux.Handle("GET /pix/scheduled", scheduledList)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	getenv := env("PIX_API_URL", srv.URL, "ADMIN_TOKEN", "0123456789abcdef", "PIX_TOKEN", "tok", "AUTH_DEV_KEY_DIR", t.TempDir()+"/none")
	idsIn := func(out, prefix string) []string {
		var ids []string
		for _, f := range strings.Fields(out) {
			if strings.HasPrefix(f, prefix) {
				ids = append(ids, f)
			}
		}
		return ids
	}
	var wantFailed []string
	for _, r := range failedList.rows {
		wantFailed = append(wantFailed, r["end_to_end_id"].(string))
	}

	r := pixctl(t, getenv, "failed", "-limit", "3")
	r.requireStatus(t, cli.ExitOK)
	require.Equal(t, wantFailed, idsIn(r.stdout, "E1234"), "every row once, in order")
	require.Equal(t, 1, strings.Count(r.stdout, "END_TO_END_ID"), "one header")
	require.Contains(t, r.stdout, "reason 7")
	require.Equal(t, []string{"limit=3&status=failed", "cursor=c3&limit=3&status=failed", "cursor=c6&limit=3&status=failed"}, failedList.queries)

	failedList.queries = nil
	r = pixctl(t, getenv, "failed", "-account", "acc-1")
	r.requireStatus(t, cli.ExitOK)
	require.Equal(t, wantFailed, idsIn(r.stdout, "E1234"))
	require.Equal(t, []string{"account_id=acc-1&status=failed"}, failedList.queries, "no -limit: the API's default page")

	r = pixctl(t, getenv, "failed", "-limit", "2", "-o", "json")
	r.requireStatus(t, cli.ExitOK)
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	require.Len(t, lines, 4, "a page a line")
	var got []string
	for i, line := range lines {
		var page struct {
			Pix        []map[string]any `json:"pix"`
			NextCursor *string          `json:"next_cursor"`
		}
		require.NoError(t, json.Unmarshal([]byte(line), &page))
		for _, p := range page.Pix {
			got = append(got, p["end_to_end_id"].(string))
		}
		require.Equal(t, i == len(lines)-1, page.NextCursor == nil)
	}
	require.Equal(t, wantFailed, got)

	r = pixctl(t, getenv, "failed", "-limit", "2", "-cursor", "c4")
	r.requireStatus(t, cli.ExitOK)
	require.Equal(t, wantFailed[4:], idsIn(r.stdout, "E1234"), "-cursor starts after it")

	failedList.failAt = "c4"
	r = pixctl(t, getenv, "failed", "-limit", "2")
	r.requireStatus(t, cli.ExitUnavailable)
	require.Equal(t, wantFailed[:4], idsIn(r.stdout, "E1234"), "the pages read are printed")
	require.Contains(t, r.stderr, "503 service_unavailable")
	require.Contains(t, r.stderr, "page 3; start again from it with -cursor c4")
	failedList.failAt = ""

	failedList.selfAt = "c2"
	r = pixctl(t, getenv, "failed", "-limit", "2")
	r.requireStatus(t, cli.ExitUnavailable)
	require.Contains(t, r.stderr, "page 2 names itself (or nothing) as the next page")
	failedList.selfAt = ""

	r = pixctl(t, getenv, "failed", "-limit", "-1")
	r.requireStatus(t, cli.ExitUsage)

	r = pixctl(t, getenv, "scheduled", "list", "-account", "acc-1", "-status", "scheduled", "-limit", "2")
	r.requireStatus(t, cli.ExitOK)
	var wantScheduled []string
	for _, row := range scheduledList.rows {
		wantScheduled = append(wantScheduled, row["id"].(string))
	}
	var listed []string
	for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n")[1:] {
		listed = append(listed, strings.Fields(line)[0])
	}
	require.Equal(t, wantScheduled, listed)
	require.Equal(t, []string{"account_id=acc-1&limit=2&status=scheduled", "account_id=acc-1&cursor=c2&limit=2&status=scheduled",
		"account_id=acc-1&cursor=c4&limit=2&status=scheduled"}, scheduledList.queries)
}

// The list commands against the API's own list routes over PostgreSQL:
// more rows than a page, every one listed once, in the list's order.
func TestListCommandsReadEveryRowOfTheAPI(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := dbtest.New(t)
	issuer := newDevIssuer(t)
	keys, err := auth.NewKeyCache(ctx, auth.FileKeys(issuer.JWKSFile()), auth.KeyCacheOptions{})
	require.NoError(t, err)
	tc, err := client.NewLazyClient(client.Options{HostPort: "127.0.0.1:1"})
	require.NoError(t, err)
	t.Cleanup(tc.Close)
	log := slog.New(slog.NewJSONHandler(io.Discard, nil))
	sched := &scheduled.Handlers{Store: scheduled.NewStore(store), Keys: store, Temporal: tc, Settings: scheduled.Settings{Hour: 6}, Log: log, Now: time.Now}
	const adminToken = "pixctl-pages-admin-token"
	router, err := api.NewRouter(api.Deps{Stores: api.StoresOf(store), Temporal: tc, Logger: log, AdminToken: adminToken,
		Tokens: auth.NewVerifier(issuer.Issuer, issuer.Audience, keys, nil), Sagas: []api.SagaHTTP{api.CreditHTTP(), sched.HTTP()}}, api.CustomerRoutes)
	require.NoError(t, err)
	srv := httptest.NewServer(router)
	t.Cleanup(srv.Close)
	getenv := envOf(issuer, "PIX_API_URL", srv.URL, "ADMIN_TOKEN", adminToken)

	_, err = store.CreateAccount(ctx, db.NewAccount{ID: "acc-1", OwnerName: "Maria", OpeningBalanceCents: 100})
	require.NoError(t, err)
	var failedIDs []string
	for i := range 9 {
		id := fmt.Sprintf("E12345678202611291200%011d", i+1)
		_, err := store.Receive(ctx, pix.Notification{EndToEndID: id, AccountID: "acc-late", AmountCents: 100, Payload: []byte(`{}`)})
		require.NoError(t, err)
		_, err = store.MarkFailed(ctx, id, 1, 1, "AccountNotFound: account not found: acc-late")
		require.NoError(t, err)
		failedIDs = append(failedIDs, id)
	}
	slices.Reverse(failedIDs) // newest first

	r := pixctl(t, getenv, "failed", "-limit", "2", "-o", "json")
	r.requireStatus(t, cli.ExitOK)
	var listed []string
	pages := strings.Split(strings.TrimSpace(r.stdout), "\n")
	require.Len(t, pages, 5)
	for _, line := range pages {
		var page struct {
			Pix []pix.Credit `json:"pix"`
		}
		require.NoError(t, json.Unmarshal([]byte(line), &page))
		for _, c := range page.Pix {
			listed = append(listed, c.EndToEndID)
		}
	}
	require.Equal(t, failedIDs, listed, "every failed PIX once, newest first")

	var scheduledIDs []string
	for i := range 7 {
		res, _, err := store.ReserveKey(ctx, "maria", uuid.New(), "hash", db.KeyPolicy{LockFor: time.Minute, KeepFor: time.Hour})
		require.NoError(t, err)
		at := time.Now().AddDate(0, 0, 1+i%3)
		s, err := scheduled.NewStore(store).Create(ctx, *res, scheduled.New{ID: uuid.New(),
			TransferRequest: pix.TransferRequest{AccountID: "acc-1", AmountCents: 100, PixKey: "joao@example.com"},
			ScheduledFor:    at.Format(time.DateOnly), RunAt: at}, func(scheduled.Scheduled) ([]byte, error) { return []byte(`{}`), nil })
		require.NoError(t, err)
		scheduledIDs = append(scheduledIDs, s.ScheduledFor+" "+s.ID.String())
	}
	slices.Sort(scheduledIDs) // by date, then id
	r = pixctl(t, getenv, "scheduled", "list", "-account", "acc-1", "-limit", "3")
	r.requireStatus(t, cli.ExitOK)
	listed = nil
	for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n")[1:] {
		f := strings.Fields(line)
		listed = append(listed, f[5]+" "+f[0]) // DATE, ID ("R$ 1,00" is two fields)
	}
	require.Equal(t, scheduledIDs, listed, "every scheduled PIX once, by date then id")
}
