package med

import (
	"context"
	"log/slog"
	"strings"

	"github.com/google/uuid"

	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/saga/sagakit"
)

// FillsWake is the saga's hook on the holds an inflow filled
// (saga.Descriptor.HoldsFilled, db.Store.InTx), called after the
// inflow's commit: each report whose hold (kind med, ref
// med:<report>:<n>) was filled has its run woken (ChangedSignal), so that
// a run waiting for credits in a return in parts returns the part at once
// rather than at its next look (CreditPoll). The run decides on what it
// reads (its report, what its hold holds): a wake-up twice, late, or for
// a hold the report no longer waits on changes nothing. One lost (Temporal
// away, the process gone after the commit) is logged: the money stays
// held, and the run's next look, within CreditPoll, returns it. The inflow
// never waits longer than sagakit.WakeAllTimeout for all its reports
// together (sent at once, sagakit.WakeAll), and never fails.
func FillsWake(temporal sagakit.Signaller, log *slog.Logger) db.FillsHook {
	return func(ctx context.Context, filled []db.FilledHold) {
		woken := map[uuid.UUID]bool{}
		var wakes []sagakit.AWake
		for _, h := range filled {
			id, ok := reportOfHold(h)
			if !ok || woken[id] {
				continue
			}
			woken[id] = true
			wakes = append(wakes, sagakit.AWake{WorkflowID: WorkflowID(id.String()), Attrs: []any{
				"report_id", id, "hold_id", h.ID, "account_id", h.AccountID, "filled_cents", h.FilledCents,
				"fill_source_kind", h.Source.Kind}})
		}
		sagakit.WakeAll(ctx, temporal, log, ChangedSignal,
			"infraction report's hold filled, its run not woken: it returns the part at its next look", wakes)
	}
}

// reportOfHold is the report a hold of the saga's is of, from its ref
// (holdMore: med:<report>:<n>); false for another saga's hold.
func reportOfHold(h db.FilledHold) (uuid.UUID, bool) {
	if h.Kind != HoldKind {
		return uuid.Nil, false
	}
	rest, ok := strings.CutPrefix(h.Ref, "med:")
	if !ok {
		return uuid.Nil, false
	}
	report, _, _ := strings.Cut(rest, ":")
	id, err := uuid.Parse(report)
	return id, err == nil
}
