package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/gin-gonic/gin"

	"github.com/pixbank/pix/internal/auth"
	"github.com/pixbank/pix/internal/pix"
)

// The lists below are where a saga's HTTP side is registered: one line per
// list, its handlers in the saga's own file (docs/extending.md).

// customerRoutes register the customer routes, each behind its scope (read:
// pix:read, write: pix:write); the handler checks the account (callerOf).
var customerRoutes = []func(h *handlers, r gin.IRoutes, read, write gin.HandlerFunc){
	(*handlers).creditRoutes,
	(*handlers).transferRoutes,
	(*handlers).refundRoutes,
}

// receivedHooks run after the notifications of an API Pix webhook are
// committed, before it is answered: an error answers the webhook with it
// (the PSP delivers again; the inbox absorbs the copy and the hook runs
// again), so a hook must be idempotent.
var receivedHooks = []func(h *handlers, ctx context.Context, ns []pix.Notification) error{
	(*handlers).noteRefundOutcomes,
}

// creditSectionsOf add members to the view of a credit (GET
// /pix/credits/{id} and its admin twin): what other sagas did with the PIX.
var creditSectionsOf = []func(h *handlers, ctx context.Context, credit pix.Credit) (creditSection, error){
	(*handlers).creditRefunds,
}

// SagaRoutes registers the customer routes of a saga declared in a package
// of its own (saga.Descriptor.Routes), each behind its scope (read:
// pix:read, write: pix:write), with what every handler shares (Kit). pixd
// gives the router every saga's (Deps.SagaRoutes).
type SagaRoutes func(k Kit, r gin.IRoutes, read, write gin.HandlerFunc)

// Kit is what a saga's own handlers share with every other handler: the
// caller of the request, the one error envelope (domain errors mapped to
// HTTP by their kind, pix.Kinds), the Idempotency-Key layer (ServeKeyed)
// and the Temporal UI's link.
type Kit struct{ h *handlers }

// Caller is the authenticated caller of the request (a customer route's).
func (k Kit) Caller(c *gin.Context) auth.Caller { return callerOf(c) }

// Fail answers err in the error envelope and aborts the request: a
// refusal with its kind's status and code, anything else as a 5xx whose
// text is logged, never answered.
func (k Kit) Fail(c *gin.Context, err error) { abortWithError(c, k.h.Logger, err) }

// NamePIX names the PIX the request is about in its log line.
func (k Kit) NamePIX(c *gin.Context, endToEndID string) { c.Set(ctxEndToEndID, endToEndID) }

// WorkflowURL is the Temporal UI's page of the workflow id.
func (k Kit) WorkflowURL(workflowID string) string { return k.h.workflowURL(workflowID) }

// ServeKeyed runs op behind the Idempotency-Key layer (see serveKeyed).
func ServeKeyed[Req any](k Kit, c *gin.Context, op KeyedOperation[Req]) { serveKeyed(k.h, c, op) }

// ForbiddenUnlessFor is a keyed operation's Forbidden check of a request
// that moves money out of account: the answer (403 forbidden_account,
// before anything is written) when the caller's token does not grant it,
// else nil.
func ForbiddenUnlessFor(caller auth.Caller, account string) error {
	if !caller.MayActFor(account) {
		return errForbiddenAccount
	}
	return nil
}

func (h *handlers) creditRoutes(r gin.IRoutes, read, _ gin.HandlerFunc) {
	r.GET("/pix/credits/:end_to_end_id", read, h.getCredit)
	r.GET("/accounts/:id", read, h.getAccount)
}

func (h *handlers) transferRoutes(r gin.IRoutes, read, write gin.HandlerFunc) {
	r.POST("/pix", write, h.createTransfer)
	r.GET("/pix/transfers/:id", read, h.getTransfer)
}

// afterReceive runs the receivedHooks.
func (h *handlers) afterReceive(ctx context.Context, ns []pix.Notification) error {
	for _, hook := range receivedHooks {
		if err := hook(h, ctx, ns); err != nil {
			return err
		}
	}
	return nil
}

// creditSection is one member a saga adds to a credit's view; one without
// a Name is left out (the saga has nothing to say of the PIX).
type creditSection struct {
	Name  string
	Value any
}

// creditSections collects the sections of credit's view.
func (h *handlers) creditSections(ctx context.Context, credit pix.Credit) ([]creditSection, error) {
	var sections []creditSection
	for _, section := range creditSectionsOf {
		s, err := section(h, ctx, credit)
		if err != nil {
			return nil, err
		}
		if s.Name != "" {
			sections = append(sections, s)
		}
	}
	return sections, nil
}

// MarshalJSON writes the view's members, then its sections'.
func (v creditView) MarshalJSON() ([]byte, error) {
	type plain creditView // without this method
	b, err := json.Marshal(plain(v))
	if err != nil || len(v.sections) == 0 {
		return b, err
	}
	var buf bytes.Buffer
	buf.Write(bytes.TrimSuffix(b, []byte("}")))
	for _, s := range v.sections {
		value, err := json.Marshal(s.Value)
		if err != nil {
			return nil, fmt.Errorf("credit view section %s: %w", s.Name, err)
		}
		name, _ := json.Marshal(s.Name)
		buf.WriteByte(',')
		buf.Write(name)
		buf.WriteByte(':')
		buf.Write(value)
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}
