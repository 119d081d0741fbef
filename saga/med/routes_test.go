package med_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/pixbank/pix/api"
	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/db/dbtest"
	"github.com/pixbank/pix/internal/auth"
	"github.com/pixbank/pix/internal/dict"
	"github.com/pixbank/pix/saga/med"
	"github.com/pixbank/pix/saga/sagatest"
)

// noRuns is a Temporal that has no run of any workflow (the credit's
// view asks for its run's status).
type noRuns struct{}

func (noRuns) DescribeWorkflow(context.Context, string, string) (*client.WorkflowExecutionDescription, error) {
	return nil, serviceerror.NewNotFound("no run")
}

func (noRuns) CheckHealth(context.Context, *client.CheckHealthRequest) (*client.CheckHealthResponse, error) {
	return &client.CheckHealthResponse{}, nil
}

// operatorAPI serves the saga's operator routes and the credit's view over
// f's store, Temporal's signals sent to sig, to an operator ("ops", subject
// ops-1) and to the customer ("customer") of the PIX of 10,000 it credits,
// which it returns.
func (f *fixture) operatorAPI(sig *sagatest.Signals) (*sagatest.API, dbtest.Credited) {
	c := f.credit(10_000, 0)
	return f.routes(sig, api.Deps{Keys: operatorKeys}, sagatest.Callers{
		"ops":      sagatest.Operator("ops-1"),
		"customer": sagatest.Customer("cust", c.AccountID),
	}), c
}

// operatorKeys is the Idempotency-Key policy of the operator's routes
// under test.
var operatorKeys = db.KeyPolicy{LockFor: time.Minute, KeepFor: time.Hour}

// routes serves the saga's routes and the credit's view over f's store,
// Temporal's signals sent to sig (no run started: noRuns), with deps, to
// callers.
func (f *fixture) routes(sig *sagatest.Signals, deps api.Deps, callers sagatest.Callers) *sagatest.API {
	h := &med.Handlers{Store: f.store, Keys: f.s, Temporal: sig, Log: sagatest.Discard()}
	deps.Temporal = noRuns{}
	return sagatest.NewAPI(f.t, f.s, sagatest.Options{
		Sagas: []api.SagaHTTP{api.CreditHTTP(), h.HTTP()}, Deps: deps, Callers: callers})
}

// listPages lists the operator route path a row a page (limit=1), each
// page's rows under field, following the cursor to the end (most pages at
// the most), and returns the rows.
func listPages(t *testing.T, a *sagatest.API, path, field string, most int) []map[string]any {
	t.Helper()
	var rows []map[string]any
	next := path + "?limit=1"
	for pages := 0; ; pages++ {
		require.Less(t, pages, most, "the cursor goes on for ever")
		status, got := a.Call(http.MethodGet, next, "ops", "", nil)
		require.Equal(t, http.StatusOK, status, "%v", got)
		for _, row := range got[field].([]any) {
			rows = append(rows, row.(map[string]any))
		}
		if got["next_cursor"] == nil {
			return rows
		}
		next = path + "?limit=1&cursor=" + got["next_cursor"].(string)
	}
}

// The operator's routes over PostgreSQL: a report read, its analysis
// recorded under an Idempotency-Key (replayed, its run woken once), another
// analysis refused; a customer's token refused before anything; the
// credit's view shows the report, to its customer without the reporter's
// words nor the analysis.
func TestTheRoutes(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	sig := &sagatest.Signals{}
	a, c := f.operatorAPI(sig)
	r := f.intake(report(c.EndToEndID, dict.ReportOpen, time.Now()))
	f.step(f.store.Hold(ctx, r))
	base := "/pix/med/reports/" + r.ID.String()

	status, got := a.Call(http.MethodGet, base, "ops", "", nil)
	require.Equal(t, http.StatusOK, status, "%v", got)
	require.Equal(t, "held", got["status"])
	require.Equal(t, "pix-med:"+r.ID.String(), got["workflow_id"])
	require.NotContains(t, got, "report_details", "the reporter's words are not answered in clear")
	require.EqualValues(t, len([]rune("golpe do falso parente")), got["report_details_chars"])
	require.Nil(t, got["dict_problem_code"])
	status, missing := a.Call(http.MethodGet, "/pix/med/reports/"+uuid.NewString(), "ops", "", nil)
	require.Equal(t, http.StatusNotFound, status)
	require.Equal(t, "med_report_not_found", sagatest.Code(missing))

	key := uuid.NewString()
	body := map[string]any{"result": "AGREED", "details": "fraude confirmada"}
	status, analysed := a.Call(http.MethodPost, base+"/analysis", "ops", key, body)
	require.Equal(t, http.StatusCreated, status, "%v", analysed)
	require.Equal(t, "AGREED", analysed["analysis_result"])
	require.Equal(t, "ops-1", analysed["analysed_by"])
	status, again := a.Call(http.MethodPost, base+"/analysis", "ops", key, body)
	require.Equal(t, http.StatusCreated, status)
	require.Equal(t, analysed, again, "the key's answer")
	require.Equal(t, []string{"pix-med:" + r.ID.String() + " changed"}, sig.Sent())

	status, conflict := a.Call(http.MethodPost, base+"/analysis", "ops", uuid.NewString(), map[string]any{"result": "DISAGREED"})
	require.Equal(t, http.StatusUnprocessableEntity, status, "%v", conflict)
	require.Equal(t, "med_report_analysed", sagatest.Code(conflict))
	status, invalid := a.Call(http.MethodPost, base+"/analysis", "ops", uuid.NewString(), map[string]any{"result": "MAYBE"})
	require.Equal(t, http.StatusUnprocessableEntity, status)
	require.Equal(t, "invalid_request", sagatest.Code(invalid))

	for _, route := range []struct{ method, path string }{{http.MethodGet, base}, {http.MethodPost, base + "/analysis"}} {
		status, refused := a.Call(route.method, route.path, "customer", uuid.NewString(), body)
		require.Equal(t, http.StatusForbidden, status, "%s %s", route.method, route.path)
		require.Equal(t, "insufficient_scope", sagatest.Code(refused))
	}

	status, view := a.Call(http.MethodGet, "/pix/credits/"+c.EndToEndID, "customer", "", nil)
	require.Equal(t, http.StatusOK, status, "%v", view)
	seen := view["med"].([]any)[0].(map[string]any)
	require.EqualValues(t, 10_000, seen["held_cents"])
	require.NotContains(t, seen, "report_details")
	require.NotContains(t, seen, "analysis_details")
	status, view = a.Call(http.MethodGet, "/admin/pix/credits/"+c.EndToEndID, "ops", "", nil)
	require.Equal(t, http.StatusOK, status, "%v", view)
	require.NotContains(t, view["med"].([]any)[0].(map[string]any), "report_details")
}

