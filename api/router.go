package api

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/internal/metrics"
	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/internal/webhooksig"
	"github.com/pixbank/pix/workflows"
)

// Deps is what the handlers need.
type Deps struct {
	Store *db.Store
	// Temporal is checked by /readyz.
	Temporal client.Client
	// Kick wakes the dispatcher after a commit that made a row due; nil
	// leaves it to the dispatcher's polling.
	Kick func()
	// TemporalNamespace and TemporalUIURL build links to the Temporal UI.
	TemporalNamespace string
	TemporalUIURL     string
	// RequestTimeout bounds the work of one request, so that a hung database
	// answers 503 rather than holding the PSP's connection.
	RequestTimeout time.Duration
	Logger         *slog.Logger

	// Signatures verifies the Standard Webhooks signature of PSP webhooks;
	// nil when no secret is configured. With RequireSignatures an unsigned
	// webhook is refused; without it a signed one is still verified.
	Signatures        *webhooksig.Verifier
	RequireSignatures bool
	// RequireClientCert refuses a webhook that did not come with a client
	// certificate verified against the configured CA (mutual TLS).
	RequireClientCert bool
	// AdminToken is the bearer token of the admin routes; "" disables them.
	AdminToken string

	// Keys is the Idempotency-Key policy of POST /pix; BankISPB starts the
	// end_to_end_ids of our transfers.
	Keys     db.KeyPolicy
	BankISPB string

	// Metrics serves GET /metrics (Prometheus); nil: no route.
	Metrics http.Handler
	// Webhooks counts the webhooks by outcome; nil counts nothing.
	Webhooks *metrics.Webhooks
	// Draining reports that the process is shutting down: /readyz answers
	// 503 so that a load balancer stops sending, while requests still run.
	Draining func() bool
}

// Gin context keys.
const (
	ctxEndToEndID = "end_to_end_id"
	ctxBody       = "body"
	ctxPSP        = "psp"
	ctxErrorCode  = "error_code"
)

// NewRouter returns the HTTP handler of the service.
func NewRouter(d Deps) http.Handler {
	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	r.HandleMethodNotAllowed = true
	h := &handlers{Deps: d}
	r.Use(h.recoverPanics, h.logRequests, h.timeout)
	r.NoRoute(func(c *gin.Context) {
		c.AbortWithStatusJSON(http.StatusNotFound, ErrorBody{ErrorDetail{CodeNotFound, "no route " + c.Request.Method + " " + c.Request.URL.Path}})
	})
	r.NoMethod(func(c *gin.Context) {
		c.AbortWithStatusJSON(http.StatusMethodNotAllowed, ErrorBody{ErrorDetail{CodeMethodNotAllowed, "method " + c.Request.Method + " not allowed here"}})
	})

	webhooks := r.Group("/webhooks", h.countRejections, h.requireClientCert)
	webhooks.POST("/pix", h.authenticWebhook(MaxWebhookBytes), h.receiveWebhook)
	// The API Pix PSP appends /pix to the URL the bank registers.
	webhooks.POST("/api-pix/pix", h.authenticWebhook(MaxAPIPixBodyBytes), h.receiveAPIPixWebhook)
	r.GET("/pix/credits/:end_to_end_id", h.getCredit)
	r.POST("/pix", h.createTransfer)
	r.GET("/pix/transfers/:id", h.getTransfer)
	admin := r.Group("/admin", h.requireAdmin)
	admin.POST("/pix/credits/:end_to_end_id/retry", h.retryCredit)
	admin.GET("/pix/credits", h.listCredits)
	admin.POST("/accounts/:id/pix/credits/retry", h.retryAccount)
	admin.GET("/reconcile", h.reconcile)
	r.GET("/accounts/:id", h.getAccount)
	r.GET("/healthz", h.healthz)
	if d.Metrics != nil {
		r.GET("/metrics", gin.WrapH(d.Metrics))
	}
	r.GET("/readyz", h.readyz)
	return r
}

type handlers struct{ Deps }

func (h *handlers) kick() {
	if h.Kick != nil {
		h.Kick()
	}
}

