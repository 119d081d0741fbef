package pspsimtests_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// medControl calls a MED control route and returns the report's id and
// the answer.
func (e *env) medControl(t *testing.T, path, body string, want int) map[string]any {
	t.Helper()
	code, resp := do(t, http.MethodPost, e.url+path, body)
	require.Equal(t, want, code, "%s", resp)
	var out map[string]any
	require.NoError(t, json.Unmarshal(resp, &out))
	return out
}

// The natureza of a devolução is the API Pix's: a request asks ORIGINAL or
// RETIRADA only (MED_FRAUDE refused, 400 PixDevolucaoInvalida); an answer
// carries the SPI's natureza of a return within MED (MED_FRAUDE) while a
// refund request for fraud is open on the PIX, and ORIGINAL again once it
// is closed. Every answer is checked against the document (checked).
func TestADevolucaoWithinMEDIsAnsweredMEDFraude(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.receive(t, receivedAt(40, e.clock.Now(), ""))
	opened := e.medControl(t, "/sim/med/reports", `{"end_to_end_id":"`+pixID(40)+`"}`, http.StatusCreated)
	require.Equal(t, "", opened["delivery"], "no MEDWebhookURL: nothing noticed")
	id := opened["InfractionReport"].(map[string]any)["Id"].(string)
	e.medControl(t, "/sim/med/reports/"+id+"/refund", `{}`, http.StatusConflict)
	e.medControl(t, "/sim/med/reports/"+id+"/close", `{"result":"AGREED","details":"fraude"}`, http.StatusOK)
	requested := e.medControl(t, "/sim/med/reports/"+id+"/refund", `{}`, http.StatusOK)
	require.EqualValues(t, 10, requested["Refund"].(map[string]any)["RefundAmount"], "the PIX's amount, the DICT's reais")

	code, body, err := putRefund(t, refundURL(e.url, 40, "med1"), `{"valor":"4.00","natureza":"MED_FRAUDE"}`)
	require.NoError(t, err)
	require.Equal(t, http.StatusBadRequest, code, "a request's natureza is ORIGINAL or RETIRADA: %s", body)
	code, body, err = putRefund(t, refundURL(e.url, 40, "med1"), `{"valor":"4.00","natureza":"ORIGINAL","descricao":"MED: devolução"}`)
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, code, "%s", body)
	require.Contains(t, string(body), `"natureza":"MED_FRAUDE"`)
	code, body, err = putRefund(t, refundURL(e.url, 40, "med1"), `{"valor":"4.00","natureza":"ORIGINAL","descricao":"MED: devolução"}`)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, code, "the same request again is a replay, whatever its answer's natureza: %s", body)
	require.Equal(t, "MED_FRAUDE", e.refund(t, 40, "med1").Nature)

	e.medControl(t, "/sim/med/reports/"+id+"/refund/close", `{"result":"PARTIALLY_ACCEPTED","refund_transaction_id":"`+e.refund(t, 40, "med1").RtrID+`"}`, http.StatusOK)
	code, body, err = putRefund(t, refundURL(e.url, 40, "dev2"), `{"valor":"1.00"}`)
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, code, "%s", body)
	require.Contains(t, string(body), `"natureza":"ORIGINAL"`, "no MED request open: the natureza asked")
}
