package api

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"time"

	"github.com/gin-gonic/gin"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/pixbank/pix/api/openapi"
	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/internal/auth"
	"github.com/pixbank/pix/internal/metrics"
	"github.com/pixbank/pix/internal/notification"
	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/internal/tracing"
	"github.com/pixbank/pix/internal/webhooksig"
	"github.com/pixbank/pix/workflows"
)

// Deps is what the handlers need.
type Deps struct {
	// Stores are each saga's handlers' stores (StoresOf(*db.Store) in
	// production).
	Stores Stores
	// Temporal is checked by /readyz and tells a credit's workflow status
	// (a client.Client in production).
	Temporal Temporal
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
	// CertPSPs says which PSP a client certificate belongs to
	// (WEBHOOK_MTLS_PSPS): a listed PSP's webhooks need no signature
	// unless Signatures holds a secret of it, and a certificate not listed
	// is refused. None listed: a certificate identifies no PSP.
	CertPSPs webhooksig.CertPSPs
	// AdminToken is a bearer token of the admin routes (beside tokens with
	// scope pix:admin); with neither configured the admin routes are off.
	AdminToken string
	// Tokens verifies bearer tokens: of the customer routes, and admin
	// tokens with scope pix:admin. nil: no issuer configured.
	Tokens TokenVerifier
	// OpenCustomerRoutes serves the customer routes to anyone, without a
	// token (AUTH_REQUIRED=false): development only.
	OpenCustomerRoutes bool
	// TrustedProxies may set X-Forwarded-For (the client IP in logs);
	// none when empty.
	TrustedProxies []string
	// Codec serves the Temporal codec server under /codec/ (it does its own
	// CORS and asks AuthorizeAdmin); nil: no route.
	Codec http.Handler

	// Sagas are the HTTP sides of every saga the router serves
	// (registry.HTTP: each saga's descriptor declares its own), in order:
	// their routes, their hooks on received webhooks, their sections of a
	// credit's view.
	Sagas []SagaHTTP
	// Keys is the Idempotency-Key policy of every keyed request (POST /pix,
	// ...).
	Keys db.KeyPolicy

	// Metrics serves GET /metrics (Prometheus); nil: no route.
	Metrics http.Handler
	// Webhooks counts the webhooks by outcome; nil counts nothing.
	Webhooks *metrics.Webhooks
	// Draining reports that the process is shutting down: /readyz answers
	// 503 so that a load balancer stops sending, while requests still run.
	Draining func() bool
	// Tracing makes every request of the webhook, customer and admin
	// routes a server span (traced); nil: off.
	Tracing *tracing.Provider
	// InFlight caps the requests in flight, shared by every listener's
	// router (HTTP_MAX_IN_FLIGHT); nil: no cap.
	InFlight *InFlight
}

// Gin context keys.
const (
	ctxEndToEndID = "end_to_end_id"
	ctxBody       = "body"
	ctxPSP        = "psp"
	ctxCertPSP    = "cert_psp"
	ctxErrorCode  = "error_code"
	ctxCaller     = "caller"
)

// Routes selects the route classes a listener serves.
type Routes uint8

// Route classes: each can have its own listener.
const (
	// CustomerRoutes: the customer API (bearer tokens), the admin routes
	// and the codec server.
	CustomerRoutes Routes = 1 << iota
	// WebhookRoutes: the PSPs' webhooks (signatures, mutual TLS).
	WebhookRoutes
	// OpsRoutes: /metrics, /healthz, /readyz.
	OpsRoutes
	AllRoutes = CustomerRoutes | WebhookRoutes | OpsRoutes
)

