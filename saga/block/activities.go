package block

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/google/uuid"

	"github.com/pixbank/pix/activities"
)

// Activities are the saga's activities, with their dependencies.
type Activities struct {
	Store *Store
	Log   *slog.Logger
}

// LoadBlock reads the block: its status and when it expires.
func (a *Activities) LoadBlock(ctx context.Context, id string) (Block, error) {
	key, err := parseID(id)
	if err != nil {
		return Block{}, err
	}
	b, err := a.Store.Get(ctx, key)
	if err != nil {
		return Block{}, activities.KindError(err)
	}
	return b, nil
}

// ExpireBlock releases the block at its 72 hours (Store.Expire) and
// returns it as it is after. An attempt after one whose answer was lost,
// or after a release or a return that took the lock first, changes
// nothing.
func (a *Activities) ExpireBlock(ctx context.Context, id string) (Block, error) {
	return a.change(ctx, id, "block released at its 72 hours", a.Store.Expire)
}

// SettleBlock ends a returning block once its devolução has ended
// (Store.Settle); a devolução still open changes nothing.
func (a *Activities) SettleBlock(ctx context.Context, id string) (Block, error) {
	return a.change(ctx, id, "block ended with its devolução", a.Store.Settle)
}

// change runs one of the store's decisions on the block id, logging what
// it changed.
func (a *Activities) change(ctx context.Context, id, done string, decide func(context.Context, uuid.UUID) (Block, bool, error)) (Block, error) {
	key, err := parseID(id)
	if err != nil {
		return Block{}, err
	}
	b, changed, err := decide(ctx, key)
	if err != nil {
		return Block{}, activities.KindError(err)
	}
	if changed {
		endedTotal.WithLabelValues(b.Status, deref(b.EndCause)).Inc()
		a.Log.InfoContext(ctx, done, attrsOf(b)...)
	}
	return b, nil
}

// attrsOf are a block's log attributes.
func attrsOf(b Block) []any {
	attrs := []any{"block_id", b.ID, "workflow_id", WorkflowID(b.ID.String()), "end_to_end_id", b.EndToEndID,
		"account_id", b.AccountID, "amount_cents", b.AmountCents, "status", b.Status}
	if b.EndCause != nil {
		attrs = append(attrs, "end_cause", *b.EndCause)
	}
	if b.RefundID != nil {
		attrs = append(attrs, "refund_id", *b.RefundID)
	}
	return attrs
}

// parseID reads a run's block id: one that is no UUID names no block
// (final).
func parseID(id string) (uuid.UUID, error) {
	key, err := uuid.Parse(id)
	if err != nil {
		return uuid.Nil, activities.KindError(fmt.Errorf("%w: %q is no block id", ErrNotFound, id))
	}
	return key, nil
}
