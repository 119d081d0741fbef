package med_test

import (
	"bytes"
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/internal/dict"
	"github.com/pixbank/pix/saga/med"
)

// A report whose request was CLOSED REJECTED outside the run ends with its
// own cause, rejected_at_dict, not released (the 72 hours' or return_until's
// end): counted by pix_med_reports_ended_total{cause="rejected_at_dict"}
// and logged with its end_to_end_id and end cause (review r21 MED-3: it
// ended released, told apart from an expiry by nothing). Seen failing
// before: "released".
func TestARequestRejectedOutsideEndsRejectedAtTheDICT(t *testing.T) {
	f := newFixture(t)
	_, r := f.nothingReturned()
	r = f.rejectedOutside(r)
	var logged bytes.Buffer
	a := newActivityRun(t, f, r)
	a.acts.Log = slog.New(slog.NewTextHandler(&logged, nil))
	r, err := a.run(a.acts.CloseRefundRequest, r)
	require.NoError(t, err)

	counted := med.EndedTotal.WithLabelValues(med.EndRejectedAtDICT)
	before := testutil.ToFloat64(counted)
	out, err := a.run(a.acts.FinishReport, r)
	require.NoError(t, err)
	require.Equal(t, med.StatusEnded, out.Status)
	require.Equal(t, med.EndRejectedAtDICT, *out.EndCause)
	require.True(t, time.Now().Before(*out.ReturnUntil), "before return_until")
	require.Equal(t, before+1, testutil.ToFloat64(counted), "counted by its cause")
	require.Contains(t, logged.String(), "end_to_end_id="+r.EndToEndID)
	require.Contains(t, logged.String(), "end_cause=rejected_at_dict")
}

// Directly at the DICT, nothing returned by return_until: our close
// REJECTED NO_BALANCE marked sent, its answer lost, and the DICT's copy of
// the request CLOSED REJECTED with reason OTHER taken in (another closed
// it: ours is never OTHER). The close is recorded from the copy (no DICT
// write), the DICT's reason kept on the row, and the report ends
// rejected_at_dict, not as if our close had closed it (review r21 LOW-6: a
// copy REJECTED OTHER was recorded as our close, no reason kept). The
// copy with our reason is ours: released, as the deadline ends it. Seen
// failing before (no reason kept; "released").
func TestARejectedCopyWithAnotherReasonThanOursIsNotOurClose(t *testing.T) {
	for _, c := range []struct {
		reason dict.RefundRejectionReason
		cause  string
	}{{dict.RejectionOther, med.EndRejectedAtDICT}, {dict.RejectionNoBalance, med.EndReleased}} {
		t.Run(string(c.reason), func(t *testing.T) {
			f := newFixture(t)
			ctx := context.Background()
			_, late, closed := f.rejectedAfterOurCloseMarked(c.reason)
			r := f.step(f.store.IntakeRefund(ctx, closed))
			require.Equal(t, string(c.reason), *f.get(r).RefundRequestDICTReason, "the DICT's reason kept")

			a := newActivityRun(t, f, r)
			a.acts.Store = late
			r, err := a.run(a.acts.CloseRefundRequest, r)
			require.NoError(t, err)
			require.NotNil(t, r.RefundClosedAt)
			requireNoDICTWrite(t, a)
			out := f.step(late.Finish(ctx, r))
			require.Equal(t, med.StatusEnded, out.Status)
			require.Equal(t, c.cause, *out.EndCause)
		})
	}
}

// Every end cause the saga writes is one the table's check takes
// (pix_med_reports_end_cause_check): a cause added without its migration,
// or a migration that drops one, would fail the report's end for good.
func TestEveryEndCauseIsOneTheTableTakes(t *testing.T) {
	f := newFixture(t)
	var def string
	require.NoError(t, f.s.Pool().QueryRow(context.Background(),
		`SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conname = 'pix_med_reports_end_cause_check'`).Scan(&def))
	for _, cause := range med.EndCauses {
		require.Contains(t, def, "'"+cause+"'", "end cause %s", cause)
	}
}
