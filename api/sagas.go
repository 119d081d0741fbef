package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/pixbank/pix/internal/auth"
	"github.com/pixbank/pix/internal/pix"
)

// A saga's HTTP side is declared by the saga itself, as a SagaHTTP its
// descriptor builds (saga.Descriptor.HTTP), the same way wherever its
// handlers live: the router serves what Deps.Sagas hold, in their order,
// and has no list of its own. The saga whose handlers are in this package
// (the credit) declares its own with CreditHTTP; the others in their own
// packages (saga/transfer, saga/refund, saga/scheduled; docs/extending.md).

// SagaHTTP is what a saga serves and adds over HTTP.
type SagaHTTP struct {
	// Routes are the saga's routes, each under its scope.
	Routes []Route
	// Received runs after the notifications of an API Pix webhook are
	// committed, before the webhook is answered: an error answers it with
	// the error (the PSP delivers again; the inbox absorbs the copy and the
	// hook runs again), so it must be idempotent. nil: none.
	Received func(k Kit, ctx context.Context, ns []pix.Notification) error
	// Webhooks are the saga's own PSP-facing routes, each served as POST
	// /webhooks<Path> behind exactly the checks of the PSP webhooks (the
	// client certificate, then the signature: requireClientCert,
	// authenticWebhook) and counted with them; nil: none.
	Webhooks []WebhookRoute
	// CreditSection is the saga's member of a credit's view; zero: none.
	CreditSection CreditSection
}

// Route is one route of a saga.
type Route struct {
	// Method and Path (gin's syntax: /pix/scheduled/:id) name it.
	Method, Path string
	// Scope authorizes it, and so says its class: auth.ScopeRead or
	// auth.ScopeWrite make a customer route (a JWT granting the scope; the
	// handler checks the accounts, and another customer's data answers
	// exactly like missing data), auth.ScopeAdmin an operator route
	// (ADMIN_TOKEN, or a JWT of scope pix:admin). Every route of a class
	// has the same checks, refusals and logging, and its caller is set
	// (Kit.Caller).
	Scope string
	// Handle serves the request, once its caller is authorized.
	Handle func(k Kit, c *gin.Context)
}

// WebhookRoute is one PSP-facing route of a saga: a notice the PSP posts.
type WebhookRoute struct {
	// Path is the route's path under /webhooks ("/med/infraction-reports").
	Path string
	// MaxBytes bounds the body (413 payload_too_large beyond).
	MaxBytes int64
	// Handle serves the webhook once its sender is authenticated and its
	// body read (Kit.WebhookBody; Kit.WebhookPSP names its PSP).
	Handle func(k Kit, c *gin.Context)
}

// CreditSection is a saga's member of a credit's view: GET
// /pix/credits/{end_to_end_id} and its admin twin, after the credit's own
// members, in the order of Deps.Sagas.
type CreditSection struct {
	// Name is the member's name ("refunds"): neither one of the view's own
	// members nor another saga's section.
	Name string
	// Of is the member's value for credit, which the caller (k.Caller(c):
	// the credit's customer, or an operator) may see; present false leaves
	// it out (the saga has nothing to say of the PIX).
	Of func(k Kit, c *gin.Context, credit pix.Credit) (value any, present bool, err error)
}

// Kit is what a saga's own handlers share with every other handler: the
// caller of the request, the one error envelope (domain errors mapped to
// HTTP by their kind, pix.Kinds), the Idempotency-Key layer (ServeKeyed)
// and the Temporal UI's link.
type Kit struct{ h *handlers }

// Caller is the authorized caller of the request, on a route of any
// scope: a customer's token; an operator's JWT (scope pix:admin), or
// auth.AdminToken for ADMIN_TOKEN; auth.Unauthenticated on the customer
// routes of a service run without authentication (AUTH_REQUIRED=false).
func (k Kit) Caller(c *gin.Context) auth.Caller { return callerOf(c) }

// Fail answers err in the error envelope and aborts the request: a
// refusal with its kind's status and code, anything else as a 5xx whose
// text is logged, never answered.
func (k Kit) Fail(c *gin.Context, err error) { abortWithError(c, k.h.Logger, err) }

// NamePIX names the PIX the request is about in its log line.
func (k Kit) NamePIX(c *gin.Context, endToEndID string) { c.Set(ctxEndToEndID, endToEndID) }

// WebhookBody is the body of a saga's webhook (WebhookRoute), read and
// authenticated before its handler runs.
func (k Kit) WebhookBody(c *gin.Context) []byte { return c.MustGet(ctxBody).([]byte) }

// WebhookPSP is the PSP that sent a saga's webhook, as its signature or
// client certificate identified it ("" for none: development, signatures
// not required).
func (k Kit) WebhookPSP(c *gin.Context) string { return c.GetString(ctxPSP) }

