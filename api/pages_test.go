package api_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/api"
	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/db/dbtest"
	"github.com/pixbank/pix/internal/auth"
	"github.com/pixbank/pix/internal/pix"
)

// rowKey is the sort key of the test's list: by group, then id.
type rowKey struct {
	Group int    `json:"group"`
	ID    string `json:"id"`
}

func (k rowKey) Valid() bool { return k.Group >= 0 && k.ID != "" }

func (k rowKey) less(o rowKey) bool { return k.Group < o.Group || (k.Group == o.Group && k.ID < o.ID) }

// listRouter serves GET /rows over rows (sorted by rowKey), paged with
// the one mechanism every list route uses, through a saga's Kit: the rows
// after the cursor, as a store reads them, Fetch at most. reads records the
// Fetch of each request.
func listRouter(t *testing.T, rows []rowKey, reads *[]int) *httptest.Server {
	t.Helper()
	list := api.Route{Method: http.MethodGet, Path: "/rows", Scope: auth.ScopeRead,
		Handle: func(k api.Kit, c *gin.Context) {
			p, err := api.PageOf[rowKey](c)
			if err != nil {
				k.Fail(c, err)
				return
			}
			*reads = append(*reads, p.Fetch())
			var page []rowKey
			for _, row := range rows {
				if (p.After == nil || p.After.less(row)) && len(page) < p.Fetch() {
					page = append(page, row)
				}
			}
			api.AnswerPage(k, c, "rows", p, page, func(r rowKey) rowKey { return r })
		}}
	router, err := api.NewRouter(api.Deps{Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)), OpenCustomerRoutes: true,
		Sagas: []api.SagaHTTP{{Routes: []api.Route{list}}}}, api.CustomerRoutes)
	require.NoError(t, err)
	srv := httptest.NewServer(router)
	t.Cleanup(srv.Close)
	return srv
}

// walk follows next_cursor from the first page of base (a list URL with
// its query) to the last, and returns every page's rows under member, each
// page's size, and the number of pages.
func walk(t *testing.T, base, member string, get func(url string) response) (rows []any, sizes []int) {
	t.Helper()
	next := ""
	for page := 0; ; page++ {
		require.Less(t, page, 1000, "a walk ends")
		u := base
		if next != "" {
			u += "&cursor=" + url.QueryEscape(next)
		}
		r := get(u)
		require.Equal(t, http.StatusOK, r.status, "%s: %v", u, r.body)
		got, ok := r.body[member].([]any)
		require.True(t, ok, "%s: %v", u, r.body)
		rows = append(rows, got...)
		sizes = append(sizes, len(got))
		nc, present := r.body["next_cursor"]
		require.True(t, present, "next_cursor is always there, null on the last page")
		if nc == nil {
			return rows, sizes
		}
		next = nc.(string)
		require.NotEmpty(t, got, "a page with a next page has rows")
	}
}

func encodeTestCursor(v string) string { return base64.RawURLEncoding.EncodeToString([]byte(v)) }

