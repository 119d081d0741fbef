package api

import (
	"context"

	"github.com/google/uuid"
	"go.temporal.io/sdk/client"

	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/internal/pix"
)

// The interfaces below are what the handlers need of their dependencies,
// declared here, by their consumer: *db.Store and the Temporal SDK's
// client.Client satisfy them, and tests can give the router fakes that
// need neither PostgreSQL nor Temporal.

// WebhookStore stores the PSPs' notifications (POST /webhooks/...).
type WebhookStore interface {
	Receive(ctx context.Context, n pix.Notification) (pix.Receipt, error)
	ReceiveBatch(ctx context.Context, ns []pix.Notification) ([]pix.Receipt, error)
}

// CustomerStore serves the customer routes: POST /pix behind its
// Idempotency-Key, and the reads of a caller's transfers, credits and
// accounts.
type CustomerStore interface {
	ReserveKey(ctx context.Context, caller string, key uuid.UUID, requestHash string, p db.KeyPolicy) (*db.Reservation, *db.RecordedResponse, error)
	CreateTransfer(ctx context.Context, r db.Reservation, t db.NewTransfer, render func(pix.Transfer) ([]byte, error)) (pix.Transfer, error)
	RecordResponse(ctx context.Context, r db.Reservation, status int, body []byte) error
	ReleaseKey(ctx context.Context, r db.Reservation) error
	GetTransfer(ctx context.Context, id uuid.UUID) (pix.Transfer, error)
	GetCredit(ctx context.Context, endToEndID string) (pix.Credit, error)
	GetAccount(ctx context.Context, id string) (pix.Account, error)
}

// AdminStore serves the operators' routes (/admin/...).
type AdminStore interface {
	GetCredit(ctx context.Context, endToEndID string) (pix.Credit, error)
	Redrive(ctx context.Context, endToEndID string) (attempts int, err error)
	RedriveFailed(ctx context.Context, accountID string) ([]db.Redriven, error)
	FailedCredits(ctx context.Context, accountID string, limit int) ([]pix.Credit, error)
	Reconcile(ctx context.Context) (db.Reconciliation, error)
}

// ProbeStore answers /readyz.
type ProbeStore interface {
	Ping(ctx context.Context) error
	OutboxLag(ctx context.Context) (db.OutboxLag, error)
}

// Store is every store method the handlers call (Deps.Store).
type Store interface {
	WebhookStore
	CustomerStore
	AdminStore
	ProbeStore
	RefundStore
}

// Temporal is what the handlers ask of Temporal: a workflow's status
// (GET /pix/credits/{id}) and its health (/readyz).
type Temporal interface {
	DescribeWorkflow(ctx context.Context, workflowID, runID string) (*client.WorkflowExecutionDescription, error)
	CheckHealth(ctx context.Context, request *client.CheckHealthRequest) (*client.CheckHealthResponse, error)
}
