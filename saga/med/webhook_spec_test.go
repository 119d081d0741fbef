package med_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/api"
	"github.com/pixbank/pix/internal/dict"
	"github.com/pixbank/pix/saga/med"
	"github.com/pixbank/pix/saga/sagatest"
)

// The PSP's notices carry the specification's enumerations and
// date-times (dict-api.yaml) or are refused 400 before the door: a
// ReportedBy, RefundReason, refund AnalysisResult or RefundRejectionReason
// of no DICT, a RefundTransactionId that is no EndToEndId, a date-time
// time.Parse would take and RFC 3339 does not, a LastModified in the
// future (it would stand above every true modification).
func TestPSPNoticesTakeOnlyTheSpecsValues(t *testing.T) {
	f := newFixture(t)
	a := f.notices(&sagatest.Signals{})
	c := f.credit(10_000, 0)
	good := reportNotice(report(c.EndToEndID, dict.ReportOpen, time.Now()))
	const el = "InfractionReport"
	future := time.Now().Add(med.MaxClockAhead + time.Minute).UTC().Format(time.RFC3339Nano)
	for name, body := range map[string]any{
		"a ReportedBy of no DICT":         with(good, el, "ReportedBy", "SOMEONE"),
		"a LastModified in the future":    with(good, el, "LastModified", future),
		"a date-time with a comma":        with(good, el, "CreationTime", "2026-11-29T12:00:00,5Z"),
		"a date-time offset of 24 hours":  with(good, el, "CreationTime", "2026-11-29T12:00:00+24:00"),
		"a date-time without its seconds": with(good, el, "CreationTime", "2026-11-29T12:00Z"),
	} {
		status, got := post(t, a, reportsPath, body, pspKey)
		require.Equal(t, http.StatusBadRequest, status, "%s: %v", name, got)
		require.Equal(t, api.CodeInvalidRequest, sagatest.Code(got), name)
	}
	goodRefund := refundNotice(dict.Refund{ID: uuid.NewString(), TransactionID: c.EndToEndID, RefundReason: dict.RefundFraud,
		RefundAmount: 10_000, Status: dict.RefundOpen, InfractionReportID: uuid.NewString()})
	for name, body := range map[string]any{
		"a RefundReason of no DICT":           with(goodRefund, "Refund", "RefundReason", "GREED"),
		"a report's AnalysisResult":           with(goodRefund, "Refund", "AnalysisResult", "AGREED"),
		"a RefundRejectionReason of no DICT":  with(goodRefund, "Refund", "RefundRejectionReason", "BROKE"),
		"a RefundTransactionId too short":     with(goodRefund, "Refund", "RefundTransactionId", "D1234"),
		"a RefundTransactionId with a hyphen": with(goodRefund, "Refund", "RefundTransactionId", "D12345678202612061200-aaaaaaaaaa"),
		"a LastModified in the future":        with(goodRefund, "Refund", "LastModified", future),
	} {
		status, got := post(t, a, refundsPath, body, pspKey)
		require.Equal(t, http.StatusBadRequest, status, "%s: %v", name, got)
		require.Equal(t, api.CodeInvalidRequest, sagatest.Code(got), name)
	}
	// The controls: the spec's values pass to the door (the report unknown).
	closed := with(with(with(goodRefund, "Refund", "Status", "CLOSED"), "Refund", "AnalysisResult", "REJECTED"),
		"Refund", "RefundRejectionReason", "NO_BALANCE")
	closed = with(closed, "Refund", "RefundTransactionId", "D12345678202612061200aaaaaaaaaaa")
	status, got := post(t, a, refundsPath, closed, pspKey)
	require.Equal(t, http.StatusNotFound, status, "%v", got)
	status, got = post(t, a, reportsPath, with(good, el, "LastModified", time.Now().Add(time.Minute).UTC().Format(time.RFC3339Nano)), pspKey)
	require.Equal(t, http.StatusAccepted, status, "a clock a little ahead: %v", got)
}
