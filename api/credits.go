package api

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/internal/auth"
	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/workflows"
)

// CreditHTTP is the credit's HTTP side (saga.Credit): a PIX received, as
// its customer sees it and as the operators do, and its re-drive.
func CreditHTTP() SagaHTTP {
	return SagaHTTP{Routes: []Route{
		{http.MethodGet, "/pix/credits/:end_to_end_id", auth.ScopeRead, handle((*handlers).getCredit)},
		{http.MethodGet, "/admin/pix/credits/:end_to_end_id", auth.ScopeAdmin, handle((*handlers).getCreditAsOperator)},
		{http.MethodPost, "/admin/pix/credits/:end_to_end_id/retry", auth.ScopeAdmin, handle((*handlers).retryCredit)},
		{http.MethodGet, "/admin/pix/credits", auth.ScopeAdmin, handle((*handlers).listCredits)},
		{http.MethodPost, "/admin/accounts/:id/pix/credits/retry", auth.ScopeAdmin, handle((*handlers).retryAccount)},
	}}
}

// creditView is the answer of GET /pix/credits/{end_to_end_id}.
type creditView struct {
	pix.Credit
	WorkflowID string `json:"workflow_id"`
	// WorkflowStatus is the latest run's status as Temporal says
	// (Running, Completed, Failed, ...), "none" when no run exists (not
	// dispatched yet, or its history is past the namespace's retention), or
	// "unknown" when Temporal did not answer (why is logged, not told).
	WorkflowStatus string `json:"workflow_status"`
	TemporalUIURL  string `json:"temporal_ui_url"`
	// sections are what the sagas add to the view (their CreditSection),
	// by their member name.
	sections []creditSection
}

// endToEndIDParam is the PIX the path names; a malformed one is answered
// 400, and ok is false.
func (h *handlers) endToEndIDParam(c *gin.Context) (string, bool) {
	id := c.Param("end_to_end_id")
	if !pix.ValidEndToEndID(id) {
		abortWithError(c, h.Logger, pix.Invalid("end_to_end_id", "must be 32 letters or digits starting with E"))
		return "", false
	}
	c.Set(ctxEndToEndID, id)
	return id, true
}

// getCredit is GET /pix/credits/{end_to_end_id}: a PIX credited (or to be
// credited) to one of the caller's accounts. Another account's PIX is "not
// found", exactly like a missing one. Why a credit attempt failed is the
// operators' business (GET /admin/pix/credits/{id}), not the customer's.
func (h *handlers) getCredit(c *gin.Context) {
	credit, ok := h.creditParam(c, func(credit pix.Credit) bool {
		return credit.AccountID != nil && callerOf(c).MayActFor(*credit.AccountID)
	})
	if !ok {
		return
	}
	credit.LastError = nil
	if credit.Charge != nil && credit.Charge.Outcome == db.ChargeOtherAccount {
		// Whose charge a txid is, is the other customer's business: to
		// this one it is as if no charge had it.
		credit.Charge.Outcome = db.ChargeUnknown
	}
	h.answerCredit(c, credit)
}

// answerCredit answers the view of credit.
func (h *handlers) answerCredit(c *gin.Context, credit pix.Credit) {
	v, err := h.creditView(c, credit)
	if err != nil {
		abortWithError(c, h.Logger, err)
		return
	}
	c.JSON(http.StatusOK, v)
}

// getCreditAsOperator is GET /admin/pix/credits/{end_to_end_id}: any PIX,
// with why its last attempt failed.
func (h *handlers) getCreditAsOperator(c *gin.Context) {
	credit, ok := h.creditParam(c, func(pix.Credit) bool { return true })
	if ok {
		h.answerCredit(c, credit)
	}
}

// creditParam reads the PIX the path names, if visible says the caller may
// see it; otherwise it answers "not found", as for a PIX that does not
// exist, and ok is false.
func (h *handlers) creditParam(c *gin.Context, visible func(pix.Credit) bool) (credit pix.Credit, ok bool) {
	id, ok := h.endToEndIDParam(c)
	if !ok {
		return pix.Credit{}, false
	}
	credit, err := h.Stores.Credits.GetCredit(c.Request.Context(), id)
	if err == nil && !visible(credit) {
		err = pix.ErrCreditNotFound
	}
	if err != nil {
		abortWithError(c, h.Logger, err)
		return pix.Credit{}, false
	}
	return credit, true
}

// creditView is credit's view, with every saga's section of it.
func (h *handlers) creditView(c *gin.Context, credit pix.Credit) (creditView, error) {
	wid := workflows.CreditWorkflowID(credit.EndToEndID)
	v := creditView{Credit: credit, WorkflowID: wid, WorkflowStatus: h.workflowStatus(c.Request.Context(), wid), TemporalUIURL: h.workflowURL(wid)}
	sections, err := h.creditSections(c, credit)
	v.sections = sections
	return v, err
}

// retryCredit re-drives a failed PIX: the row goes back to pending and the
// dispatcher starts a new workflow run.
func (h *handlers) retryCredit(c *gin.Context) {
	id, ok := h.endToEndIDParam(c)
	if !ok {
		return
	}
	attempts, err := h.Stores.Admin.Redrive(c.Request.Context(), id)
	if err != nil {
		abortWithError(c, h.Logger, err)
		return
	}
	h.Logger.InfoContext(c.Request.Context(), "pix credit re-driven by an operator", workflows.CreditLogAttrs(id, attempts)...)
	c.JSON(http.StatusAccepted, gin.H{"end_to_end_id": id, "status": pix.StatusPending, "workflow_id": workflows.CreditWorkflowID(id)})
}

// listCredits is GET /admin/pix/credits?status=failed[&account_id=X]
// [&limit=N][&cursor=C]: the failed PIX with their reasons, newest first,
// a page at a time (PageOf).
func (h *handlers) listCredits(c *gin.Context) {
	if c.Query("status") != pix.StatusFailed {
		abortWithError(c, h.Logger, pix.Invalid("status", "must be failed (the list of failed PIX)"))
		return
	}
	p, err := PageOf[db.FailedKey](c)
	if err != nil {
		abortWithError(c, h.Logger, err)
		return
	}
	credits, err := h.Stores.Admin.FailedCredits(c.Request.Context(), c.Query("account_id"), p.After, p.Fetch())
	if err != nil {
		abortWithError(c, h.Logger, err)
		return
	}
	AnswerPage(Kit{h}, c, "pix", p, credits, db.FailedKeyOf)
}

// retryAccount is POST /admin/accounts/{id}/pix/credits/retry: every failed
// PIX of the account is re-driven.
func (h *handlers) retryAccount(c *gin.Context) {
	redriven, err := h.Stores.Admin.RedriveFailed(c.Request.Context(), c.Param("id"))
	if err != nil {
		abortWithError(c, h.Logger, err)
		return
	}
	ids := make([]string, 0, len(redriven))
	for _, r := range redriven {
		ids = append(ids, r.EndToEndID)
		h.Logger.InfoContext(c.Request.Context(), "pix credit re-driven by an operator", append(workflows.CreditLogAttrs(r.EndToEndID, r.Attempts), "account_id", c.Param("id"))...)
	}
	c.JSON(http.StatusAccepted, gin.H{"account_id": c.Param("id"), "redriven": ids})
}
