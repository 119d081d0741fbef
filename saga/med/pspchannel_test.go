package med_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/internal/dict"
	"github.com/pixbank/pix/internal/tooling/pspsim"
	"github.com/pixbank/pix/internal/webhooksig"
	"github.com/pixbank/pix/saga/med"
	"github.com/pixbank/pix/saga/sagatest"
)

// control calls a control route of the PSP simulator and returns its
// answer: the report as the PSP holds it, and how its notice went.
func control(t *testing.T, base, path string, body any) (int, map[string]any) {
	t.Helper()
	b, err := json.Marshal(body)
	require.NoError(t, err)
	res, err := http.Post(base+path, "application/json", bytes.NewReader(b))
	require.NoError(t, err)
	defer res.Body.Close()
	var out map[string]any
	dec := json.NewDecoder(res.Body)
	dec.UseNumber() // the DICT's RefundAmount as it was written
	require.NoError(t, dec.Decode(&out))
	return res.StatusCode, out
}

// The PSP simulator drives MED through the PSP channel: a report about a
// PIX we credited, noticed signed to the bank's route, is one report
// whose run would hold the money; noticed again, absorbed; closed through
// the PSP's channel, then a refund request, each taken by the saga's door.
func TestThePSPSimulatorDrivesMEDThroughThePSPChannel(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	sig := &sagatest.Signals{}
	bank := f.notices(sig)
	sim := pspsim.New(pspsim.Options{MEDWebhookURL: bank.URL + "/webhooks/med", WebhookSecret: webhooksig.FormatSecret(pspKey)})
	psp := httptest.NewServer(sim.Handler())
	t.Cleanup(psp.Close)
	c := f.credit(10_000, 0)

	status, opened := control(t, psp.URL, "/sim/med/reports", map[string]any{"end_to_end_id": c.EndToEndID, "details": "golpe"})
	require.Equal(t, http.StatusCreated, status, "%v", opened)
	require.Equal(t, "delivered", opened["delivery"])
	id := opened["InfractionReport"].(map[string]any)["Id"].(string)
	r, err := f.store.Get(ctx, uuid.MustParse(id))
	require.NoError(t, err)
	require.Equal(t, med.StatusReceived, r.Status)
	require.Equal(t, string(dict.ReportAcknowledged), r.DICTStatus, "the PSP acknowledged it as the participant")

	status, again := control(t, psp.URL, "/sim/med/reports/"+id+"/notify", nil)
	require.Equal(t, http.StatusOK, status, "%v", again)
	require.Equal(t, "delivered", again["delivery"])
	status, early := control(t, psp.URL, "/sim/med/reports/"+id+"/refund", map[string]any{})
	require.Equal(t, http.StatusConflict, status, "no refund request before the report is closed AGREED: %v", early)

	// The bank's saga holds, takes the PSP's acknowledgement and the
	// operator's analysis, and closes (the steps med's own tests drive);
	// the close made through the PSP's channel comes back as its notice.
	r = f.step(f.store.Hold(ctx, r))
	r = f.step(f.store.Acknowledged(ctx, r, dict.InfractionReport{Status: dict.ReportAcknowledged}))
	f.step(f.store.Analyse(ctx, r.ID, dict.Agreed, "fraude confirmada", "operator-1"))
	r, err = f.store.Get(ctx, r.ID)
	require.NoError(t, err)
	f.step(f.store.Closed(ctx, r, dict.InfractionReport{}))
	status, closed := control(t, psp.URL, "/sim/med/reports/"+id+"/close", map[string]any{"result": "AGREED"})
	require.Equal(t, http.StatusOK, status, "%v", closed)
	require.Equal(t, "delivered", closed["delivery"])
	r, err = f.store.Get(ctx, r.ID)
	require.NoError(t, err)
	require.Equal(t, string(dict.ReportClosed), r.DICTStatus)

	status, requested := control(t, psp.URL, "/sim/med/reports/"+id+"/refund", map[string]any{"amount_cents": 10_000})
	require.Equal(t, http.StatusOK, status, "%v", requested)
	require.Equal(t, "delivered", requested["delivery"])
	require.Equal(t, "100.00", requested["Refund"].(map[string]any)["RefundAmount"].(json.Number).String())
	r, err = f.store.Get(ctx, r.ID)
	require.NoError(t, err)
	require.EqualValues(t, 10_000, *r.RefundRequestCents)
	require.Equal(t, requested["Refund"].(map[string]any)["Id"], r.RefundRequestID.String())
	found, err := f.store.OfPIX(ctx, c.EndToEndID, 10)
	require.NoError(t, err)
	require.Len(t, found, 1, "one report, whatever was noticed twice")
	woken := "pix-med:" + id + " changed"
	require.Equal(t, []string{woken, woken, woken}, sig.Sent(), "the run woken at the report, its close and the request, not at the copy")
}