// NewRouter returns the HTTP handler of the route classes routes.
func NewRouter(d Deps, routes Routes) (http.Handler, error) {
	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	// gin trusts every proxy unless told otherwise: a client could then
	// pick the IP our logs record with X-Forwarded-For.
	if err := r.SetTrustedProxies(d.TrustedProxies); err != nil {
		return nil, fmt.Errorf("TRUSTED_PROXIES: %w", err)
	}
	r.HandleMethodNotAllowed = true
	h := &handlers{Deps: d}
	// First: a refused request costs no span, no log line, no timer.
	if d.InFlight != nil {
		r.Use(d.InFlight.limit)
	}
	if d.Tracing.Enabled() {
		r.Use(traced(d.Tracing))
	}
	r.Use(h.recoverPanics, h.logRequests, h.timeout)
	r.NoRoute(func(c *gin.Context) {
		c.AbortWithStatusJSON(http.StatusNotFound, ErrorBody{ErrorDetail{CodeNotFound, "no route " + c.Request.Method + " " + c.Request.URL.Path}})
	})
	r.NoMethod(func(c *gin.Context) {
		c.AbortWithStatusJSON(http.StatusMethodNotAllowed, ErrorBody{ErrorDetail{CodeMethodNotAllowed, "method " + c.Request.Method + " not allowed here"}})
	})

	if routes&WebhookRoutes != 0 {
		webhooks := r.Group("/webhooks", h.observeWebhooks, h.requireClientCert)
		webhooks.POST("/pix", h.authenticWebhook(MaxWebhookBytes), h.receiveWebhook)
		// The API Pix PSP appends /pix to the URL the bank registers.
		webhooks.POST("/api-pix/pix", h.authenticWebhook(notification.MaxAPIPixBodyBytes), h.receiveAPIPixWebhook)
		if err := h.serveWebhooks(webhooks, d.Sagas); err != nil {
			return nil, err
		}
		if err := serveContract(r, openapi.Webhooks); err != nil {
			return nil, err
		}
	}
	if err := checkCreditSections(d.Sagas); err != nil {
		return nil, err
	}
	if routes&CustomerRoutes != 0 {
		// Every route names its scope, which picks its check; a customer
		// route's handler checks the account (callerOf).
		if err := h.serveRoutes(r, coreRoutes); err != nil {
			return nil, err
		}
		for _, s := range d.Sagas {
			if err := h.serveRoutes(r, s.Routes); err != nil {
				return nil, err
			}
		}
		if d.Codec != nil {
			r.Any("/codec/*op", gin.WrapH(d.Codec))
		}
		if err := serveContract(r, openapi.PixAPI); err != nil {
			return nil, err
		}
	}
	if routes&OpsRoutes != 0 {
		r.GET("/healthz", h.healthz)
		if d.Metrics != nil {
			r.GET("/metrics", gin.WrapH(d.Metrics))
		}
		r.GET("/readyz", h.readyz)
	}
	return r, nil
}

// coreRoutes are the routes no saga owns: the accounts. (The books' check,
// GET /admin/reconcile, is saga/reconcile's.)
var coreRoutes = []Route{
	{http.MethodGet, "/accounts/:id", auth.ScopeRead, handle((*handlers).getAccount)},
}

// AuthorizeAdmin says why r may not call an admin route (ADMIN_TOKEN, or
// a token with scope pix:admin), or nil: the codec server's check.
func AuthorizeAdmin(d Deps) func(*http.Request) error {
	return (&handlers{Deps: d}).authorizeAdmin
}

type handlers struct{ Deps }

// receiveWebhook stores a PSP notification and acknowledges it: 202 once the
// inbox row is committed. It never waits for Temporal.
func (h *handlers) receiveWebhook(c *gin.Context) {
	n, err := notification.DecodeNative(c.MustGet(ctxBody).([]byte))
	if err != nil {
		abortWithError(c, h.Logger, err)
		return
	}
	n.PSP = c.GetString(ctxPSP)
	c.Set(ctxEndToEndID, n.EndToEndID)
	ctx := c.Request.Context()
	tracing.SetEndToEndID(ctx, n.EndToEndID)
	receipt, err := h.Stores.Webhooks.Receive(ctx, n)
	if err != nil {
		if pix.IsRefusal(err) {
			h.Logger.WarnContext(ctx, "webhook refused", "end_to_end_id", n.EndToEndID, "workflow_id", workflows.CreditWorkflowID(n.EndToEndID),
				"account_id", n.AccountID, "amount_cents", n.AmountCents, "error", err)
		}
		abortWithError(c, h.Logger, err)
		return
	}
	h.stored(pix.SourceNative, receipt.Duplicate)
	h.logAccepted(ctx, n, receipt)
	answerReceipt(c, http.StatusAccepted, receipt)
}

// receiveAPIPixWebhook stores the PIX of an API Pix notification, all in one
// transaction, and answers 200 (the spec's code) once every one is committed.
func (h *handlers) receiveAPIPixWebhook(c *gin.Context) {
	ns, err := notification.DecodeAPIPix(c.MustGet(ctxBody).([]byte))
	if err != nil {
		abortWithError(c, h.Logger, err)
		return
	}
	psp := c.GetString(ctxPSP)
	for i := range ns {
		ns[i].PSP = psp
	}
	receipts, err := h.Stores.Webhooks.ReceiveBatch(c.Request.Context(), ns)
	if err == nil {
		err = h.afterReceive(c.Request.Context(), ns)
	}
	if err != nil {
		var item *pix.ItemError
		if errors.As(err, &item) && pix.IsRefusal(err) {
			n := ns[item.Index]
			h.Logger.WarnContext(c.Request.Context(), "api pix webhook refused", "end_to_end_id", n.EndToEndID, "workflow_id", workflows.CreditWorkflowID(n.EndToEndID), "item", item.Index,
				"pix_key", n.PixKey, "txid", n.TxID, "amount_cents", n.AmountCents, "error", err)
		}
		abortWithError(c, h.Logger, err)
		return
	}
	for i, r := range receipts {
		h.stored(pix.SourceAPIPix, r.Duplicate)
		h.logAPIPixAccepted(c.Request.Context(), ns[i], r)
	}
	answerReceiptBatch(c, http.StatusOK, receipts)
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
		return "unknown"
	}
	return desc.Status.String()
}