// The mechanism itself, in the unit tier: every row once, in order, over
// pages of every size; the limit's rules; cursors the list did not make.
func TestPagingMechanism(t *testing.T) {
	var rows []rowKey
	for i := range 23 {
		rows = append(rows, rowKey{Group: i / 4, ID: fmt.Sprintf("r%02d", i)}) // ties on group: the id decides
	}
	var reads []int
	srv := listRouter(t, rows, &reads)
	get := func(u string) response { return do(t, http.MethodGet, srv.URL+u, "", "") }

	for _, limit := range []int{1, 2, 4, 7, 22, 23, 24, 1000} {
		got, sizes := walk(t, fmt.Sprintf("/rows?limit=%d", limit), "rows", get)
		var keys []rowKey
		for _, g := range got {
			m := g.(map[string]any)
			keys = append(keys, rowKey{Group: int(m["group"].(float64)), ID: m["id"].(string)})
		}
		require.Equal(t, rows, keys, "limit %d: every row once, in order", limit)
		want := (len(rows) + limit - 1) / limit
		require.Len(t, sizes, want, "limit %d: no empty page at the end", limit)
		for _, n := range sizes[:len(sizes)-1] {
			require.Equal(t, limit, n, "limit %d: full pages but the last", limit)
		}
	}

	reads = nil
	r := get("/rows")
	require.Equal(t, http.StatusOK, r.status)
	require.Len(t, r.body["rows"], len(rows), "the default page (100) holds them all")
	require.Nil(t, r.body["next_cursor"])
	require.Equal(t, []int{api.DefaultPageLimit + 1}, reads, "the store reads the page and one row more")

	for _, limit := range []string{"0", "-1", "1001", "100000000000000000000", "ten", "", "1.5", " 5"} {
		r := get("/rows?limit=" + url.QueryEscape(limit))
		require.Equal(t, http.StatusBadRequest, r.status, "limit %q", limit)
		code, message := errorOf(t, r)
		require.Equal(t, api.CodeInvalidRequest, code)
		require.Contains(t, message, "limit: must be a whole number from 1 to 1000")
	}
	require.Equal(t, http.StatusOK, get("/rows?limit=1000").status, "the maximum is allowed")

	first := get("/rows?limit=5")
	good := first.body["next_cursor"].(string)
	require.Equal(t, http.StatusOK, get("/rows?limit=5&cursor="+good).status)
	for name, cursor := range map[string]string{
		"empty":               "",
		"not base64":          "%%%",
		"padded":              good + "=",
		"cut":                 good[:len(good)-3],
		"not JSON":            encodeTestCursor("group=1"),
		"another list's":      encodeTestCursor(`{"failed_at":"2026-01-01T00:00:00Z","end_to_end_id":"E1234567820261129120000000000001"}`),
		"a member more":       encodeTestCursor(`{"group":1,"id":"r05","account_id":"acc-1"}`),
		"a member less":       encodeTestCursor(`{"group":1}`),
		"members reordered":   encodeTestCursor(`{"id":"r05","group":1}`),
		"spaced":              encodeTestCursor(`{"group": 1,"id":"r05"}`),
		"two values":          encodeTestCursor(`{"group":1,"id":"r05"}{"group":1,"id":"r05"}`),
		"a key it can't hold": encodeTestCursor(`{"group":-1,"id":"r05"}`),
		"a wrong type":        encodeTestCursor(`{"group":"1","id":"r05"}`),
		"too long":            encodeTestCursor(`{"group":1,"id":"` + strings.Repeat("r", 600) + `"}`),
		"standard base64":     base64.StdEncoding.EncodeToString([]byte(`{"group":1,"id":"r05"}`)),
		"null":                encodeTestCursor(`null`),
		"an array":            encodeTestCursor(`[1,"r05"]`),
	} {
		r := get("/rows?limit=5&cursor=" + url.QueryEscape(cursor))
		require.Equal(t, http.StatusBadRequest, r.status, "%s: %v", name, r.body)
		code, message := errorOf(t, r)
		require.Equal(t, api.CodeInvalidRequest, code, name)
		require.True(t, strings.HasPrefix(message, "cursor: "), "%s: %s", name, message)
	}
}

// failPIX stores a native PIX for account and marks it failed at at.
func failPIX(t *testing.T, store *db.Store, srvURL string, n int, account string, at time.Time) string {
	t.Helper()
	id := fmt.Sprintf("E12345678202611291200%011d", n)
	body := `{"end_to_end_id":"` + id + `","account_id":"` + account + `","amount_cents":100}`
	require.Equal(t, http.StatusAccepted, do(t, http.MethodPost, srvURL+"/webhooks/pix", "application/json", body).status)
	_, err := store.MarkFailed(context.Background(), id, 1, 5, "AccountNotFound: account not found: "+account)
	require.NoError(t, err)
	_, err = store.Pool().Exec(context.Background(), `UPDATE inbox_messages SET processed_at = $2 WHERE end_to_end_id = $1`, id, at)
	require.NoError(t, err)
	return id
}