// receiveWebhook stores a PSP notification and acknowledges it: 202 once the
// inbox row is committed. It never waits for Temporal.
func (h *handlers) receiveWebhook(c *gin.Context) {
	n, err := decodeNotification(c.MustGet(ctxBody).([]byte))
	if err != nil {
		abortWithError(c, h.Logger, err)
		return
	}
	n.PSP = c.GetString(ctxPSP)
	c.Set(ctxEndToEndID, n.EndToEndID)
	receipt, err := h.Store.Receive(c.Request.Context(), n)
	if err != nil {
		if pix.IsRefusal(err) {
			h.Logger.Warn("webhook refused", "end_to_end_id", n.EndToEndID, "workflow_id", workflows.CreditWorkflowID(n.EndToEndID),
				"account_id", n.AccountID, "amount_cents", n.AmountCents, "error", err)
		}
		abortWithError(c, h.Logger, err)
		return
	}
	if !receipt.Duplicate || receipt.Redriven {
		h.kick()
	}
	h.stored(pix.SourceNative, receipt.Duplicate)
	h.Logger.Info("webhook accepted", append(workflows.CreditLogAttrs(n.EndToEndID, receipt.Attempts),
		"account_id", n.AccountID, "amount_cents", n.AmountCents,
		"psp", n.PSP, "duplicate", receipt.Duplicate, "redriven", receipt.Redriven, "status", receipt.Status)...)
	c.JSON(http.StatusAccepted, receipt)
}

// receiveAPIPixWebhook stores the PIX of an API Pix notification, all in one
// transaction, and answers 200 (the spec's code) once every one is committed.
func (h *handlers) receiveAPIPixWebhook(c *gin.Context) {
	ns, err := decodeAPIPix(c.MustGet(ctxBody).([]byte))
	if err != nil {
		abortWithError(c, h.Logger, err)
		return
	}
	psp := c.GetString(ctxPSP)
	for i := range ns {
		ns[i].PSP = psp
	}
	receipts, err := h.Store.ReceiveBatch(c.Request.Context(), ns)
	if err != nil {
		var item *pix.ItemError
		if errors.As(err, &item) && pix.IsRefusal(err) {
			n := ns[item.Index]
			h.Logger.Warn("api pix webhook refused", "end_to_end_id", n.EndToEndID, "workflow_id", workflows.CreditWorkflowID(n.EndToEndID), "item", item.Index,
				"pix_key", n.PixKey, "txid", n.TxID, "amount_cents", n.AmountCents, "error", err)
		}
		abortWithError(c, h.Logger, err)
		return
	}
	kick := false
	for i, r := range receipts {
		n := ns[i]
		kick = kick || !r.Duplicate || r.Redriven
		h.stored(pix.SourceAPIPix, r.Duplicate)
		h.Logger.Info("webhook accepted", append(workflows.CreditLogAttrs(n.EndToEndID, r.Attempts),
			"format", n.Source, "pix_key", n.PixKey, "txid", n.TxID,
			"amount_cents", n.AmountCents, "psp", psp, "refund_notice", len(n.RefundNotice) > 0,
			"duplicate", r.Duplicate, "redriven", r.Redriven, "status", r.Status)...)
	}
	if kick {
		h.kick()
	}
	c.JSON(http.StatusOK, gin.H{"pix": receipts})
}

// creditView is the answer of GET /pix/credits/{end_to_end_id}.
type creditView struct {
	pix.Credit
	WorkflowID string `json:"workflow_id"`
	// WorkflowStatus is the latest run's status as Temporal says
	// (Running, Completed, Failed, ...), "none" when no run exists (not
	// dispatched yet, or its history is past the namespace's retention), or
	// "unknown: <why>" when Temporal did not answer.
	WorkflowStatus string `json:"workflow_status"`
	TemporalUIURL  string `json:"temporal_ui_url"`
}

func (h *handlers) endToEndIDParam(c *gin.Context) (string, bool) {
	id := c.Param("end_to_end_id")
	if !pix.ValidEndToEndID(id) {
		abortWithError(c, h.Logger, pix.Invalid("end_to_end_id", "must be 32 letters or digits starting with E"))
		return "", false
	}
	c.Set(ctxEndToEndID, id)
	return id, true
}