// workflowURL links to the Temporal UI's list of every run of a workflow ID
// (a re-driven PIX has several).
func (h *handlers) workflowURL(workflowID string) string {
	q := url.Values{"query": {`WorkflowId="` + workflowID + `"`}}
	return h.TemporalUIURL + "/namespaces/" + url.PathEscape(h.TemporalNamespace) + "/workflows?" + q.Encode()
}

// getAccount is GET /accounts/{id}: one of the caller's accounts; any other
// is "not found", without asking the database whether it exists.
func (h *handlers) getAccount(c *gin.Context) {
	id := c.Param("id")
	if !callerOf(c).MayActFor(id) {
		abortWithError(c, h.Logger, pix.ErrAccountNotFound)
		return
	}
	account, err := h.Stores.Accounts.GetAccount(c.Request.Context(), id)
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
	// What failed is logged; the answer says only what is down (a probe
	// is no place for a database's error text).
	if err := h.Stores.Probe.Ping(ctx); err != nil {
		h.Logger.Warn("readiness: postgres unreachable", "error", err)
		checks["postgres"] = "unreachable"
		ready = false
	}
	if _, err := h.Temporal.CheckHealth(ctx, &client.CheckHealthRequest{}); err != nil {
		h.Logger.Warn("readiness: temporal unreachable", "error", err)
		checks["temporal"] = "unreachable"
		ready = false
	}
	// The outbox's lag is shown, not judged: events wait safely in
	// PostgreSQL while the broker is away, and the API still takes PIX.
	if lag, err := h.Stores.Probe.OutboxLag(ctx); err == nil {
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

// logRequests writes one line per request, at debug level: with debug
// off (the default), nothing about it is built.
func (h *handlers) logRequests(c *gin.Context) {
	if !h.Logger.Enabled(c.Request.Context(), slog.LevelDebug) {
		c.Next()
		return
	}
	start := time.Now()
	c.Next()
	attrs := logAttrs(c)
	if caller, ok := c.Get(ctxCaller); ok {
		attrs = append(attrs, "sub", caller.(auth.Caller).Subject)
	}
	attrs = append(attrs, "method", c.Request.Method, "path", c.Request.URL.Path, "remote_addr", c.ClientIP(),
		"status", c.Writer.Status(), "duration_ms", float64(time.Since(start).Microseconds())/1000)
	h.Logger.DebugContext(c.Request.Context(), "http request", attrs...)
}

// recoverPanics answers 500 with the JSON envelope instead of dropping the
// connection, and logs the panic.
func (h *handlers) recoverPanics(c *gin.Context) {
	defer func() {
		if p := recover(); p != nil {
			h.Logger.ErrorContext(c.Request.Context(), "panic in handler", append(logAttrs(c), "panic", p)...)
			c.AbortWithStatusJSON(http.StatusInternalServerError, ErrorBody{ErrorDetail{CodeInternal, "internal error"}})
		}
	}()
	c.Next()
}

// stored counts a stored notification.
func (h *handlers) stored(format string, duplicate bool) {
	if h.Webhooks != nil {
		h.Webhooks.Stored(format, duplicate)
	}
}

// observeWebhooks times each webhook request and counts those answered
// with an error, by their code (abortWithError leaves it in the context),
// both by the PSP that sent them: the one its signature or client
// certificate identified, if any, so that the label holds only PSPs of the
// configuration. It is the one place webhook answers are counted.
func (h *handlers) observeWebhooks(c *gin.Context) {
	if h.Webhooks == nil {
		c.Next()
		return
	}
	start := time.Now()
	c.Next()
	psp := c.GetString(ctxPSP)
	if psp == "" {
		psp = c.GetString(ctxCertPSP)
	}
	if psp == "" {
		psp = metrics.NoPSP
	}
	h.Webhooks.Answered(psp, c.Writer.Status(), c.GetString(ctxErrorCode), time.Since(start))
}
