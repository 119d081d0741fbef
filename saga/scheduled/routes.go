package scheduled

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"

	"github.com/pixbank/pix/api"
	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/internal/auth"
	"github.com/pixbank/pix/internal/notification"
	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/saga"
	"github.com/pixbank/pix/saga/sagakit"
	"github.com/pixbank/pix/saga/transfer"
)

// The customer routes (api/openapi/pix-api/scheduled.yaml):
//
//	POST   /pix/scheduled        pix:write, Idempotency-Key: schedule a PIX
//	GET    /pix/scheduled        pix:read: an account's, by date
//	GET    /pix/scheduled/{id}   pix:read
//	DELETE /pix/scheduled/{id}   pix:write: cancel it before it runs
//
// Another customer's scheduled PIX, or account, answers as missing.

// MaxBodyBytes bounds the body of POST /pix/scheduled. The list's page
// size is every list's (api.PageOf).
const MaxBodyBytes = 16 << 10

// requestFields are the members of POST /pix/scheduled: a transfer's, and
// its date.
var requestFields = []string{"account_id", "amount_cents", "pix_key", "description", "scheduled_for"}

// RouteStore is what the routes need of the database.
type RouteStore interface {
	Create(ctx context.Context, r db.Reservation, n New, render func(Scheduled) ([]byte, error)) (Scheduled, error)
	Get(ctx context.Context, id uuid.UUID) (Scheduled, error)
	List(ctx context.Context, accountID, status string, after *ListKey, limit int) ([]Scheduled, error)
	Cancel(ctx context.Context, id uuid.UUID) (Scheduled, bool, error)
	// Clock is the clock run_at is decided by (the database's, Store.Clock).
	Clock(ctx context.Context) (time.Time, error)
}

// Handlers serve the saga's routes.
type Handlers struct {
	Store    RouteStore
	Keys     api.KeyStore
	Temporal sagakit.Signaller
	Settings Settings
	Log      *slog.Logger
	// Now, when set, is the clock the dates are checked by (a test's);
	// nil: the store's, the database's (Store.Clock), the one the run
	// decides run_at by, never the API's own.
	Now func() time.Time
}

// httpOf builds the saga's HTTP side from env (saga.Descriptor.HTTP); a
// wrong PIX_SCHEDULED_HOUR stops pixd at start.
func httpOf(env saga.Env) (api.SagaHTTP, error) {
	settings, err := SettingsFrom(env.Lookup)
	if err != nil {
		return api.SagaHTTP{}, err
	}
	h := &Handlers{Store: NewStore(env.Store).WithMaxPending(settings.MaxPending), Keys: env.Store, Temporal: env.Temporal, Settings: settings, Log: env.Log}
	return h.HTTP(), nil
}

// HTTP is the saga's HTTP side: its routes, each under its scope.
func (h *Handlers) HTTP() api.SagaHTTP {
	return api.SagaHTTP{Routes: []api.Route{
		{Method: http.MethodPost, Path: "/pix/scheduled", Scope: auth.ScopeWrite, Handle: h.create},
		{Method: http.MethodGet, Path: "/pix/scheduled", Scope: auth.ScopeRead, Handle: h.list},
		{Method: http.MethodGet, Path: "/pix/scheduled/:id", Scope: auth.ScopeRead, Handle: h.get},
		{Method: http.MethodDelete, Path: "/pix/scheduled/:id", Scope: auth.ScopeWrite, Handle: h.cancel},
	}}
}

// view is a scheduled PIX as the API answers it.
type view struct {
	Scheduled
	WorkflowID    string `json:"workflow_id"`
	TemporalUIURL string `json:"temporal_ui_url"`
}

func viewOf(k api.Kit, s Scheduled) view {
	id := WorkflowID(s.ID.String())
	return view{Scheduled: s, WorkflowID: id, TemporalUIURL: k.WorkflowURL(id)}
}

// request is a decoded POST /pix/scheduled.
type request struct {
	pix.TransferRequest
	ScheduledFor string
}

// decode validates a POST /pix/scheduled body: a transfer's members, as
// POST /pix checks them, and that it names a date. Whether the date may be
// scheduled is checked when it is recorded (create's Run), after the
// account's check (Forbidden): a request for an account the token does not
// grant is 403, leaving no key behind, whatever its date; ServeKeyed skips
// that check for a body decode refuses.
func (h *Handlers) decode(body []byte) (request, error) {
	m, err := api.DecodeRequest(body, "scheduled PIX", requestFields...)
	if err != nil {
		return request{}, err
	}
	var r request
	if r.TransferRequest, err = transfer.RequestOf(m); err != nil {
		return r, err
	}
	r.ScheduledFor, err = notification.RequiredString(m["scheduled_for"], "scheduled_for")
	return r, err
}