func (h *handlers) getCredit(c *gin.Context) {
	id, ok := h.endToEndIDParam(c)
	if !ok {
		return
	}
	credit, err := h.Store.GetCredit(c.Request.Context(), id)
	if err != nil {
		abortWithError(c, h.Logger, err)
		return
	}
	wid := workflows.CreditWorkflowID(id)
	c.JSON(http.StatusOK, creditView{Credit: credit, WorkflowID: wid, WorkflowStatus: h.workflowStatus(c.Request.Context(), wid), TemporalUIURL: h.workflowURL(wid)})
}

// workflowStatusTimeout bounds the Temporal call of GET /pix/credits/{id}:
// the row is the answer; the run's status only adds to it.
const workflowStatusTimeout = 2 * time.Second

// workflowStatus is the status of the latest run of workflowID.
func (h *handlers) workflowStatus(ctx context.Context, workflowID string) string {
	ctx, cancel := context.WithTimeout(ctx, workflowStatusTimeout)
	defer cancel()
	desc, err := h.Temporal.DescribeWorkflow(ctx, workflowID, "")
	var notFound *serviceerror.NotFound
	switch {
	case errors.As(err, &notFound):
		return "none"
	case err != nil:
		h.Logger.Warn("could not read the workflow's status", "workflow_id", workflowID, "error", err)
		return "unknown: " + err.Error()
	}
	return desc.Status.String()
}

// workflowURL links to the Temporal UI's list of every run of a workflow ID
// (a re-driven PIX has several).
func (h *handlers) workflowURL(workflowID string) string {
	q := url.Values{"query": {`WorkflowId="` + workflowID + `"`}}
	return h.TemporalUIURL + "/namespaces/" + url.PathEscape(h.TemporalNamespace) + "/workflows?" + q.Encode()
}

// retryCredit re-drives a failed PIX: the row goes back to pending and the
// dispatcher starts a new workflow run.
func (h *handlers) retryCredit(c *gin.Context) {
	id, ok := h.endToEndIDParam(c)
	if !ok {
		return
	}
	attempts, err := h.Store.Redrive(c.Request.Context(), id)
	if err != nil {
		abortWithError(c, h.Logger, err)
		return
	}
	h.kick()
	h.Logger.Info("pix credit re-driven by an operator", workflows.CreditLogAttrs(id, attempts)...)
	c.JSON(http.StatusAccepted, gin.H{"end_to_end_id": id, "status": pix.StatusPending, "workflow_id": workflows.CreditWorkflowID(id)})
}

func (h *handlers) getAccount(c *gin.Context) {
	account, err := h.Store.GetAccount(c.Request.Context(), c.Param("id"))
	if err != nil {
		abortWithError(c, h.Logger, err)
		return
	}
	c.JSON(http.StatusOK, account)
}

func (h *handlers) healthz(c *gin.Context) {
	c.JSON(http.StatusOK, gin.H{"status": "ok"})
}

// readyz reports whether PostgreSQL and Temporal answer, and how far the
// outbox relay is behind.
func (h *handlers) readyz(c *gin.Context) {
	if h.Draining != nil && h.Draining() {
		c.AbortWithStatusJSON(http.StatusServiceUnavailable, gin.H{
			"error":  ErrorDetail{CodeNotReady, "shutting down: in-flight requests finish, new ones go elsewhere"},
			"checks": gin.H{"draining": true},
		})
		return
	}
	ctx, cancel := context.WithTimeout(c.Request.Context(), 2*time.Second)
	defer cancel()
	checks := gin.H{"postgres": "ok", "temporal": "ok"}
	ready := true
	if err := h.Store.Ping(ctx); err != nil {
		checks["postgres"] = err.Error()
		ready = false
	}
	if _, err := h.Temporal.CheckHealth(ctx, &client.CheckHealthRequest{}); err != nil {
		checks["temporal"] = err.Error()
		ready = false
	}
	// The outbox's lag is shown, not judged: events wait safely in
	// PostgreSQL while the broker is away, and the API still takes PIX.
	if lag, err := h.Store.OutboxLag(ctx); err == nil {
		checks["outbox"] = lag
	}
	if !ready {
		c.AbortWithStatusJSON(http.StatusServiceUnavailable, gin.H{
			"error":  ErrorDetail{CodeNotReady, "a dependency is unreachable"},
			"checks": checks,
		})
		return
	}
	c.JSON(http.StatusOK, gin.H{"status": "ready", "checks": checks})
}

