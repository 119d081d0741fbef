package block_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/pixbank/pix/api"
	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/saga/block"
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

// harness is the saga's routes (and the credit's view) served over
// PostgreSQL, the store's fixture, and the signals the routes sent.
type harness struct {
	*sagatest.API
	f       *fixture
	signals *sagatest.Signals
}

const adminToken = "the-admin-token"

func newAPI(t *testing.T) *harness {
	f := newFixture(t)
	sig := &sagatest.Signals{}
	h := &block.Handlers{Store: f.store, Keys: f.s, Temporal: sig, Log: sagatest.Discard()}
	a := sagatest.NewAPI(t, f.s, sagatest.Options{
		Sagas: []api.SagaHTTP{api.CreditHTTP(), h.HTTP()},
		Deps:  api.Deps{Keys: f.keys, Temporal: noRuns{}, AdminToken: adminToken},
		Callers: sagatest.Callers{
			"ops":   sagatest.Operator("ops-1"),
			"ops2":  sagatest.Operator("ops-2"),
			"maria": sagatest.Customer("maria", "acc-maria"),
		}})
	return &harness{API: a, f: f, signals: sig}
}

// The routes end to end over PostgreSQL: a block (held at once, replayed
// by its key), read, listed, released (again: the same answer), another
// returned; the credit's view shows them, to its customer without the
// operators' reason.
func TestTheRoutes(t *testing.T) {
	a := newAPI(t)
	c := a.f.credit(10_000, 0)
	base := "/pix/credits/" + c.EndToEndID + "/blocks"
	key := uuid.NewString()
	body := map[string]any{"amount_cents": 4_000, "reason": "conta de passagem"}

	status, created := a.Call(http.MethodPost, base, "ops", key, body)
	require.Equal(t, http.StatusCreated, status, "%v", created)
	require.Equal(t, "active", created["status"])
	require.Equal(t, "ops-1", created["requested_by"])
	id := created["id"].(string)
	require.Equal(t, "pix-block:"+id, created["workflow_id"])
	a.f.requireMoney(c.AccountID, 10_000, 4_000)

	status, again := a.Call(http.MethodPost, base, "ops", key, body)
	require.Equal(t, http.StatusCreated, status)
	require.Equal(t, created, again, "the key's answer")
	status, other := a.Call(http.MethodPost, "/pix/credits/"+a.f.credit(1_000, 0).EndToEndID+"/blocks", "ops", key, body)
	require.Equal(t, http.StatusUnprocessableEntity, status)
	require.Equal(t, "idempotency_key_reused", sagatest.Code(other), "the key on another PIX is another request")
	a.f.requireMoney(c.AccountID, 10_000, 4_000)

	status, refused := a.Call(http.MethodPost, base, "ops", uuid.NewString(), map[string]any{"amount_cents": 6_001, "reason": "x"})
	require.Equal(t, http.StatusUnprocessableEntity, status)
	require.Equal(t, "block_exceeds_credit", sagatest.Code(refused))
	status, refused = a.Call(http.MethodPost, base, "ops", uuid.NewString(), map[string]any{"amount_cents": 1, "reason": ""})
	require.Equal(t, http.StatusUnprocessableEntity, status)
	require.Equal(t, "invalid_request", sagatest.Code(refused))
	status, refused = a.Call(http.MethodPost, "/pix/credits/"+pix.NewEndToEndID("00000000", time.Now())+"/blocks", "ops", uuid.NewString(), body)
	require.Equal(t, http.StatusUnprocessableEntity, status)
	require.Equal(t, "pix_not_credited", sagatest.Code(refused))

	status, got := a.Call(http.MethodGet, base+"/"+id, "ops", "", nil)
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, created, got)
	status, missing := a.Call(http.MethodGet, "/pix/credits/"+c.EndToEndID+"/blocks/"+uuid.NewString(), "ops", "", nil)
	require.Equal(t, http.StatusNotFound, status)
	require.Equal(t, "block_not_found", sagatest.Code(missing))

	status, second := a.Call(http.MethodPost, base, adminToken, uuid.NewString(), map[string]any{"amount_cents": 1_000, "reason": "y"})
	require.Equal(t, http.StatusCreated, status, "%v", second)
	require.Len(t, a.Walk(base+"?limit=1", "blocks", "ops"), 2)

	status, released := a.Call(http.MethodPost, base+"/"+id+"/release", "ops2", "", nil)
	require.Equal(t, http.StatusOK, status, "%v", released)
	require.Equal(t, "released", released["status"])
	require.Equal(t, "operator", released["end_cause"])
	require.Equal(t, "ops-2", released["ended_by"])
	status, again = a.Call(http.MethodPost, base+"/"+id+"/release", "ops", "", nil)
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, released, again)
	status, conflict := a.Call(http.MethodPost, base+"/"+id+"/return", "ops", "", nil)
	require.Equal(t, http.StatusConflict, status)
	require.Equal(t, "block_released", sagatest.Code(conflict))
	a.f.requireMoney(c.AccountID, 10_000, 1_000)

	secondID := second["id"].(string)
	status, ret := a.Call(http.MethodPost, base+"/"+secondID+"/return", "ops", "", nil)
	require.Equal(t, http.StatusOK, status, "%v", ret)
	require.Equal(t, "returning", ret["status"])
	require.NotNil(t, ret["refund_id"])
	status, again = a.Call(http.MethodPost, base+"/"+secondID+"/return", "ops", "", nil)
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, ret, again, "one devolução")
	status, conflict = a.Call(http.MethodPost, base+"/"+secondID+"/release", "ops", "", nil)
	require.Equal(t, http.StatusConflict, status)
	require.Equal(t, "block_returned", sagatest.Code(conflict))
	a.f.requireMoney(c.AccountID, 9_000, 0)
	require.Equal(t, []string{
		"pix-block:" + id + " changed", "pix-block:" + id + " changed",
		"pix-block:" + secondID + " changed", "pix-block:" + secondID + " changed",
	}, a.signals.Sent())

	// The credit's view: the customer sees its blocks, not why nor who.
	status, view := a.Call(http.MethodGet, "/pix/credits/"+c.EndToEndID, "maria", "", nil)
	require.Equal(t, http.StatusNotFound, status, "maria's token does not grant the PIX's account: %v", view)
	a.f.requireBooks()
}