// create is POST /pix/scheduled behind the Idempotency-Key layer: it
// records the scheduled PIX (nothing debited) and its saga starts.
func (h *Handlers) create(k api.Kit, c *gin.Context) {
	api.ServeKeyed(k, c, api.KeyedOperation[request]{
		What:    "scheduled pix",
		Done:    "scheduled pix created",
		Keys:    h.Keys,
		MaxBody: MaxBodyBytes,
		// The operation is in the fingerprint: this key replayed on
		// POST /pix (or one of POST /pix here) is another request, never
		// the other's answer.
		Hash:   api.OperationHash("pix-scheduled"),
		Decode: h.decode,
		Forbidden: func(caller auth.Caller, req request) error {
			return api.ForbiddenUnlessFor(caller, req.AccountID)
		},
		Run: func(ctx context.Context, res db.Reservation, req request) ([]byte, string, []any, error) {
			// A date refused is a refusal, recorded on the key as decode's.
			now, err := h.now(ctx)
			if err != nil {
				return nil, "", nil, err
			}
			runAt, err := h.Settings.RunAt(req.ScheduledFor, now)
			if err != nil {
				return nil, "", nil, err
			}
			var answer []byte
			created, err := h.Store.Create(ctx, res, New{ID: uuid.New(), TransferRequest: req.TransferRequest,
				ScheduledFor: req.ScheduledFor, RunAt: runAt}, func(s Scheduled) ([]byte, error) {
				b, err := json.Marshal(viewOf(k, s))
				answer = b
				return b, err
			})
			return answer, "", []any{"scheduled_id", created.ID, "workflow_id", WorkflowID(created.ID.String()),
				"account_id", created.AccountID, "amount_cents", created.AmountCents, "scheduled_for", created.ScheduledFor,
				"run_at", created.RunAt}, err
		},
	})
}

// now is the clock the dates are checked by: Now when set, else the
// store's (the database's).
func (h *Handlers) now(ctx context.Context) (time.Time, error) {
	if h.Now != nil {
		return h.Now(), nil
	}
	return h.Store.Clock(ctx)
}

// own reads the scheduled PIX of the route's id, one of the caller's
// accounts': another's is ErrNotFound.
func (h *Handlers) own(k api.Kit, c *gin.Context) (Scheduled, error) {
	id, err := uuid.Parse(c.Param("id"))
	if err != nil {
		return Scheduled{}, pix.Invalid("id", "must be a scheduled PIX id (a UUID)")
	}
	s, err := h.Store.Get(c.Request.Context(), id)
	if err == nil && !k.Caller(c).MayActFor(s.AccountID) {
		return Scheduled{}, ErrNotFound // another account's: as if missing
	}
	return s, err
}

// get is GET /pix/scheduled/{id}.
func (h *Handlers) get(k api.Kit, c *gin.Context) {
	s, err := h.own(k, c)
	if err != nil {
		k.Fail(c, err)
		return
	}
	if s.EndToEndID != nil {
		k.NamePIX(c, *s.EndToEndID)
	}
	c.JSON(http.StatusOK, viewOf(k, s))
}

// list is GET /pix/scheduled?account_id=…[&status=…][&limit=…][&cursor=…]:
// an account's scheduled PIX by date, a page at a time (api.PageOf).
func (h *Handlers) list(k api.Kit, c *gin.Context) {
	account := c.Query("account_id")
	if account == "" {
		k.Fail(c, pix.Invalid("account_id", "is required"))
		return
	}
	if !k.Caller(c).MayActFor(account) {
		k.Fail(c, pix.ErrAccountNotFound) // another's: as if missing
		return
	}
	status := c.Query("status")
	switch status {
	case "", StatusScheduled, StatusExecuted, StatusFailed, StatusCancelled:
	default:
		k.Fail(c, pix.Invalid("status", "must be scheduled, executed, failed or cancelled"))
		return
	}
	p, err := api.PageOf[ListKey](c)
	if err != nil {
		k.Fail(c, err)
		return
	}
	found, err := h.Store.List(c.Request.Context(), account, status, p.After, p.Fetch())
	if err != nil {
		k.Fail(c, err)
		return
	}
	views := make([]view, 0, len(found))
	for _, s := range found {
		views = append(views, viewOf(k, s))
	}
	api.AnswerPage(k, c, "scheduled", p, views, func(v view) ListKey { return ListKeyOf(v.Scheduled) })
}

// CancelNotWoken is the warning of a cancel whose wake-up signal could not
// be sent (Temporal unreachable, or the service's client still
// reconnecting): with its workflow_id, the run still asleep. Its entry in
// pix_scheduled_cancel_wakes stays for the wake-ups' dispatcher, which
// signals the run (WakeSource), retrying until Temporal answers: the run
// then reads the row and ends cancelled.
const CancelNotWoken = "scheduled pix cancelled, its run not woken yet: its dispatcher wakes it"

// cancel is DELETE /pix/scheduled/{id}: it cancels a scheduled PIX that
// has not run (200, status cancelled; again 200 when asked again), or
// answers 409 scheduled_pix_already_ran. The cancel is committed first,
// with its wake-up entry (pix_scheduled_cancel_wakes); then its run is
// woken at once (a signal: the fast path), which reads the row and ends.
// A signal that can't be sent loses nothing: the wake-ups' dispatcher
// signals the run again until it is delivered (or no run is open), and at
// worst the run reads the row at its time and ends cancelled then.
func (h *Handlers) cancel(k api.Kit, c *gin.Context) {
	ctx := c.Request.Context()
	s, err := h.own(k, c)
	if err == nil {
		var cancelled bool
		s, cancelled, err = h.Store.Cancel(ctx, s.ID)
		if cancelled {
			concludedTotal.WithLabelValues(StatusCancelled).Inc()
			h.Log.InfoContext(ctx, "scheduled pix cancelled", "scheduled_id", s.ID, "workflow_id", WorkflowID(s.ID.String()),
				"account_id", s.AccountID, "amount_cents", s.AmountCents, "scheduled_for", s.ScheduledFor)
		}
	}
	if err != nil {
		k.Fail(c, err)
		return
	}
	sagakit.Wake(ctx, h.Temporal, h.Log, WorkflowID(s.ID.String()), CancelSignal, CancelNotWoken, "scheduled_id", s.ID)
	c.JSON(http.StatusOK, viewOf(k, s))
}