// WorkflowURL is the Temporal UI's page of the workflow id.
func (k Kit) WorkflowURL(workflowID string) string { return k.h.workflowURL(workflowID) }

// ServeKeyed runs op behind the Idempotency-Key layer (see serveKeyed), on
// a route of any scope: the keys are the caller's (Kit.Caller's subject).
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

// handle serves a handler of this package as a Route's Handle.
func handle(f func(*handlers, *gin.Context)) func(Kit, *gin.Context) {
	return func(k Kit, c *gin.Context) { f(k.h, c) }
}

// routeCheck is the check in front of a route of scope: the customer
// routes' (requireScope) or the operator routes' (requireAdmin).
func (h *handlers) routeCheck(scope string) (gin.HandlerFunc, error) {
	switch scope {
	case auth.ScopeRead, auth.ScopeWrite:
		return h.requireScope(scope), nil
	case auth.ScopeAdmin:
		return h.requireAdmin, nil
	}
	return nil, fmt.Errorf("scope %q: a route's scope is %s, %s or %s", scope, auth.ScopeRead, auth.ScopeWrite, auth.ScopeAdmin)
}

// serveRoutes registers routes on r, each behind its scope's check. A
// route that gin can't take (the same twice, a wildcard another one's
// conflicts with) is an error, not a panic.
func (h *handlers) serveRoutes(r gin.IRoutes, routes []Route) (err error) {
	k := Kit{h}
	var at Route
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("route %s %s: %v", at.Method, at.Path, p)
		}
	}()
	for _, at = range routes {
		check, err := h.routeCheck(at.Scope)
		if err != nil {
			return fmt.Errorf("route %s %s: %w", at.Method, at.Path, err)
		}
		if at.Handle == nil {
			return fmt.Errorf("route %s %s: no handler", at.Method, at.Path)
		}
		serve := at.Handle
		r.Handle(at.Method, at.Path, check, func(c *gin.Context) { serve(k, c) })
	}
	return nil
}

// serveWebhooks registers the sagas' webhooks on the /webhooks group r,
// each behind the PSP webhooks' authentication of its body. A route gin
// can't take is an error, not a panic.
func (h *handlers) serveWebhooks(r gin.IRoutes, sagas []SagaHTTP) (err error) {
	k := Kit{h}
	var at WebhookRoute
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("webhook %s: %v", at.Path, p)
		}
	}()
	for _, s := range sagas {
		for _, at = range s.Webhooks {
			if at.Handle == nil || at.MaxBytes <= 0 {
				return fmt.Errorf("webhook %s: a webhook has a handler and a body limit", at.Path)
			}
			serve := at.Handle
			r.POST(at.Path, h.authenticWebhook(at.MaxBytes), func(c *gin.Context) { serve(k, c) })
		}
	}
	return nil
}

// afterReceive runs every saga's Received hook.
func (h *handlers) afterReceive(ctx context.Context, ns []pix.Notification) error {
	for _, s := range h.Sagas {
		if s.Received == nil {
			continue
		}
		if err := s.Received(Kit{h}, ctx, ns); err != nil {
			return err
		}
	}
	return nil
}

// creditSection is one member a saga adds to a credit's view.
type creditSection struct {
	Name  string
	Value any
}

// creditSections collects the sections of credit's view.
func (h *handlers) creditSections(c *gin.Context, credit pix.Credit) ([]creditSection, error) {
	var sections []creditSection
	for _, s := range h.Sagas {
		if s.CreditSection.Of == nil {
			continue
		}
		value, present, err := s.CreditSection.Of(Kit{h}, c, credit)
		if err != nil {
			return nil, fmt.Errorf("credit section %s: %w", s.CreditSection.Name, err)
		}
		if present {
			sections = append(sections, creditSection{s.CreditSection.Name, value})
		}
	}
	return sections, nil
}

// checkCreditSections refuses a section without a name, or named like a
// member of the view or another section: one would hide the other.
func checkCreditSections(sagas []SagaHTTP) error {
	taken := jsonMembers(reflect.TypeFor[creditView]())
	for _, s := range sagas {
		switch name := s.CreditSection.Name; {
		case s.CreditSection.Of == nil && name == "":
		case s.CreditSection.Of == nil || name == "":
			return fmt.Errorf("credit section %q: a section has a name and a value (Of)", name)
		case slices.Contains(taken, name):
			return fmt.Errorf("credit section %q: the credit's view has a member of that name already", name)
		default:
			taken = append(taken, name)
		}
	}
	return nil
}

// jsonMembers are the names of the JSON members of struct type t, those
// of its embedded structs included, omitempty or not.
func jsonMembers(t reflect.Type) []string {
	var names []string
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case name == "-" || !f.IsExported():
		case f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct:
			names = append(names, jsonMembers(f.Type)...)
		case name == "":
			names = append(names, f.Name)
		default:
			names = append(names, name)
		}
	}
	return names
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