// The PIX's customer sees its blocks in its credit's view, without the
// operators' reason and names; an operator sees them whole.
func TestTheCreditsViewShowsItsBlocks(t *testing.T) {
	f := newFixture(t)
	sig := &sagatest.Signals{}
	h := &block.Handlers{Store: f.store, Keys: f.s, Temporal: sig, Log: sagatest.Discard()}
	c := f.credit(10_000, 0)
	a := sagatest.NewAPI(t, f.s, sagatest.Options{
		Sagas: []api.SagaHTTP{api.CreditHTTP(), h.HTTP()},
		Deps:  api.Deps{Keys: f.keys, Temporal: noRuns{}},
		Callers: sagatest.Callers{
			"ops":      sagatest.Operator("ops-1"),
			"customer": sagatest.Customer("cust", c.AccountID),
		}})
	status, view := a.Call(http.MethodGet, "/pix/credits/"+c.EndToEndID, "customer", "", nil)
	require.Equal(t, http.StatusOK, status, "%v", view)
	require.NotContains(t, view, "blocks", "none yet")

	b := f.mustBlock(c.EndToEndID, 2_500)
	status, view = a.Call(http.MethodGet, "/pix/credits/"+c.EndToEndID, "customer", "", nil)
	require.Equal(t, http.StatusOK, status)
	blocks := view["blocks"].([]any)
	require.Len(t, blocks, 1)
	seen := blocks[0].(map[string]any)
	require.Equal(t, b.ID.String(), seen["id"])
	require.EqualValues(t, 2_500, seen["amount_cents"])
	require.Equal(t, "active", seen["status"])
	require.NotContains(t, seen, "reason")
	require.NotContains(t, seen, "requested_by")

	status, view = a.Call(http.MethodGet, "/admin/pix/credits/"+c.EndToEndID, "ops", "", nil)
	require.Equal(t, http.StatusOK, status, "%v", view)
	whole := view["blocks"].([]any)[0].(map[string]any)
	require.Equal(t, "suspeita de fraude", whole["reason"])
	require.Equal(t, "operator-1", whole["requested_by"])
}

// Every route is an operator's: a customer's token is refused (403)
// before anything is read or written, no token is 401; the block's PIX
// in the path must be the block's.
func TestACustomerCantReachTheRoutes(t *testing.T) {
	a := newAPI(t)
	c := a.f.credit(10_000, 0)
	b := a.f.mustBlock(c.EndToEndID, 1_000)
	base := "/pix/credits/" + c.EndToEndID + "/blocks"
	routes := []struct{ method, path string }{
		{http.MethodPost, base}, {http.MethodGet, base}, {http.MethodGet, base + "/" + b.ID.String()},
		{http.MethodPost, base + "/" + b.ID.String() + "/release"}, {http.MethodPost, base + "/" + b.ID.String() + "/return"},
	}
	for _, r := range routes {
		status, body := a.Call(r.method, r.path, "maria", uuid.NewString(), map[string]any{"amount_cents": 1, "reason": "x"})
		require.Equal(t, http.StatusForbidden, status, "%s %s: %v", r.method, r.path, body)
		require.Equal(t, "insufficient_scope", sagatest.Code(body))
		status, _ = a.Call(r.method, r.path, "", uuid.NewString(), map[string]any{"amount_cents": 1, "reason": "x"})
		require.Equal(t, http.StatusUnauthorized, status, "%s %s", r.method, r.path)
	}
	a.f.requireMoney(c.AccountID, 10_000, 1_000)
	require.Empty(t, a.signals.Sent())

	// A block named under another PIX's path is missing there.
	other := a.f.credit(1_000, 0)
	status, body := a.Call(http.MethodPost, "/pix/credits/"+other.EndToEndID+"/blocks/"+b.ID.String()+"/release", "ops", "", nil)
	require.Equal(t, http.StatusNotFound, status)
	require.Equal(t, "block_not_found", sagatest.Code(body))
	a.f.requireMoney(c.AccountID, 10_000, 1_000)
}
