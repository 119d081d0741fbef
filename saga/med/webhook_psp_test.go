package med_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/internal/dict"
	"github.com/pixbank/pix/saga/sagatest"
)

// A PSP's notice about a PIX another PSP delivered to us is refused 403
// med_notice_wrong_psp, nothing recorded: a PSP may not hold the funds of
// a PIX received through another. The PSP that delivered it is heard.
func TestAPSPNoticesOnlyThePIXItDelivered(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	a := f.notices(&sagatest.Signals{})
	c := f.credit(10_000, 0)
	tag, err := f.s.Pool().Exec(ctx, `UPDATE inbox_messages SET psp = 'psp-2' WHERE end_to_end_id = $1`, c.EndToEndID)
	require.NoError(t, err)
	require.EqualValues(t, 1, tag.RowsAffected(), "the PIX's inbox row")
	in := report(c.EndToEndID, dict.ReportOpen, time.Now())
	status, got := post(t, a, reportsPath, reportNotice(in), pspKey) // signed by psp-1
	require.Equal(t, http.StatusForbidden, status, "%v", got)
	require.Equal(t, "med_notice_wrong_psp", sagatest.Code(got))
	found, err := f.store.OfPIX(ctx, c.EndToEndID, 10)
	require.NoError(t, err)
	require.Empty(t, found)

	_, err = f.s.Pool().Exec(ctx, `UPDATE inbox_messages SET psp = 'psp-1' WHERE end_to_end_id = $1`, c.EndToEndID)
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
