package med_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/api"
	"github.com/pixbank/pix/internal/dict"
	"github.com/pixbank/pix/internal/webhooksig"
	"github.com/pixbank/pix/saga/med"
	"github.com/pixbank/pix/saga/sagatest"
)

// pspKey is the PSP's webhook signing key of these tests.
var pspKey = []byte("the psp's med notices key, 32 b.")

// otherPSPKey is the key of psp-2, another PSP the bank receives PIX
// through.
var otherPSPKey = []byte("another psp's med notices key..")

// notices serves the saga's PSP notices (its webhooks only) over f's
// store, signatures required, as pixd serves them with
// WEBHOOK_SIGNATURES_REQUIRED.
func (f *fixture) notices(sig *sagatest.Signals) *sagatest.API {
	return f.noticesWith(sig, nil)
}

// noticesWith are notices confirmed at the DICT d (MED with the DICT;
// nil: behind a PSP).
func (f *fixture) noticesWith(sig *sagatest.Signals, d med.NoticeDICT) *sagatest.API {
	n := &med.Notices{Store: &med.Doors{Store: f.store, Temporal: sig, Log: sagatest.Discard()}, Log: sagatest.Discard()}
	if d != nil {
		n.DICT = d
	}
	return sagatest.NewAPI(f.t, f.s, sagatest.Options{
		Sagas:  []api.SagaHTTP{{Webhooks: n.Webhooks()}},
		Routes: api.WebhookRoutes,
		Deps: api.Deps{RequireSignatures: true,
			Signatures: webhooksig.NewVerifier([]webhooksig.Secret{{PSP: "psp-1", Key: pspKey}, {PSP: "psp-2", Key: otherPSPKey}}, 0, nil)},
	})
}

