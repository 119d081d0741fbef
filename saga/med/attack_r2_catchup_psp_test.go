package med_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/saga/sagatest"
)

// Attack r2 (issue MED-2): an API process that authenticates only psp-2
// (split by PSP) has CatchUpPSP = its sole PSP, psp-2 (config.CatchUpPSP:
// PSP_NAME=psp-1 is refused there, none of its PSPs). A PIX the worker's
// catch-up (at psp-1) stored first and had not credited yet was then
// psp-2's to CreditPSP: psp-2's notice about psp-1's PIX passed the fence
// (202). Such a PIX has no PSP on record until its credit records one:
// 503 med_notice_psp_unknown, which the PSP delivers again.
func TestACatchUpPIXNotCreditedYetHasNoPSPOnRecord(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	e2e := f.storeListed()
	f.s.SetCatchUpPSP("psp-2") // the API process of psp-2: its sole PSP

	a := f.notices(&sagatest.Signals{})
	status, code := noticeFrom(t, a, e2e, otherPSPKey)
	t.Logf("psp-2's notice about the catch-up's (psp-1's) PIX, not credited yet: %d %s", status, code)
	require.Equal(t, http.StatusServiceUnavailable, status, "psp-2 may not take a report of a PIX it did not deliver")
	require.Equal(t, "med_notice_psp_unknown", code)
	found, err := f.store.OfPIX(ctx, e2e, 10)
	require.NoError(t, err)
	require.Empty(t, found, "nothing recorded")
	status, code = noticeFrom(t, a, e2e, pspKey)
	require.Equal(t, http.StatusServiceUnavailable, status, "nor on psp-1's word before the credit records it: %s", code)
}