// GET /admin/pix/credits?status=failed over PostgreSQL: every failed PIX
// once, newest first (ties broken by end_to_end_id), by any page size,
// of every account or of one; an account's cursor used for another
// account gives that account's rows only; cursors and limits refused.
func TestFailedCreditsPage(t *testing.T) {
	store := dbtest.New(t)
	srv := newServer(t, store)
	get := func(u string) response { return do(t, http.MethodGet, srv.URL+u, "", "") }
	base := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	type failedPIX struct {
		id, account string
		at          time.Time
	}
	var all []failedPIX
	for i := range 17 {
		n := i * 7 % 17 // stored out of order: the order is the list's, never the table's
		account := []string{"acc-a", "acc-b", "acc-c"}[n%3]
		at := base.Add(time.Duration(n/6) * time.Microsecond) // six PIX failed at each instant, two of each account: the id decides
		all = append(all, failedPIX{failPIX(t, store, srv.URL, n+1, account, at), account, at})
	}
	// A pending and a done PIX are never listed.
	body := `{"end_to_end_id":"E1234567820261129120099999999999","account_id":"acc-a","amount_cents":100}`
	require.Equal(t, http.StatusAccepted, do(t, http.MethodPost, srv.URL+"/webhooks/pix", "application/json", body).status)
	slices.SortFunc(all, func(a, b failedPIX) int {
		if c := b.at.Compare(a.at); c != 0 {
			return c
		}
		return strings.Compare(b.id, a.id)
	})
	idsOf := func(rows []any) []string {
		var out []string
		for _, r := range rows {
			m := r.(map[string]any)
			require.Equal(t, pix.StatusFailed, m["status"])
			out = append(out, m["end_to_end_id"].(string))
		}
		return out
	}
	want := func(account string) []string {
		var out []string
		for _, f := range all {
			if account == "" || f.account == account {
				out = append(out, f.id)
			}
		}
		return out
	}
	for _, account := range []string{"", "acc-a", "acc-b", "acc-nobody"} {
		for _, limit := range []int{1, 2, 3, 5, 17, 100} {
			rows, _ := walk(t, fmt.Sprintf("/admin/pix/credits?status=failed&account_id=%s&limit=%d", account, limit), "pix", get)
			require.Equal(t, want(account), idsOf(rows), "account %q, limit %d", account, limit)
		}
	}
	r := get("/admin/pix/credits?status=failed")
	require.Len(t, r.body["pix"], len(all), "the default page holds them all")
	require.Nil(t, r.body["next_cursor"])

	// acc-a's cursor after its first two rows, sent for acc-b: acc-b's
	// rows after that position, and never one of acc-a's.
	r = get("/admin/pix/credits?status=failed&account_id=acc-a&limit=2")
	cursor := r.body["next_cursor"].(string)
	r = get("/admin/pix/credits?status=failed&account_id=acc-b&limit=100&cursor=" + cursor)
	require.Equal(t, http.StatusOK, r.status)
	position := -1
	for i, f := range all {
		if f.id == want("acc-a")[1] {
			position = i
		}
	}
	var after []string
	for _, f := range all[position+1:] {
		if f.account == "acc-b" {
			after = append(after, f.id)
		}
	}
	require.NotEmpty(t, after)
	require.Less(t, len(after), len(want("acc-b")), "some of acc-b's are before the position")
	require.Equal(t, after, idsOf(r.body["pix"].([]any)))

	for _, q := range []string{"limit=0", "limit=1001", "limit=x", "cursor=abc", "cursor=" + encodeTestCursor(`{"group":1,"id":"r05"}`),
		"cursor=" + encodeTestCursor(`{"failed_at":"2026-01-01T00:00:00Z","end_to_end_id":"not-an-id"}`)} {
		r := get("/admin/pix/credits?status=failed&" + q)
		require.Equal(t, http.StatusBadRequest, r.status, q)
		code, _ := errorOf(t, r)
		require.Equal(t, api.CodeInvalidRequest, code, q)
	}
}
