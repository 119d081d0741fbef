package med_test

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/internal/dict"
	"github.com/pixbank/pix/saga"
	"github.com/pixbank/pix/saga/covered"
	"github.com/pixbank/pix/saga/med"
	"github.com/pixbank/pix/saga/sagatest"
)

// The on-call's gauges, registered as pixd registers the saga's
// (its Collectors), read from PostgreSQL at each scrape: the open reports
// by age since the DICT created them, the refund requests left
// unanswered, and beside them the centavos held.
func TestTheOnCallsGaugesReadTheOpenReports(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	env := saga.Env{Store: f.s, Log: sagatest.Discard(), Process: saga.NewProcess()}
	reg := sagatest.Registry(t, med.Saga.Collectors(env))
	const byAge = "pix_med_reports_open_by_age"
	for _, age := range []string{"under_24h", "24h_to_6d", "6d_to_7d", "over_7d"} {
		require.Zero(t, sagatest.Value(t, reg, byAge, "age", age), age)
	}

	for _, created := range []time.Duration{time.Hour, 3 * 24 * time.Hour, 6*24*time.Hour + time.Hour, 8 * 24 * time.Hour} {
		c := f.credit(1_000, 0)
		f.intake(report(c.EndToEndID, dict.ReportOpen, time.Now().Add(-created)))
	}
	for _, age := range []string{"under_24h", "24h_to_6d", "6d_to_7d", "over_7d"} {
		require.Equal(t, 1.0, sagatest.Value(t, reg, byAge, "age", age), age)
	}
	require.Equal(t, 2.0, sagatest.Value(t, reg, "pix_med_analysis_due_soon"), "the 7th day's and the one past it")

	// A refund request on an agreed report: unanswered once nothing
	// changed on it for UnansweredAfter (here, at once).
	_, agreed := f.agreed(8_000, 0)
	_, changed, err := f.store.IntakeRefund(ctx, request(agreed, 8_000, dict.RefundOpen))
	require.NoError(t, err)
	require.True(t, changed)
	require.Zero(t, sagatest.Value(t, reg, "pix_med_refund_requests_unanswered"), "just received")
	counts, err := f.store.Ages(ctx, 0)
	require.NoError(t, err)
	require.EqualValues(t, 1, counts.Unanswered, "nothing changed on it since")
	require.Zero(t, sagatest.Value(t, reg, "pix_med_reports_returning"))
	require.Zero(t, sagatest.Value(t, reg, "pix_med_returned_cents"))
	require.Equal(t, 8_000.0, sagatest.Value(t, reg, "pix_med_held_cents"), "the agreed report's hold; the others held nothing yet")
}

// refusingDICT refuses every write as the DICT refuses a signature it
// does not accept.
type refusingDICT struct{ med.DICT }

var errSignature = fmt.Errorf("close: %w", dict.ErrRequestSignatureInvalid)

func (refusingDICT) CloseInfractionReport(context.Context, string, dict.AnalysisResult, string) (dict.InfractionReport, error) {
	return dict.InfractionReport{}, errSignature
}

func (refusingDICT) CloseRefund(context.Context, string, dict.RefundClosing) (dict.Refund, error) {
	return dict.Refund{}, errSignature
}

func (refusingDICT) AcknowledgeInfractionReport(context.Context, string) (dict.InfractionReport, error) {
	return dict.InfractionReport{}, fmt.Errorf("acknowledge: %w", dict.ErrInfractionReportOperationInvalid)
}

// Every write the DICT refuses for its signature is counted, whichever
// the write; another refusal is not.
func TestTheDICTsRefusalsOfOurSignatureAreCounted(t *testing.T) {
	reg := sagatest.Registry(t, []prometheus.Collector{med.SignatureRefusals})
	d := med.CountSignatureRefusals(refusingDICT{})
	before := sagatest.Value(t, reg, "pix_med_dict_signature_refused_total")
	_, err := d.CloseInfractionReport(context.Background(), "r", dict.Agreed, "")
	require.ErrorIs(t, err, dict.ErrRequestSignatureInvalid)
	_, err = d.CloseRefund(context.Background(), "q", dict.RefundClosing{})
	require.ErrorIs(t, err, dict.ErrRequestSignatureInvalid)
	_, err = d.AcknowledgeInfractionReport(context.Background(), "r")
	require.ErrorIs(t, err, dict.ErrInfractionReportOperationInvalid)
	require.Equal(t, before+2, sagatest.Value(t, reg, "pix_med_dict_signature_refused_total"))
}

// The lister's lag, read from PostgreSQL at each scrape: +Inf before any
// window was covered, then how far the covered end is behind the
// database's clock; its interval beside it, which the alert compares it
// to, 0 when no Schedule lists the DICT.
func TestTheListersLagIsReadAtEachScrape(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	env := saga.Env{Store: f.s, Log: sagatest.Discard(), Process: saga.NewProcess(), Lookup: func(k string) (string, bool) {
		v, ok := map[string]string{"MED_DICT_URL": "https://dict.example:16422/api/v1", "MED_DICT_LIST_INTERVAL": "2m"}[k]
		return v, ok
	}}
	reg := sagatest.Registry(t, med.Saga.Collectors(env))
	require.True(t, math.IsInf(sagatest.Value(t, reg, "pix_med_dict_lister_behind_seconds"), 1), "none covered yet")
	require.Equal(t, 120.0, sagatest.Value(t, reg, "pix_med_dict_lister_interval_seconds"))

	store := covered.NewStore(f.s, med.ListerName)
	now, err := store.Now(ctx)
	require.NoError(t, err)
	moved, err := store.Advance(ctx, nil, now.Add(-time.Hour))
	require.NoError(t, err)
	require.True(t, moved)
	behind := sagatest.Value(t, reg, "pix_med_dict_lister_behind_seconds")
	require.InDelta(t, 3600, behind, 60, "an hour behind: %v", behind)

	off := sagatest.Registry(t, med.Saga.Collectors(saga.Env{Store: f.s, Log: sagatest.Discard(), Process: saga.NewProcess()}))
	require.Zero(t, sagatest.Value(t, off, "pix_med_dict_lister_interval_seconds"), "MED without the DICT lists nothing")
	require.InDelta(t, 3600, sagatest.Value(t, off, "pix_med_dict_lister_behind_seconds"), 60)
}

// The 7 days are the DICT's close, not our analysis (issue 37, the third
// review's Low/Medium): a report analysed whose close is not done at the
// DICT (stopped there, or not sent yet) is still due, until it is closed.
func TestAnAnalysedReportNotClosedIsStillDue(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	c := f.credit(1_000, 0)
	r := f.intake(report(c.EndToEndID, dict.ReportOpen, time.Now().Add(-(6*24*time.Hour + time.Hour))))
	r = f.step(f.store.Hold(ctx, r))
	r = f.step(f.store.Acknowledged(ctx, r, dict.InfractionReport{}))
	r = f.step(f.store.Analyse(ctx, r.ID, dict.Agreed, "fraude confirmada", "operator-1"))
	require.Equal(t, med.StatusAnalysed, r.Status)
	r = f.step(f.store.NoteProblem(ctx, r, "close refused"))
	got, err := f.store.Open(ctx, med.AnalysisAlertBefore)
	require.NoError(t, err)
	require.EqualValues(t, 1, got.AnalysisDueSoon, "analysed, not closed at the DICT")
	f.step(f.store.Closed(ctx, r, dict.InfractionReport{}))
	got, err = f.store.Open(ctx, med.AnalysisAlertBefore)
	require.NoError(t, err)
	require.Zero(t, got.AnalysisDueSoon, "closed at the DICT")
}