// The operator view answers neither the reporter's words nor the DICT's
// problem text in clear: their length, and the problem's code. With
// ADMIN_TOKEN, the analysis is recorded by the api layer's subject of
// that token (auth.AdminToken), never empty.
func TestTheOperatorViewKeepsTheDICTsWordsOut(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	c := f.credit(10_000, 0)
	a := f.routes(&sagatest.Signals{}, api.Deps{AdminToken: "admin-secret"}, nil)
	r := f.intake(report(c.EndToEndID, dict.ReportOpen, time.Now()))
	r = f.step(f.store.Hold(ctx, r))
	f.step(f.store.NoteProblem(ctx, r, med.ProblemRefused+": acknowledge: dict: Forbidden: CPF 123.456.789-00 do pagador"))
	base := "/pix/med/reports/" + r.ID.String()
	status, got := a.Call(http.MethodGet, base, "admin-secret", "", nil)
	require.Equal(t, http.StatusOK, status, "%v", got)
	require.NotContains(t, got, "report_details")
	require.NotContains(t, got, "dict_problem")
	require.Equal(t, med.ProblemRefused, got["dict_problem_code"])
	raw, err := json.Marshal(got)
	require.NoError(t, err)
	require.NotContains(t, string(raw), "falso parente")
	require.NotContains(t, string(raw), "123.456.789-00")

	status, analysed := a.Call(http.MethodPost, base+"/analysis", "admin-secret", uuid.NewString(),
		map[string]any{"result": "DISAGREED"})
	require.Equal(t, http.StatusCreated, status, "%v", analysed)
	require.Equal(t, auth.AdminToken.Subject, analysed["analysed_by"])
}

// The refund requests kept on their own, to operators only: listed oldest
// first a page at a time (every one reached by the cursor), one read by
// its id (404 for a request its report answers, and any other id); a
// customer's token refused (403) before anything.
func TestTheKeptRequestsRoutes(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	a, _ := f.operatorAPI(&sagatest.Signals{})
	_, r := f.agreed(10_000, 0)
	taken := request(r, 10_000, dict.RefundOpen)
	f.step(f.store.IntakeRefund(ctx, taken))
	kept := map[string]bool{}
	for _, amount := range []int64{1_000, 2_000, 3_000} {
		q := request(r, amount, dict.RefundOpen)
		_, _, err := f.store.IntakeRefund(ctx, q)
		require.NoError(t, err)
		kept[q.ID] = true
	}

	seen := map[string]bool{}
	for _, q := range listPages(t, a, "/pix/med/refund-requests", "refund_requests", 100) {
		seen[q["id"].(string)] = true
		if kept[q["id"].(string)] {
			require.Equal(t, r.ID.String(), q["report_id"])
			require.Equal(t, "OPEN", q["dict_status"])
			require.Equal(t, "another_request", q["why"])
		}
	}
	for id := range kept {
		require.True(t, seen[id], "kept request %s not listed", id)
	}
	require.False(t, seen[taken.ID], "the request its report answers is the report's")

	for id := range kept {
		status, got := a.Call(http.MethodGet, "/pix/med/refund-requests/"+id, "ops", "", nil)
		require.Equal(t, http.StatusOK, status, "%v", got)
		require.Equal(t, id, got["id"])
		require.Contains(t, []any{1_000.0, 2_000.0, 3_000.0}, got["amount_cents"])
	}
	for _, id := range []string{taken.ID, uuid.NewString()} {
		status, got := a.Call(http.MethodGet, "/pix/med/refund-requests/"+id, "ops", "", nil)
		require.Equal(t, http.StatusNotFound, status, "%v", got)
		require.Equal(t, "med_refund_request_not_found", sagatest.Code(got))
	}
	status, got := a.Call(http.MethodGet, "/pix/med/refund-requests/not-a-uuid", "ops", "", nil)
	require.Equal(t, http.StatusBadRequest, status, "%v", got)

	var one string
	for id := range kept {
		one = id
	}
	for _, path := range []string{"/pix/med/refund-requests", "/pix/med/refund-requests/" + one} {
		status, refused := a.Call(http.MethodGet, path, "customer", "", nil)
		require.Equal(t, http.StatusForbidden, status, path)
		require.Equal(t, "insufficient_scope", sagatest.Code(refused))
	}
}
