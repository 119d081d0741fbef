package dispatch

import (
	"context"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/workflows"
)

// InboxSource is the pending inbox rows: their credit workflows.
type InboxSource struct {
	Store     *db.Store
	TaskQueue string
	Retry     workflows.RetrySettings
}

func (s InboxSource) Kind() string    { return "inbox" }
func (s InboxSource) Channel() string { return db.DueChannel }
func (s InboxSource) Claim(ctx context.Context, limit int, lease time.Duration) ([]db.Due, error) {
	return s.Store.ClaimDue(ctx, limit, lease)
}
func (s InboxSource) MarkDispatched(ctx context.Context, keys []string, recheckAfter time.Duration) error {
	return s.Store.MarkDispatched(ctx, keys, recheckAfter)
}
func (s InboxSource) DeferDispatch(ctx context.Context, keys []string, delay time.Duration) error {
	return s.Store.DeferDispatch(ctx, keys, delay)
}
func (s InboxSource) Start(ctx context.Context, c client.Client, due db.Due) (bool, error) {
	return workflows.StartCredit(ctx, c, s.TaskQueue, workflows.CreditInput{
		EndToEndID: due.Key, PriorAttempts: due.Attempts, Retry: s.Retry,
	})
}
func (s InboxSource) LogAttrs(due db.Due) []any {
	return []any{"end_to_end_id", due.Key, "workflow_id", workflows.CreditWorkflowID(due.Key)}
}

// TransferSource is the open outgoing transfers: their saga workflows.
type TransferSource struct {
	Store     *db.Store
	TaskQueue string
	Settings  workflows.TransferSettings
}

func (s TransferSource) Kind() string    { return "transfers" }
func (s TransferSource) Channel() string { return db.TransferDueChannel }
func (s TransferSource) Claim(ctx context.Context, limit int, lease time.Duration) ([]db.Due, error) {
	return s.Store.ClaimDueTransfers(ctx, limit, lease)
}
func (s TransferSource) MarkDispatched(ctx context.Context, keys []string, recheckAfter time.Duration) error {
	return s.Store.MarkTransfersDispatched(ctx, keys, recheckAfter)
}
func (s TransferSource) DeferDispatch(ctx context.Context, keys []string, delay time.Duration) error {
	return s.Store.DeferTransferDispatch(ctx, keys, delay)
}
func (s TransferSource) Start(ctx context.Context, c client.Client, due db.Due) (bool, error) {
	return workflows.StartTransfer(ctx, c, s.TaskQueue, workflows.TransferInput{TransferID: due.Key, Settings: s.Settings})
}
func (s TransferSource) LogAttrs(due db.Due) []any {
	return []any{"transfer_id", due.Key, "workflow_id", workflows.TransferWorkflowID(due.Key)}
}
