package med_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/internal/dict"
	"github.com/pixbank/pix/saga/med"
)

// A report our own side made (ReportedBy CREDITED_PARTICIPANT), a
// REFUND_CANCELLED, or one naming another credited participant, is not
// ours to analyse: recorded not_ours, visibly, holding nothing, and not
// made ours by a later intake; a fraud the payer's participant reports
// against us is held.
func TestOnlyAReportAgainstUsIsHeld(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	store := f.store.WithParticipant("12345678")
	for name, change := range map[string]func(*dict.InfractionReport){
		"reported by our side": func(in *dict.InfractionReport) {
			in.ReportedBy, in.InfractionType = dict.ReportedByCredited, dict.InfractionRefundCancelled
		},
		"a fraud reported by our side": func(in *dict.InfractionReport) { in.ReportedBy = dict.ReportedByCredited },
		"a refund's cancel":            func(in *dict.InfractionReport) { in.InfractionType = dict.InfractionRefundCancelled },
		"another credited participant": func(in *dict.InfractionReport) { in.CreditedParticipant = "87654321" },
	} {
		c := f.credit(10_000, 0)
		in := report(c.EndToEndID, dict.ReportOpen, time.Now().Add(-time.Hour))
		change(&in)
		r, changed, err := doorsOf(store).Intake(ctx, in)
		require.NoError(t, err, name)
		require.True(t, changed, name)
		require.Equal(t, med.StatusNotOurs, r.Status, name)
		r, _, err = store.Hold(ctx, r)
		require.NoError(t, err, name)
		require.Zero(t, r.HeldCents, "%s: held our customer's money", name)
		in.Status, in.LastModified = dict.ReportAcknowledged, in.LastModified.Add(time.Minute)
		r, _, err = doorsOf(store).Intake(ctx, in)
		require.NoError(t, err, name)
		require.Equal(t, med.StatusNotOurs, r.Status, "%s: made ours at its next intake", name)
		f.requireMoney(c.AccountID, 10_000, 0)
	}
	c := f.credit(10_000, 0)
	for _, kind := range []dict.InfractionType{dict.InfractionFraud, dict.InfractionRefundRequest} {
		in := report(c.EndToEndID, dict.ReportOpen, time.Now().Add(-time.Hour))
		in.InfractionType = kind
		r, _, err := doorsOf(store).Intake(ctx, in)
		require.NoError(t, err)
		require.Equal(t, med.StatusReceived, r.Status, kind)
	}
}
