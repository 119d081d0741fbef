package api

import (
	"context"

	"github.com/google/uuid"
	"go.temporal.io/sdk/client"

	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/internal/pix"
)

// The interfaces below are what the handlers need of their dependencies,
// declared here, by their consumer, one small interface per saga's
// handlers (a saga of its own package declares its store there:
// saga/transfer's and saga/refund's RouteStore): a
// method added to one saga's store grows that saga's fake only. *db.Store
// and the Temporal SDK's client.Client satisfy them, and tests can give
// the router fakes that need neither PostgreSQL nor Temporal.

// KeyStore is the Idempotency-Key layer every keyed create runs behind
// (serveKeyed): a saga's store of money-moving requests embeds it.
type KeyStore interface {
	ReserveKey(ctx context.Context, caller string, key uuid.UUID, requestHash string, p db.KeyPolicy) (*db.Reservation, *db.RecordedResponse, error)
	RecordResponse(ctx context.Context, r db.Reservation, status int, body []byte) error
	ReleaseKey(ctx context.Context, r db.Reservation) error
}

// WebhookStore stores the PSPs' notifications (POST /webhooks/...).
type WebhookStore interface {
	Receive(ctx context.Context, n pix.Notification) (pix.Receipt, error)
	ReceiveBatch(ctx context.Context, ns []pix.Notification) ([]pix.Receipt, error)
}

// CreditStore reads the credits (GET /pix/credits/{id} and its admin twin).
type CreditStore interface {
	GetCredit(ctx context.Context, endToEndID string) (pix.Credit, error)
}

// AccountStore reads the accounts (GET /accounts/{id}).
type AccountStore interface {
	GetAccount(ctx context.Context, id string) (pix.Account, error)
}

// AdminStore serves the operators' routes (/admin/...) but the credit's
// view (CreditStore).
type AdminStore interface {
	Redrive(ctx context.Context, endToEndID string) (attempts int, err error)
	RedriveFailed(ctx context.Context, accountID string) ([]db.Redriven, error)
	FailedCredits(ctx context.Context, accountID string, after *db.FailedKey, limit int) ([]pix.Credit, error)
}

// ProbeStore answers /readyz.
type ProbeStore interface {
	Ping(ctx context.Context) error
	OutboxLag(ctx context.Context) (db.OutboxLag, error)
}

// Stores are the stores of the handlers of this package, each their own
// (a saga of its own package builds its handlers' store from saga.Env).
type Stores struct {
	Webhooks WebhookStore
	Credits  CreditStore
	Accounts AccountStore
	Admin    AdminStore
	Probe    ProbeStore
}

// StoresOf gives s, the database, to the handlers of every saga.
func StoresOf(s *db.Store) Stores {
	return Stores{Webhooks: s, Credits: s, Accounts: s, Admin: s, Probe: s}
}

// Temporal is what the handlers ask of Temporal: a workflow's status
// (GET /pix/credits/{id}) and its health (/readyz).
type Temporal interface {
	DescribeWorkflow(ctx context.Context, workflowID, runID string) (*client.WorkflowExecutionDescription, error)
	CheckHealth(ctx context.Context, request *client.CheckHealthRequest) (*client.CheckHealthResponse, error)
}
