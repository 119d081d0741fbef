package med_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/internal/dict"
	"github.com/pixbank/pix/saga/med"
	"github.com/pixbank/pix/saga/sagatest"
)

// A PSP's notice about a PIX another PSP delivered to us (its credit's
// psp) is refused 403 med_notice_wrong_psp, nothing recorded: a PSP may
// not hold the funds of a PIX received through another. The PSP that
// delivered it is heard.
func TestAPSPNoticesOnlyThePIXItDelivered(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	a := f.notices(&sagatest.Signals{})
	c := f.credit(10_000, 0)
	tag, err := f.s.Pool().Exec(ctx, `UPDATE pix_credits SET psp = 'psp-2' WHERE end_to_end_id = $1`, c.EndToEndID)
	require.NoError(t, err)
	require.EqualValues(t, 1, tag.RowsAffected(), "the PIX's credit")
	in := report(c.EndToEndID, dict.ReportOpen, time.Now())
	status, got := post(t, a, reportsPath, reportNotice(in), pspKey) // signed by psp-1
	require.Equal(t, http.StatusForbidden, status, "%v", got)
	require.Equal(t, "med_notice_wrong_psp", sagatest.Code(got))
	found, err := f.store.OfPIX(ctx, c.EndToEndID, 10)
	require.NoError(t, err)
	require.Empty(t, found)

	_, err = f.s.Pool().Exec(ctx, `UPDATE pix_credits SET psp = 'psp-1' WHERE end_to_end_id = $1`, c.EndToEndID)
	require.NoError(t, err)
	status, got = post(t, a, reportsPath, reportNotice(in), pspKey)
	require.Equal(t, http.StatusAccepted, status, "%v", got)
}

// With the DICT, a notice that a report was CANCELLED is read back from
// the DICT before it is taken: the DICT's copy (still ACKNOWLEDGED) is
// recorded, and the hold stays; a DICT that confirms it cancels it.
func TestACancelNoticeIsConfirmedAtTheDICT(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	c, r := f.held(10_000, 0)
	d := newFakeDICT(r)
	a := f.noticesWith(&sagatest.Signals{}, d)
	in := report(c.EndToEndID, dict.ReportCancelled, time.Now())
	in.ID = r.ID.String()
	d.report = in
	d.report.Status, d.report.LastModified = dict.ReportAcknowledged, in.LastModified.Add(-time.Second)
	status, got := post(t, a, reportsPath, reportNotice(in), pspKey)
	require.Equal(t, http.StatusAccepted, status, "%v", got)
	r, err := f.store.Get(ctx, r.ID)
	require.NoError(t, err)
	require.Equal(t, string(dict.ReportAcknowledged), r.DICTStatus, "the DICT's word, not the notice's")
	require.False(t, r.Cancelled())
	require.Contains(t, d.ops, "getInfractionReport")

	d.report.Status, d.report.LastModified = dict.ReportCancelled, in.LastModified.Add(time.Second)
	status, got = post(t, a, reportsPath, reportNotice(in), pspKey)
	require.Equal(t, http.StatusAccepted, status, "%v", got)
	r, err = f.store.Get(ctx, r.ID)
	require.NoError(t, err)
	require.True(t, r.Cancelled(), "confirmed at the DICT")
}

// With the DICT, a PSP's notice is a wake-up, never the DICT's word: a
// refund request noticed that the DICT does not have is refused 422
// med_notice_not_at_dict and returns nothing (the report takes no request,
// its return does nothing, the money stays held); a report noticed that
// the DICT does not have holds nothing; a request the DICT has is taken as
// the DICT has it (its amount), not as noticed.
func TestWithTheDICTANoticeMovesNoMoneyTheDICTDoesNotConfirm(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	c, r := f.agreed(10_000, 0)
	d := newFakeDICT(r)
	a := f.noticesWith(&sagatest.Signals{}, d)

	forged := request(r, 10_000, dict.RefundOpen)
	status, got := post(t, a, refundsPath, refundNotice(forged), pspKey)
	require.Equal(t, http.StatusUnprocessableEntity, status, "%v", got)
	require.Equal(t, "med_notice_not_at_dict", sagatest.Code(got))
	require.Contains(t, d.ops, "getRefund")
	r, err := f.store.Get(ctx, r.ID)
	require.NoError(t, err)
	require.Nil(t, r.RefundRequestID, "no request taken on the notice's word")
	out, changed, err := f.store.Return(ctx, r)
	require.NoError(t, err)
	require.False(t, changed, "nothing to return")
	require.Equal(t, med.StatusAwaitingRequest, out.Status)
	f.requireMoney(c.AccountID, 10_000, 10_000)

	other := f.credit(7_000, 0)
	d.refuseNext = notFound()
	status, got = post(t, a, reportsPath, reportNotice(report(other.EndToEndID, dict.ReportOpen, time.Now())), pspKey)
	require.Equal(t, http.StatusUnprocessableEntity, status, "%v", got)
	require.Equal(t, "med_notice_not_at_dict", sagatest.Code(got))
	found, err := f.store.OfPIX(ctx, other.EndToEndID, 10)
	require.NoError(t, err)
	require.Empty(t, found, "no report, no hold")

	real := request(r, 4_000, dict.RefundOpen)
	real.LastModified = time.Now()
	d.refunds[real.ID] = real
	noticed := real
	noticed.RefundAmount = 10_000
	status, got = post(t, a, refundsPath, refundNotice(noticed), pspKey)
	require.Equal(t, http.StatusAccepted, status, "%v", got)
	r, err = f.store.Get(ctx, r.ID)
	require.NoError(t, err)
	require.Equal(t, real.ID, r.RefundRequestID.String())
	require.EqualValues(t, 4_000, *r.RefundRequestCents, "the DICT's amount, not the notice's")
}

// With the DICT, a PSP's notice that cancels a refund request the DICT
// still has OPEN (forged, or mistaken) is read back and changes nothing:
// the report's request stays OPEN as the DICT has it, and a later copy
// from the DICT's list still finds it open.
func TestWithTheDICTACancelNoticeOfAnOpenRequestLeavesItOpen(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	_, r := f.agreed(10_000, 0)
	d := newFakeDICT(r)
	a := f.noticesWith(&sagatest.Signals{}, d)
	open := request(r, 10_000, dict.RefundOpen)
	open.LastModified = time.Now().Add(-time.Minute)
	d.refunds[open.ID] = open
	r = f.step(f.store.IntakeRefund(ctx, open))
	require.True(t, r.RequestOpen())

	forged := open
	forged.Status = dict.RefundCancelled
	n := with(refundNotice(forged), "Refund", "LastModified", time.Now().Add(4*time.Minute).UTC().Format(time.RFC3339Nano))
	status, body := post(t, a, refundsPath, n, pspKey)
	require.Equal(t, http.StatusAccepted, status, "%v", body)
	require.Contains(t, d.ops, "getRefund")
	r, err := f.store.Get(ctx, r.ID)
	require.NoError(t, err)
	require.True(t, r.RequestOpen(), "cancelled on a PSP's word")
	require.Equal(t, med.StepReturn, med.Next(r, time.Now()))
}
