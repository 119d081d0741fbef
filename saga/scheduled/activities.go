package scheduled

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/google/uuid"

	"github.com/pixbank/pix/activities"
)

// Activities are the saga's activities, with their dependencies.
type Activities struct {
	Store    *Store
	BankISPB string
	Log      *slog.Logger
}

// LoadScheduled reads the scheduled PIX: its status and when it runs.
func (a *Activities) LoadScheduled(ctx context.Context, id string) (Scheduled, error) {
	key, err := parseID(id)
	if err != nil {
		return Scheduled{}, err
	}
	s, err := a.Store.Get(ctx, key)
	if err != nil {
		return Scheduled{}, activities.KindError(err)
	}
	return s, nil
}

// RunScheduled runs the scheduled PIX on its date (Store.Run) and returns
// it as it concluded. An attempt after one whose answer was lost finds it
// concluded and changes nothing; it logs the PIX as it found it, since the
// lost attempt, whose commit may have been the one that ran it, logged
// nothing.
func (a *Activities) RunScheduled(ctx context.Context, id string) (Scheduled, error) {
	key, err := parseID(id)
	if err != nil {
		return Scheduled{}, err
	}
	s, concluded, err := a.Store.Run(ctx, key, a.BankISPB)
	if err != nil {
		return Scheduled{}, activities.KindError(err)
	}
	attrs := []any{"scheduled_id", s.ID, "workflow_id", WorkflowID(id), "account_id", s.AccountID,
		"amount_cents", s.AmountCents, "scheduled_for", s.ScheduledFor, "status", s.Status}
	if s.EndToEndID != nil {
		attrs = append(attrs, "end_to_end_id", *s.EndToEndID, "transfer_id", *s.TransferID)
	}
	if s.FailureReason != nil {
		attrs = append(attrs, "failure_reason", *s.FailureReason)
	}
	if !concluded {
		a.Log.InfoContext(ctx, "scheduled pix found concluded, nothing changed", attrs...)
		return s, nil
	}
	concludedTotal.WithLabelValues(s.Status).Inc()
	a.Log.InfoContext(ctx, "scheduled pix ran", attrs...)
	return s, nil
}

// parseID reads a run's scheduled PIX id: one that is no UUID names no
// scheduled PIX (final).
func parseID(id string) (uuid.UUID, error) {
	key, err := uuid.Parse(id)
	if err != nil {
		return uuid.Nil, activities.KindError(fmt.Errorf("%w: %q is no scheduled PIX id", ErrNotFound, id))
	}
	return key, nil
}
