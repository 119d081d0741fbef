package db

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/internal/psp"
)

// RefundNoter records the outcomes a PSP announced for devoluções (the
// store's NoteRefundOutcomes).
type RefundNoter interface {
	NoteRefundOutcomes(ctx context.Context, notices []RefundNotice) (NotedRefunds, error)
}

// refundItem is the part of an API Pix devolucoes item the bank reads.
type refundItem struct {
	ID     string `json:"id"`
	Status string `json:"status"`
}

// NoteRefundNotices records, for the refund sagas, the final outcomes
// (DEVOLVIDO, NAO_REALIZADO) that the PSP announced in the devolucoes of
// received PIX (pix.Notification.RefundNotice), for devoluções we made:
// the dispatcher signals them to the refunds' runs, which confirm them
// with the PSP's record. Both ways a PIX is told to us run it once the
// notifications are stored: the API Pix webhook (api's receivedHooks) and
// the PSP catch-up, which lists the PSP's record (GET /pix). devolucoes is
// informational: one that can't be read is skipped (logged), never a
// refusal. Noting the same outcome again is harmless.
func NoteRefundNotices(ctx context.Context, store RefundNoter, log *slog.Logger, ns []pix.Notification) error {
	var notices []RefundNotice
	for _, n := range ns {
		if len(n.RefundNotice) == 0 {
			continue
		}
		var items []refundItem
		if err := json.Unmarshal(n.RefundNotice, &items); err != nil {
			var one refundItem // devolucoes as one object, as some PSPs send it
			if err := json.Unmarshal(n.RefundNotice, &one); err != nil {
				log.WarnContext(ctx, "devolucoes not understood; polling decides", "end_to_end_id", n.EndToEndID, "error", err)
				continue
			}
			items = []refundItem{one}
		}
		for _, it := range items {
			if !pix.ValidRefundID(it.ID) || !psp.RefundStatus(it.Status).Final() {
				continue
			}
			notices = append(notices, RefundNotice{ID: it.ID, EndToEndID: n.EndToEndID, Status: it.Status})
		}
	}
	if len(notices) == 0 {
		return nil
	}
	noted, err := store.NoteRefundOutcomes(ctx, notices)
	if err != nil {
		return fmt.Errorf("note refund outcomes: %w", err)
	}
	// The refund's saga is the workflow pix-refund:<refund_id>.
	for _, id := range noted.Open {
		log.InfoContext(ctx, "psp notice of a devolução's outcome noted", "refund_id", id)
	}
	for _, n := range noted.Contradicted {
		log.ErrorContext(ctx, "psp notice contradicts a final refund; a human must look (the reconciliation reports it too)",
			"refund_id", n.ID, "end_to_end_id", n.EndToEndID, "notice", n.Status)
	}
	return nil
}