// post sends body (a string as it is, else as JSON) to the notices' path,
// signed by key (nil: unsigned), and returns the answer's status and body.
func post(t *testing.T, a *sagatest.API, path string, body any, key []byte) (int, map[string]any) {
	t.Helper()
	raw, ok := body.(string)
	if !ok {
		b, err := json.Marshal(body)
		require.NoError(t, err)
		raw = string(b)
	}
	req, err := http.NewRequest(http.MethodPost, a.URL+path, strings.NewReader(raw))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	if key != nil {
		webhooksig.SetHeaders(req.Header, "msg_"+uuid.NewString(), time.Now(), []byte(raw), key)
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	var out map[string]any
	require.NoError(t, json.Unmarshal(b, &out), "%s", b)
	return res.StatusCode, out
}

const (
	reportsPath = "/webhooks/med/infraction-reports"
	refundsPath = "/webhooks/med/refunds"
)

// reportNotice is the PSP's notice of in: the DICT's InfractionReport as
// JSON, beside the DICT answer's own members.
func reportNotice(in dict.InfractionReport) map[string]any {
	r := map[string]any{"Id": in.ID, "TransactionId": in.TransactionID, "TransactionType": "SPI", "TransactionResult": "SETTLED",
		"InfractionType": in.InfractionType, "ReportedBy": in.ReportedBy, "ReportDetails": in.ReportDetails, "Status": in.Status,
		"DebitedParticipant": in.DebitedParticipant, "CreditedParticipant": in.CreditedParticipant,
		"CreationTime": in.CreationTime.Format(time.RFC3339Nano), "LastModified": in.LastModified.Format(time.RFC3339Nano)}
	return map[string]any{"ResponseTime": time.Now().UTC().Format(time.RFC3339Nano), "CorrelationId": strings.Repeat("a", 32),
		"InfractionReport": r}
}

// refundNotice is the PSP's notice of in, its amount the DICT's number of
// reais.
func refundNotice(in dict.Refund) map[string]any {
	amount, _ := in.RefundAmount.MarshalText()
	return map[string]any{"Refund": map[string]any{"Id": in.ID, "TransactionId": in.TransactionID, "RefundReason": in.RefundReason,
		"RefundAmount": json.Number(amount), "Status": in.Status, "RequestingParticipant": "99999999",
		"ContestedParticipant": "12345678", "CreationTime": time.Now().UTC().Format(time.RFC3339Nano),
		"LastModified": time.Now().UTC().Format(time.RFC3339Nano), "InfractionReportId": in.InfractionReportID}}
}

// with is m's element member changed: set to v, or removed (v nil).
func with(m map[string]any, element, member string, v any) map[string]any {
	out := map[string]any{}
	for k, x := range m {
		out[k] = x
	}
	e := map[string]any{}
	for k, x := range m[element].(map[string]any) {
		e[k] = x
	}
	if v == nil {
		delete(e, member)
	} else {
		e[member] = v
	}
	out[element] = e
	return out
}

// The PSP's notices reach the saga's one door: refused unsigned before
// anything is read; a report noticed is one row, whether it came by the
// PSP or by the DICT's lister first, and a redelivery is absorbed; a
// modification is taken; a report named with another PIX is refused; a
// refund request is taken once, and one of a report not received is
// refused.
func TestPSPNoticesReachTheOneDoor(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	sig := &sagatest.Signals{}
	a := f.notices(sig)
	c := f.credit(10_000, 0)
	in := report(c.EndToEndID, dict.ReportOpen, time.Now().Add(-time.Hour).Truncate(time.Millisecond))
	rows := func() int {
		found, err := f.store.OfPIX(ctx, c.EndToEndID, 10)
		require.NoError(t, err)
		return len(found)
	}

	status, got := post(t, a, reportsPath, reportNotice(in), nil)
	require.Equal(t, http.StatusUnauthorized, status, "%v", got)
	require.Equal(t, api.CodeSignatureMissing, sagatest.Code(got))
	status, got = post(t, a, reportsPath, reportNotice(in), []byte("a forger's key, 32 bytes long..."))
	require.Equal(t, http.StatusUnauthorized, status, "%v", got)
	require.Equal(t, api.CodeSignatureInvalid, sagatest.Code(got))
	require.Zero(t, rows(), "nothing refused is recorded")

	status, got = post(t, a, reportsPath, reportNotice(in), pspKey)
	require.Equal(t, http.StatusAccepted, status, "%v", got)
	require.Equal(t, map[string]any{"id": in.ID, "status": med.StatusReceived, "duplicate": false}, got)
	status, got = post(t, a, reportsPath, reportNotice(in), pspKey)
	require.Equal(t, http.StatusAccepted, status, "%v", got)
	require.Equal(t, true, got["duplicate"], "a redelivery is absorbed")
	// The DICT's lister lists the same report: the same door, the same row.
	_, changed, err := doorsOf(f.store).Intake(ctx, in)
	require.NoError(t, err)
	require.False(t, changed, "the lister's copy of the PSP's notice changes nothing")
	require.Equal(t, 1, rows())
	r, err := f.store.Get(ctx, uuid.MustParse(in.ID))
	require.NoError(t, err)
	require.Equal(t, "golpe do falso parente", r.ReportDetails)
	require.Equal(t, "99999999", r.Reporter)

	// Listed first by the lister, noticed after by the PSP: one row.
	c2 := f.credit(5_000, 0)
	listed := report(c2.EndToEndID, dict.ReportOpen, time.Now().Add(-time.Hour).Truncate(time.Millisecond))
	f.intake(listed)
	status, got = post(t, a, reportsPath, reportNotice(listed), pspKey)
	require.Equal(t, http.StatusAccepted, status, "%v", got)
	require.Equal(t, true, got["duplicate"])
	found, err := f.store.OfPIX(ctx, c2.EndToEndID, 10)
	require.NoError(t, err)
	require.Len(t, found, 1)

	// A later notice of the report (its reporter cancelled it) is taken;
	// an older copy after it changes nothing back.
	cancelled := in
	cancelled.Status, cancelled.LastModified = dict.ReportCancelled, in.LastModified.Add(time.Minute)
	status, got = post(t, a, reportsPath, reportNotice(cancelled), pspKey)
	require.Equal(t, http.StatusAccepted, status, "%v", got)
	require.Equal(t, false, got["duplicate"])
	status, got = post(t, a, reportsPath, reportNotice(in), pspKey)
	require.Equal(t, http.StatusAccepted, status, "%v", got)
	require.Equal(t, true, got["duplicate"])
	r, err = f.store.Get(ctx, uuid.MustParse(in.ID))
	require.NoError(t, err)
	require.Equal(t, string(dict.ReportCancelled), r.DICTStatus)
	woken := "pix-med:" + in.ID + " changed"
	require.Equal(t, []string{woken, woken}, sig.Sent(), "the report's run was woken at its intake and at its change, not at a copy")

	// The same report id with another PIX: refused, nothing changed.
	other := cancelled
	other.TransactionID, other.LastModified = c2.EndToEndID, other.LastModified.Add(time.Minute)
	status, got = post(t, a, reportsPath, reportNotice(other), pspKey)
	require.Equal(t, http.StatusUnprocessableEntity, status, "%v", got)
	require.Equal(t, "med_report_mismatch", sagatest.Code(got))
	require.Equal(t, 1, rows())

	// A refund request: of a report not received, refused (the PSP sends
	// the report first); of an agreed report, taken once.
	_, agreed := f.agreed(8_000, 0)
	unknown := request(agreed, 8_000, dict.RefundOpen)
	unknown.InfractionReportID = uuid.NewString()
	status, got = post(t, a, refundsPath, refundNotice(unknown), pspKey)
	require.Equal(t, http.StatusNotFound, status, "%v", got)
	require.Equal(t, "med_report_not_found", sagatest.Code(got))
	req := request(agreed, 8_000, dict.RefundOpen)
	status, got = post(t, a, refundsPath, refundNotice(req), pspKey)
	require.Equal(t, http.StatusAccepted, status, "%v", got)
	require.Equal(t, map[string]any{"id": req.ID, "infraction_report_id": agreed.ID.String(), "status": med.StatusAwaitingRequest,
		"duplicate": false}, got)
	status, got = post(t, a, refundsPath, refundNotice(req), pspKey)
	require.Equal(t, http.StatusAccepted, status, "%v", got)
	require.Equal(t, true, got["duplicate"])
	_, changed, err = f.store.IntakeRefund(ctx, req)
	require.NoError(t, err)
	require.False(t, changed, "the lister's copy of the PSP's notice changes nothing")
	r, err = f.store.Get(ctx, agreed.ID)
	require.NoError(t, err)
	require.Equal(t, req.ID, r.RefundRequestID.String())
	require.EqualValues(t, 8_000, *r.RefundRequestCents)
}

// A notice that is not the DICT's element as the DICT requires it is
// refused 400 invalid_request, in the error envelope, before the saga's
// door: nothing is recorded.
func TestPSPNoticesRefuseWhatTheDICTWouldNotSend(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	a := f.notices(&sagatest.Signals{})
	c := f.credit(10_000, 0)
	good := reportNotice(report(c.EndToEndID, dict.ReportOpen, time.Now()))
	const el = "InfractionReport"
	for name, body := range map[string]any{
		"not JSON":                                `{"InfractionReport":`,
		"no element":                              map[string]any{"Report": good[el]},
		"the element not an object":               map[string]any{el: "x"},
		"a key repeated":                          `{"InfractionReport":{},"InfractionReport":{}}`,
		"no Id":                                   with(good, el, "Id", nil),
		"an Id not a UUID":                        with(good, el, "Id", "42"),
		"no TransactionId":                        with(good, el, "TransactionId", nil),
		"a TransactionId not a PIX":               with(good, el, "TransactionId", "E1"),
		"a Status of no saga":                     with(good, el, "Status", "PENDING"),
		"a status in lower case":                  with(good, el, "Status", "open"),
		"no InfractionType":                       with(good, el, "InfractionType", nil),
		"a DebitedParticipant not an ISPB":        with(good, el, "DebitedParticipant", "1234567"),
		"no CreditedParticipant":                  with(good, el, "CreditedParticipant", nil),
		"a CreationTime not RFC 3339":             with(good, el, "CreationTime", "yesterday"),
		"no LastModified":                         with(good, el, "LastModified", nil),
		"an AnalysisResult of no DICT":            with(good, el, "AnalysisResult", "MAYBE"),
		"ReportDetails over 2,000 characters":     with(good, el, "ReportDetails", strings.Repeat("é", 2001)),
		"an element's member named in lower case": with(with(good, el, "Id", nil), el, "id", uuid.NewString()),
	} {
		status, got := post(t, a, reportsPath, body, pspKey)
		require.Equal(t, http.StatusBadRequest, status, "%s: %v", name, got)
		require.Equal(t, api.CodeInvalidRequest, sagatest.Code(got), name)
	}
	found, err := f.store.OfPIX(ctx, c.EndToEndID, 10)
	require.NoError(t, err)
	require.Empty(t, found)

	goodRefund := refundNotice(dict.Refund{ID: uuid.NewString(), TransactionID: c.EndToEndID, RefundReason: dict.RefundFraud,
		RefundAmount: 10_000, Status: dict.RefundOpen, InfractionReportID: uuid.NewString()})
	for name, body := range map[string]any{
		"no InfractionReportId":        with(goodRefund, "Refund", "InfractionReportId", nil),
		"an amount as a string":        with(goodRefund, "Refund", "RefundAmount", "100.00"),
		"an amount of three decimals":  with(goodRefund, "Refund", "RefundAmount", json.Number("100.001")),
		"an amount with an exponent":   with(goodRefund, "Refund", "RefundAmount", json.Number("1e2")),
		"a negative amount":            with(goodRefund, "Refund", "RefundAmount", json.Number("-1.00")),
		"a zero amount":                with(goodRefund, "Refund", "RefundAmount", json.Number("0.00")),
		"a Status of no refund":        with(goodRefund, "Refund", "Status", "ACKNOWLEDGED"),
		"a ContestedParticipant blank": with(goodRefund, "Refund", "ContestedParticipant", ""),
	} {
		status, got := post(t, a, refundsPath, body, pspKey)
		require.Equal(t, http.StatusBadRequest, status, "%s: %v", name, got)
		require.Equal(t, api.CodeInvalidRequest, sagatest.Code(got), name)
	}

	// The controls: the same notices as the DICT sends them are taken as
	// far as the door (the refund's report is unknown).
	status, got := post(t, a, reportsPath, good, pspKey)
	require.Equal(t, http.StatusAccepted, status, "%v", got)
	status, got = post(t, a, refundsPath, goodRefund, pspKey)
	require.Equal(t, http.StatusNotFound, status, "%v", got)
	var raw bytes.Buffer
	require.NoError(t, json.NewEncoder(&raw).Encode(goodRefund))
	require.Contains(t, raw.String(), `"RefundAmount":100.00`, "the amount is the DICT's number of reais")
}
