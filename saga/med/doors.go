package med

import (
	"context"
	"log/slog"
	"time"

	"github.com/pixbank/pix/internal/dict"
	"github.com/pixbank/pix/saga/sagakit"
)

// Doors are the saga's doors as its receivers call them (the DICT's
// lister, the PSP's webhook): the store's intake, then, once it committed
// a change, the report's run signalled (ChangedSignal), as the analysis
// route does. The durable start only starts a run that is not open: an
// open run waiting on its timer (the 72 hours of a refund request, the
// day's re-read of an analysis awaited) would see a request or a cancel
// only at its deadline. A run that does not exist is not signalled (no
// error): the durable start is the net, and a run reads its report at its
// start.
type Doors struct {
	Store    *Store
	Temporal sagakit.Signaller
	Log      *slog.Logger
}

// Intake is the one door of an infraction report (Store.intake), the run
// woken after a change.
func (d *Doors) Intake(ctx context.Context, in dict.InfractionReport) (Report, bool, error) {
	r, changed, err := d.Store.intake(ctx, in)
	d.wake(ctx, r, changed && err == nil)
	return r, changed, err
}

// IntakeRefund is Store.IntakeRefund, the run woken after a change. A
// request its report takes again after it ended is logged (WARN: a new run
// returns it); one no report answers, ERROR (on-call's:
// PixMEDRefundRequestNotTaken); a CLOSED result against our recorded close
// (RequestContradicted), ERROR, whether the report is open or ended (an
// ended one's dict_problem no gauge counts). Its bool says the notice recorded
// something: its report changed, or the request kept on its own recorded
// (its first delivery, or its status moved), which is no duplicate.
func (d *Doors) IntakeRefund(ctx context.Context, in dict.Refund) (Report, bool, error) {
	r, changed, outcome, err := d.Store.intakeRefund(ctx, in)
	attrs := append(attrsOf(r), "refund_request_id", in.ID, "refund_request_status", in.Status,
		"refund_amount_cents", int64(in.RefundAmount))
	switch {
	case err != nil:
	case outcome == RequestReopened:
		d.Log.WarnContext(ctx, "refund request after its report ended: the report takes it again", attrs...)
	case outcome == RequestUnanswered:
		d.Log.ErrorContext(ctx, "refund request no report answers: recorded in pix_med_refund_requests, on-call's", attrs...)
	case outcome == RequestContradicted:
		d.Log.ErrorContext(ctx, "refund request CLOSED at the DICT otherwise than recorded: noted dict_not_as_ours, an operator's",
			append(attrs, "refund_request_dict_result", in.AnalysisResult, "refund_request_modified_at", in.LastModified,
				"refund_closed_rtr_id", deref(r.RefundClosedRtrID),
				"report_open", r.Open())...)
	}
	d.wake(ctx, r, changed && err == nil)
	return r, changed || outcome == RequestUnanswered, err
}

// wake signals r's run when the intake changed r (committed already).
func (d *Doors) wake(ctx context.Context, r Report, changed bool) {
	if !changed || !r.Open() {
		// Nothing to read again, or no run to tell: a report not ours
		// has none, an ended one's run ended with it.
		return
	}
	sagakit.Wake(ctx, d.Temporal, d.Log, WorkflowID(r.ID.String()), ChangedSignal,
		"infraction report changed, its run not woken: it reads the report at its next deadline", "report_id", r.ID)
}

// Quarantine is Store.Quarantine: the lister's record of an item its
// doors refuse (Lister.Quarantine).
func (d *Doors) Quarantine(ctx context.Context, q Quarantined) (bool, error) {
	return d.Store.Quarantine(ctx, q)
}

// ClearQuarantined is Store.ClearQuarantined, the lister's clear of an
// item taken in, the runs stopped on a copy it cleared signalled after
// its commit (wakeStopped). cleared is how many rows went.
func (d *Doors) ClearQuarantined(ctx context.Context, kind, id string, through time.Time) (cleared int64, err error) {
	c, err := d.Store.ClearQuarantined(ctx, kind, id, through)
	if err != nil {
		return 0, err
	}
	wakeStopped(ctx, d.Temporal, d.Log, kind, id, c)
	return int64(len(c.Rows)), nil
}

// CreditPSP is Store.CreditPSP.
func (d *Doors) CreditPSP(ctx context.Context, endToEndID string) (string, error) {
	return d.Store.CreditPSP(ctx, endToEndID)
}
