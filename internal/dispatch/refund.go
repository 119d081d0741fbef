package dispatch

import (
	"context"

	"go.temporal.io/sdk/client"

	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/workflows"
)

// RefundSource is the open refunds (devoluções): their sagas' workflows,
// and the PSP's notices of their outcome, signalled to their open runs.
type RefundSource struct {
	db.DueQueue // Store.RefundQueue()
	TaskQueue   string
	Settings    workflows.RefundSettings
}

func (s RefundSource) Kind() string { return "refunds" }
func (s RefundSource) Start(ctx context.Context, c client.Client, due db.Due) (bool, error) {
	var notice *workflows.RefundNotice
	if status, ok := due.Memo["psp_notice"].(string); ok {
		notice = &workflows.RefundNotice{Status: status}
	}
	return workflows.StartRefund(ctx, c, s.TaskQueue, workflows.RefundInput{RefundID: due.Key, Settings: s.Settings}, listing(due), notice)
}
func (s RefundSource) LogAttrs(due db.Due) []any {
	return []any{"refund_id", due.Key, "end_to_end_id", due.EndToEndID, "workflow_id", workflows.RefundWorkflowID(due.Key)}
}