// timeout bounds each request's context.
func (h *handlers) timeout(c *gin.Context) {
	if h.RequestTimeout <= 0 {
		c.Next()
		return
	}
	ctx, cancel := context.WithTimeout(c.Request.Context(), h.RequestTimeout)
	defer cancel()
	c.Request = c.Request.WithContext(ctx)
	c.Next()
}

// logRequests writes one line per request.
func (h *handlers) logRequests(c *gin.Context) {
	start := time.Now()
	c.Next()
	attrs := append(logAttrs(c), "method", c.Request.Method, "path", c.Request.URL.Path,
		"status", c.Writer.Status(), "duration_ms", float64(time.Since(start).Microseconds())/1000)
	h.Logger.Debug("http request", attrs...)
}

// recoverPanics answers 500 with the JSON envelope instead of dropping the
// connection, and logs the panic.
func (h *handlers) recoverPanics(c *gin.Context) {
	defer func() {
		if p := recover(); p != nil {
			h.Logger.Error("panic in handler", append(logAttrs(c), "panic", p)...)
			c.AbortWithStatusJSON(http.StatusInternalServerError, ErrorBody{ErrorDetail{CodeInternal, "internal error"}})
		}
	}()
	c.Next()
}

// listCredits is GET /admin/pix/credits?status=failed[&account_id=X][&limit=N]:
// the failed PIX with their reasons, newest first.
func (h *handlers) listCredits(c *gin.Context) {
	if c.Query("status") != pix.StatusFailed {
		abortWithError(c, h.Logger, pix.Invalid("status", "must be failed (the list of failed PIX)"))
		return
	}
	limit := 100
	if v := c.Query("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			abortWithError(c, h.Logger, pix.Invalid("limit", "must be a whole number from 1 to 1000"))
			return
		}
		limit = n
	}
	credits, err := h.Store.FailedCredits(c.Request.Context(), c.Query("account_id"), limit)
	if err != nil {
		abortWithError(c, h.Logger, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"pix": credits})
}

// retryAccount is POST /admin/accounts/{id}/pix/credits/retry: every failed
// PIX of the account is re-driven.
func (h *handlers) retryAccount(c *gin.Context) {
	redriven, err := h.Store.RedriveFailed(c.Request.Context(), c.Param("id"))
	if err != nil {
		abortWithError(c, h.Logger, err)
		return
	}
	if len(redriven) > 0 {
		h.kick()
	}
	ids := make([]string, 0, len(redriven))
	for _, r := range redriven {
		ids = append(ids, r.EndToEndID)
		h.Logger.Info("pix credit re-driven by an operator", append(workflows.CreditLogAttrs(r.EndToEndID, r.Attempts), "account_id", c.Param("id"))...)
	}
	c.JSON(http.StatusAccepted, gin.H{"account_id": c.Param("id"), "redriven": ids})
}

// reconcile is GET /admin/reconcile: the books' own check. A difference is
// logged as an error and reported; money is never fixed here.
func (h *handlers) reconcile(c *gin.Context) {
	r, err := h.Store.Reconcile(c.Request.Context())
	if err != nil {
		abortWithError(c, h.Logger, err)
		return
	}
	if !r.Balanced() {
		h.Logger.Error("reconciliation found differences", "unbalanced_accounts", r.UnbalancedAccounts,
			"done_without_credit", r.DoneWithoutCredit, "credit_without_done", r.CreditWithoutDone)
	}
	c.JSON(http.StatusOK, gin.H{"balanced": r.Balanced(), "report": r})
}

// stored counts a stored notification.
func (h *handlers) stored(format string, duplicate bool) {
	if h.Webhooks != nil {
		h.Webhooks.Stored(format, duplicate)
	}
}

// countRejections counts each webhook request answered with an error, by
// its code (abortWithError leaves the code in the context).
func (h *handlers) countRejections(c *gin.Context) {
	c.Next()
	if h.Webhooks != nil && c.Writer.Status() >= 400 {
		code := c.GetString(ctxErrorCode)
		if code == "" {
			code = strconv.Itoa(c.Writer.Status())
		}
		h.Webhooks.Rejected(code)
	}
}
