package med_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/internal/dict"
	"github.com/pixbank/pix/saga/med"
)

// The 72 h expiry finds its report's request in the DICT's list whatever
// the case of the report's id there: compared as UUIDs, an id in capitals
// is the report's, and the request is taken instead of the hold released.
func TestTheExpiryFindsTheRequestWhateverTheIDsCase(t *testing.T) {
	f := newFixture(t)
	_, r := f.agreed(10_000, 0)
	a := newActivityRun(t, f, r)
	req := request(r, 10_000, dict.RefundOpen)
	req.InfractionReportID = strings.ToUpper(req.InfractionReportID)
	a.dict.refunds[req.ID] = req
	a.acts.Store = f.store.WithClock(func() time.Time { return r.RequestDueAt.Add(med.ExpiryCovered) })
	out, err := a.run(a.acts.ExpireRequest, r)
	require.NoError(t, err)
	require.NotEqual(t, med.StatusEnded, out.Status, "released while its request is OPEN")
	require.NotNil(t, out.RefundRequestID)
	require.Equal(t, req.ID, out.RefundRequestID.String())
	require.True(t, dict.SameID(req.InfractionReportID, r.ID.String()))
	require.False(t, dict.SameID("not-a-uuid", "not-a-uuid"), "only UUIDs are the same")
}
