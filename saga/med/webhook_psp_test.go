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
