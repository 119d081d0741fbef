package reconcile

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/pixbank/pix/api"
	"github.com/pixbank/pix/internal/auth"
)

// The operator route (api/openapi/pix-api):
//
//	GET /admin/reconcile   pix:admin: the books' own check, now

// RouteStore is what the route needs of the database.
type RouteStore interface {
	Reconcile(ctx context.Context) (Reconciliation, error)
}

// Handlers serve the saga's route.
type Handlers struct {
	Store RouteStore
	Log   *slog.Logger
}

// HTTP is the saga's HTTP side: its operator route.
func (h *Handlers) HTTP() api.SagaHTTP {
	return api.SagaHTTP{Routes: []api.Route{
		{Method: http.MethodGet, Path: "/admin/reconcile", Scope: auth.ScopeAdmin, Handle: h.reconcile},
	}}
}

// reconcile is GET /admin/reconcile: the books' own check. A difference is
// logged as an error and reported; money is never fixed here.
func (h *Handlers) reconcile(k api.Kit, c *gin.Context) {
	r, err := h.Store.Reconcile(c.Request.Context())
	if err != nil {
		k.Fail(c, err)
		return
	}
	if !r.Balanced() {
		h.Log.Error("reconciliation found differences", "unbalanced_accounts", r.UnbalancedAccounts, "unbalanced_holds", r.UnbalancedHolds,
			"done_without_credit", r.DoneWithoutCredit, "credit_without_done", r.CreditWithoutDone)
	}
	c.JSON(http.StatusOK, gin.H{"balanced": r.Balanced(), "report": r})
}
