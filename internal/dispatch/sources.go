package dispatch

import (
	"context"

	"go.temporal.io/sdk/client"

	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/workflows"
)

// InboxSource is the pending inbox rows: their credit workflows.
type InboxSource struct {
	db.DueQueue // Store.InboxQueue()
	TaskQueue   string
	Retry       workflows.RetrySettings
}

func (s InboxSource) Kind() string { return "inbox" }
func (s InboxSource) Start(ctx context.Context, c client.Client, due db.Due) (bool, error) {
	return workflows.StartCredit(ctx, c, s.TaskQueue, workflows.CreditInput{
		EndToEndID: due.Key, PriorAttempts: due.Attempts, Drive: due.Drive, Retry: s.Retry,
	}, listing(due))
}
func (s InboxSource) LogAttrs(due db.Due) []any {
	return workflows.CreditLogAttrs(due.Key, due.Attempts)
}

// TransferSource is the open outgoing transfers: their saga workflows.
type TransferSource struct {
	db.DueQueue // Store.TransferQueue()
	TaskQueue   string
	Settings    workflows.TransferSettings
}

func (s TransferSource) Kind() string { return "transfers" }
func (s TransferSource) Start(ctx context.Context, c client.Client, due db.Due) (bool, error) {
	return workflows.StartTransfer(ctx, c, s.TaskQueue, workflows.TransferInput{TransferID: due.Key, Settings: s.Settings}, listing(due))
}
func (s TransferSource) LogAttrs(due db.Due) []any {
	return []any{"transfer_id", due.Key, "workflow_id", workflows.TransferWorkflowID(due.Key)}
}

// listing is what the row's run is listed under in the Temporal UI.
func listing(due db.Due) workflows.Listing {
	l := workflows.Listing{EndToEndID: due.EndToEndID, AmountCents: due.AmountCents, Status: due.Status, Memo: due.Memo}
	if due.AccountID != nil {
		l.AccountID = *due.AccountID
	}
	if due.PSP != nil {
		l.PSP = *due.PSP
	}
	return l
}
