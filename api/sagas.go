package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/gin-gonic/gin"

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
