package dictsim_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/pixbank/pix/internal/dict"
	"github.com/pixbank/pix/internal/dict/dictspec"
	"github.com/pixbank/pix/internal/tooling/dictsim"
)

// A third participant, which the simulator does not know: the party of
// reports that are neither the bank's nor the payer's.
const thirdISPB = "99999011"

// frozen is a fixed clock: the model's times move only with Advance.
func frozen() time.Time { return time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC) }

func client(t *testing.T, cfg dict.Config) *dict.HTTPClient {
	t.Helper()
	c, err := dict.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// e2e is the n-th PIX's EndToEndId.
func e2e(n int) string { return fmt.Sprintf("E99999010202612011000%011d", n) }

// report opens a report of the n-th PIX, of R$ 200,00, reported by the
// payer against the bank.
func report(t *testing.T, ts *dictsim.TestServer, n int) dict.InfractionReport {
	t.Helper()
	r, err := ts.OpenReport(dictsim.NewReport{
		EndToEndID: e2e(n), Amount: 20000, Debited: dictsim.TestPayer, Credited: dictsim.TestBank,
		Details: "QR Code falso em boleto",
	})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// agreed is a report of the n-th PIX the bank acknowledged and closed
// AGREED through c.
func agreed(t *testing.T, ts *dictsim.TestServer, c *dict.HTTPClient, n int) dict.InfractionReport {
	t.Helper()
	r := report(t, ts, n)
	ctx := context.Background()
	if _, err := c.AcknowledgeInfractionReport(ctx, r.ID); err != nil {
		t.Fatal(err)
	}
	closed, err := c.CloseInfractionReport(ctx, r.ID, dict.Agreed, "Valor bloqueado.")
	if err != nil {
		t.Fatal(err)
	}
	return closed
}

// TestTheClientThroughEveryOperation drives the bank's client through
// every operation of the facts document, as MED goes: a report opened
// against a PIX, listed, read, acknowledged, closed AGREED; a refund
// request of less than the PIX, listed, read, closed with the devolução;
// the buckets. Every request and answer is checked against dict-api.yaml
// on the way (NewTestServer fails the test on a violation), every answer's
// signature by the client and every write's by the simulator; and every
// operation of the document is called.
func TestTheClientThroughEveryOperation(t *testing.T) {
	ts := dictsim.NewTestServer(t, dictsim.Options{})
	c := client(t, ts.Config)
	ctx := context.Background()

	rep := report(t, ts, 1)
	page, err := c.ListInfractionReports(ctx, dict.ReportQuery{
		Role: dict.Credited, Status: []dict.InfractionReportStatus{dict.ReportOpen}, IncludeDetails: true,
		ModifiedAfter: rep.LastModified.Add(-time.Second), ModifiedBefore: rep.LastModified.Add(time.Second), Limit: 10,
	})
	if err != nil || len(page.Reports) != 1 || page.HasMoreElements {
		t.Fatalf("list: %+v, %v", page, err)
	}
	if got := page.Reports[0]; got.ID != rep.ID || got.TransactionID != e2e(1) || got.Status != dict.ReportOpen ||
		got.DebitedParticipant != dictsim.TestPayer || got.CreditedParticipant != dictsim.TestBank ||
		got.ReportedBy != dict.ReportedByDebited || got.InfractionType != dict.InfractionFraud ||
		got.ReportDetails != rep.ReportDetails || !got.LastModified.Equal(rep.LastModified) {
		t.Errorf("listed %+v, opened %+v", got, rep)
	}
	if _, err := c.ListInfractionReports(ctx, dict.ReportQuery{}); err != nil {
		t.Errorf("list without role: %v", err)
	}
	ack, err := c.AcknowledgeInfractionReport(ctx, rep.ID)
	if err != nil || ack.Status != dict.ReportAcknowledged {
		t.Fatalf("acknowledge: %+v, %v", ack, err)
	}
	closed, err := c.CloseInfractionReport(ctx, rep.ID, dict.Agreed, "Valor bloqueado.")
	if err != nil || closed.Status != dict.ReportClosed || closed.AnalysisResult != dict.Agreed || closed.AnalysisDetails != "Valor bloqueado." {
		t.Fatalf("close: %+v, %v", closed, err)
	}
	if got, err := c.GetInfractionReport(ctx, rep.ID); err != nil || got != closed {
		t.Fatalf("get: %+v, %v; closed %+v", got, err, closed)
	}

	ref, err := ts.OpenRefund(dictsim.NewRefund{InfractionReportID: rep.ID, Amount: 15000, Details: "Golpe"})
	if err != nil {
		t.Fatal(err)
	}
	rp, err := c.ListRefunds(ctx, dict.RefundQuery{Status: []dict.RefundStatus{dict.RefundOpen}, IncludeDetails: true})
	if err != nil || len(rp.Refunds) != 1 || rp.Refunds[0] != ref {
		t.Fatalf("list refunds: %+v, %v; opened %+v", rp, err, ref)
	}
	if ref.RefundAmount != 15000 || ref.TransactionID != e2e(1) || ref.InfractionReportID != rep.ID ||
		ref.RequestingParticipant != dictsim.TestPayer || ref.ContestedParticipant != dictsim.TestBank {
		t.Errorf("refund request %+v", ref)
	}
	if got, err := c.GetRefund(ctx, ref.ID); err != nil || got != ref {
		t.Fatalf("get refund: %+v, %v", got, err)
	}
	const devolucao = "D1234567820261201100000000000001"
	cr, err := c.CloseRefund(ctx, ref.ID, dict.RefundClosing{Result: dict.PartiallyAccepted, Details: "Parte devolvida.", RefundTransactionID: devolucao})
	if err != nil || cr.Status != dict.RefundClosed || cr.AnalysisResult != dict.PartiallyAccepted || cr.RefundTransactionID != devolucao || cr.AnalysisDetails != "Parte devolvida." {
		t.Fatalf("close refund: %+v, %v", cr, err)
	}

	buckets, err := c.Buckets(ctx)
	if err != nil || buckets.Category != dictsim.DefaultCategory || len(buckets.Buckets) != len(mustSpec(t).Policies()) {
		t.Fatalf("buckets: %+v, %v", buckets, err)
	}
	b, err := c.Bucket(ctx, dict.PolicyInfractionReportsWrite)
	// Two writes taken from 36,000 (the document's), refilled at 1,200 a
	// minute since: between.
	if err != nil || b.Capacity != 36000 || b.RefillTokens != 1200 || b.RefillPeriodSec != 60 || b.AvailableTokens < 35998 {
		t.Fatalf("bucket: %+v, %v", b, err)
	}

	calls := ts.Calls()
	for _, op := range mustSpec(t).Operations() {
		if calls[op.ID] == 0 {
			t.Errorf("%s (%s) was never called", op, op.ID)
		}
	}
}

func mustSpec(t *testing.T) *dictspec.Spec {
	t.Helper()
	spec, err := dictspec.Load()
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

// TestReportsStateMachine: OPEN → ACKNOWLEDGED → CLOSED, the repeats the
// specification makes idempotent answered as the first, every other write
// InfractionReportOperationInvalid; a report its creator cancelled takes
// no write.
func TestReportsStateMachine(t *testing.T) {
	ts := dictsim.NewTestServer(t, dictsim.Options{Now: frozen})
	c := client(t, ts.Config)
	ctx := context.Background()
	invalid := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, dict.ErrInfractionReportOperationInvalid) || dict.Classify(err) != dict.Refused {
			t.Errorf("%s: %v, want InfractionReportOperationInvalid", what, err)
		}
	}
	rep := report(t, ts, 1)
	_, err := c.CloseInfractionReport(ctx, rep.ID, dict.Agreed, "")
	invalid("close of an open report", err)
	if _, err := ts.Advance(72 * time.Hour); err != nil {
		t.Fatal(err)
	}
	ack, err := c.AcknowledgeInfractionReport(ctx, rep.ID)
	if err != nil || ack.Status != dict.ReportAcknowledged || !ack.LastModified.Equal(frozen().Add(72*time.Hour)) || !ack.CreationTime.Equal(frozen()) {
		t.Fatalf("acknowledge 72 hours on: %+v, %v", ack, err)
	}
	if again, err := c.AcknowledgeInfractionReport(ctx, rep.ID); err != nil || again != ack {
		t.Fatalf("acknowledge again: %+v, %v", again, err)
	}
	closed, err := c.CloseInfractionReport(ctx, rep.ID, dict.Disagreed, "Sem indício de fraude.")
	if err != nil || closed.Status != dict.ReportClosed || closed.AnalysisResult != dict.Disagreed {
		t.Fatalf("close: %+v, %v", closed, err)
	}
	if again, err := c.CloseInfractionReport(ctx, rep.ID, dict.Disagreed, "Sem indício de fraude."); err != nil || again != closed {
		t.Fatalf("the same close again: %+v, %v", again, err)
	}
	_, err = c.CloseInfractionReport(ctx, rep.ID, dict.Agreed, "Sem indício de fraude.")
	invalid("another close", err)
	_, err = c.AcknowledgeInfractionReport(ctx, rep.ID)
	invalid("acknowledge of a closed report", err)

	// Cancelled by its creator, even once closed.
	if _, err := ts.CancelReport(rep.ID); err != nil {
		t.Fatal(err)
	}
	if got, err := c.GetInfractionReport(ctx, rep.ID); err != nil || got.Status != dict.ReportCancelled {
		t.Fatalf("read a cancelled report: %+v, %v", got, err)
	}
	_, err = c.CloseInfractionReport(ctx, rep.ID, dict.Disagreed, "Sem indício de fraude.")
	invalid("close of a cancelled report", err)
	other := report(t, ts, 2)
	if _, err := ts.CancelReport(other.ID); err != nil {
		t.Fatal(err)
	}
	_, err = c.AcknowledgeInfractionReport(ctx, other.ID)
	invalid("acknowledge of a cancelled report", err)

	// The DICT's rules on a PIX's reports.
	again := report(t, ts, 2) // the cancelled one does not count
	if _, err := ts.OpenReport(dictsim.NewReport{EndToEndID: e2e(2), Amount: 1, Debited: dictsim.TestPayer, Credited: dictsim.TestBank}); !errors.Is(err, dict.ErrInfractionReportAlreadyBeingProcessedForTransaction) {
		t.Errorf("a second report of an open one's PIX: %v", err)
	}
	ackAndClose(t, c, again.ID, dict.Agreed)
	if _, err := ts.OpenReport(dictsim.NewReport{EndToEndID: e2e(2), Amount: 1, Debited: dictsim.TestPayer, Credited: dictsim.TestBank}); !errors.Is(err, dict.ErrInfractionReportAlreadyProcessedForTransaction) {
		t.Errorf("a second report of a closed one's PIX: %v", err)
	}
	for name, n := range map[string]dictsim.NewReport{
		"short e2e":     {EndToEndID: "E1", Amount: 1, Debited: dictsim.TestPayer, Credited: dictsim.TestBank},
		"no amount":     {EndToEndID: e2e(3), Debited: dictsim.TestPayer, Credited: dictsim.TestBank},
		"same parties":  {EndToEndID: e2e(3), Amount: 1, Debited: dictsim.TestBank, Credited: dictsim.TestBank},
		"unknown type":  {EndToEndID: e2e(3), Amount: 1, Debited: dictsim.TestPayer, Credited: dictsim.TestBank, InfractionType: "SCAM"},
		"unknown party": {EndToEndID: e2e(3), Amount: 1, Debited: dictsim.TestPayer, Credited: dictsim.TestBank, ReportedBy: "BANK"},
	} {
		if _, err := ts.OpenReport(n); !errors.Is(err, dictsim.ErrInvalid) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func ackAndClose(t *testing.T, c *dict.HTTPClient, id string, result dict.AnalysisResult) {
	t.Helper()
	ctx := context.Background()
	if _, err := c.AcknowledgeInfractionReport(ctx, id); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CloseInfractionReport(ctx, id, result, ""); err != nil {
		t.Fatal(err)
	}
}

// TestRefundsStateMachine: a refund request comes only after an AGREED
// close, for at most the PIX; OPEN → CLOSED (repeated with the same
// parameters: the same answer; otherwise RefundOperationInvalid) or
// CANCELLED by its requester.
func TestRefundsStateMachine(t *testing.T) {
	ts := dictsim.NewTestServer(t, dictsim.Options{})
	c := client(t, ts.Config)
	ctx := context.Background()

	rep := report(t, ts, 1)
	if _, err := ts.OpenRefund(dictsim.NewRefund{InfractionReportID: rep.ID}); !errors.Is(err, dict.ErrRefundInfractionReportNotFound) {
		t.Errorf("a refund request of an open report: %v", err)
	}
	ackAndClose(t, c, rep.ID, dict.Disagreed)
	if _, err := ts.OpenRefund(dictsim.NewRefund{InfractionReportID: rep.ID}); !errors.Is(err, dict.ErrRefundInfractionReportNotFound) {
		t.Errorf("a refund request of a DISAGREED report: %v", err)
	}
	if _, err := ts.OpenRefund(dictsim.NewRefund{InfractionReportID: uuid.NewString()}); !errors.Is(err, dict.ErrRefundInfractionReportNotFound) {
		t.Errorf("a refund request of no report: %v", err)
	}

	rep = agreed(t, ts, c, 2)
	if _, err := ts.OpenRefund(dictsim.NewRefund{InfractionReportID: rep.ID, Amount: 20001}); !errors.Is(err, dictsim.ErrInvalid) {
		t.Errorf("a refund request beyond the PIX: %v", err)
	}
	ref, err := ts.OpenRefund(dictsim.NewRefund{InfractionReportID: rep.ID})
	if err != nil || ref.RefundAmount != 20000 || ref.Status != dict.RefundOpen || ref.RefundReason != dict.RefundFraud {
		t.Fatalf("a refund request of the whole PIX: %+v, %v", ref, err)
	}
	if _, err := ts.OpenRefund(dictsim.NewRefund{InfractionReportID: rep.ID}); !errors.Is(err, dict.ErrRefundAlreadyBeingProcessedForTransaction) {
		t.Errorf("a second refund request while one is open: %v", err)
	}
	rejected := dict.RefundClosing{Result: dict.Rejected, RejectionReason: dict.RejectionNoBalance, Details: "Sem saldo."}
	closed, err := c.CloseRefund(ctx, ref.ID, rejected)
	if err != nil || closed.Status != dict.RefundClosed || closed.RefundRejectionReason != dict.RejectionNoBalance || closed.RefundTransactionID != "" {
		t.Fatalf("reject: %+v, %v", closed, err)
	}
	if again, err := c.CloseRefund(ctx, ref.ID, rejected); err != nil || again != closed {
		t.Fatalf("the same close again: %+v, %v", again, err)
	}
	if _, err := c.CloseRefund(ctx, ref.ID, dict.RefundClosing{Result: dict.TotallyAccepted, RefundTransactionID: "D1234567820261201100000000000001"}); !errors.Is(err, dict.ErrRefundOperationInvalid) {
		t.Errorf("another close: %v", err)
	}
	if _, err := ts.CancelRefund(ref.ID); !errors.Is(err, dict.ErrRefundOperationInvalid) {
		t.Errorf("cancel a closed refund request: %v", err)
	}
	if _, err := ts.OpenRefund(dictsim.NewRefund{InfractionReportID: rep.ID}); !errors.Is(err, dict.ErrRefundAlreadyProcessedForTransaction) {
		t.Errorf("a refund request once one is closed: %v", err)
	}

	rep = agreed(t, ts, c, 3)
	ref, err = ts.OpenRefund(dictsim.NewRefund{InfractionReportID: rep.ID, Amount: 100})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := ts.CancelRefund(ref.ID); err != nil || got.Status != dict.RefundCancelled {
		t.Fatalf("cancel: %+v, %v", got, err)
	}
	if _, err := c.CloseRefund(ctx, ref.ID, rejected); !errors.Is(err, dict.ErrRefundOperationInvalid) {
		t.Errorf("close a cancelled refund request: %v", err)
	}
	if _, err := ts.OpenRefund(dictsim.NewRefund{InfractionReportID: rep.ID}); err != nil {
		t.Errorf("a refund request after a cancelled one: %v", err)
	}
}

// TestWhoAsks: a report or refund request of which the asker is no party
// looks like none; a party that is not the one to write gets Forbidden; a
// client whose Participant is not its certificate's gets nothing.
func TestWhoAsks(t *testing.T) {
	ts := dictsim.NewTestServer(t, dictsim.Options{})
	bank, payer := client(t, ts.Config), client(t, ts.PayerConfig)
	ctx := context.Background()

	theirs, err := ts.OpenReport(dictsim.NewReport{EndToEndID: e2e(9), Amount: 1, Debited: dictsim.TestPayer, Credited: thirdISPB})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bank.GetInfractionReport(ctx, theirs.ID); !errors.Is(err, dict.ErrNotFound) {
		t.Errorf("read another's report: %v", err)
	}
	if _, err := bank.AcknowledgeInfractionReport(ctx, theirs.ID); !errors.Is(err, dict.ErrNotFound) {
		t.Errorf("acknowledge another's report: %v", err)
	}
	if page, err := bank.ListInfractionReports(ctx, dict.ReportQuery{}); err != nil || len(page.Reports) != 0 {
		t.Errorf("the bank's list shows another's report: %+v, %v", page, err)
	}

	rep := agreed(t, ts, bank, 1)
	// The payer reads and lists it, as its debited party; it may not
	// acknowledge nor close what it reported.
	if got, err := payer.GetInfractionReport(ctx, rep.ID); err != nil || got.ID != rep.ID {
		t.Errorf("the payer reads its report: %+v, %v", got, err)
	}
	if page, err := payer.ListInfractionReports(ctx, dict.ReportQuery{Role: dict.Debited}); err != nil || len(page.Reports) != 2 {
		t.Errorf("the payer's list as debited: %+v, %v", page, err)
	}
	if page, err := payer.ListInfractionReports(ctx, dict.ReportQuery{Role: dict.Credited}); err != nil || len(page.Reports) != 0 {
		t.Errorf("the payer's list as credited: %+v, %v", page, err)
	}
	if _, err := payer.CloseInfractionReport(ctx, rep.ID, dict.Disagreed, ""); !errors.Is(err, dict.ErrForbidden) {
		t.Errorf("the reporter closes its report: %v", err)
	}
	ref, err := ts.OpenRefund(dictsim.NewRefund{InfractionReportID: rep.ID})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := payer.CloseRefund(ctx, ref.ID, dict.RefundClosing{Result: dict.Rejected}); !errors.Is(err, dict.ErrForbidden) {
		t.Errorf("the requester closes its refund request: %v", err)
	}
	if page, err := payer.ListRefunds(ctx, dict.RefundQuery{Role: dict.RoleRequesting}); err != nil || len(page.Refunds) != 1 {
		t.Errorf("the payer's refunds as requester: %+v, %v", page, err)
	}
	if page, err := payer.ListRefunds(ctx, dict.RefundQuery{}); err != nil || len(page.Refunds) != 0 {
		t.Errorf("the payer's refunds as contested: %+v, %v", page, err)
	}

	// The bank's certificate, naming the payer.
	cfg := ts.Config
	cfg.Participant = dictsim.TestPayer
	impostor := client(t, cfg)
	if _, err := impostor.ListInfractionReports(ctx, dict.ReportQuery{}); !errors.Is(err, dict.ErrForbidden) {
		t.Errorf("list as another: %v", err)
	}
	if _, err := impostor.GetInfractionReport(ctx, rep.ID); !errors.Is(err, dict.ErrNotFound) {
		t.Errorf("read as another: %v", err)
	}
	if _, err := impostor.GetRefund(ctx, ref.ID); !errors.Is(err, dict.ErrNotFound) {
		t.Errorf("read a refund request as another: %v", err)
	}
	if _, err := impostor.CloseRefund(ctx, ref.ID, dict.RefundClosing{Result: dict.Rejected}); !errors.Is(err, dict.ErrForbidden) {
		t.Errorf("write as another: %v", err)
	}
	if _, err := impostor.Buckets(ctx); !errors.Is(err, dict.ErrForbidden) {
		t.Errorf("the buckets of another: %v", err)
	}
}

// TestSignaturesBothWays: a write unsigned, signed by a key the simulator
// knows for no participant, or by another participant's key, is refused
// RequestSignatureInvalid and changes nothing; an answer the simulator
// signs with a foreign certificate is not accepted by the client.
func TestSignaturesBothWays(t *testing.T) {
	ts := dictsim.NewTestServer(t, dictsim.Options{})
	ctx := context.Background()
	rep := report(t, ts, 1)

	for name, signer := range map[string][2]string{
		"foreign key":     {ts.ForeignCertFile, ts.ForeignKeyFile},
		"the payer's key": {ts.PayerConfig.CertFile, ts.PayerConfig.KeyFile},
	} {
		cfg := ts.Config
		cfg.SigningCertFile, cfg.SigningKeyFile = signer[0], signer[1]
		_, err := client(t, cfg).AcknowledgeInfractionReport(ctx, rep.ID)
		if !errors.Is(err, dict.ErrRequestSignatureInvalid) || dict.Classify(err) != dict.Refused {
			t.Errorf("signed by %s: %v", name, err)
		}
	}
	hc := httpsClient(t, ts.Config)
	body := fmt.Sprintf(`<?xml version="1.0" encoding="UTF-8"?><AcknowledgeInfractionReportRequest><InfractionReportId>%s</InfractionReportId><Participant>%s</Participant></AcknowledgeInfractionReportRequest>`, rep.ID, dictsim.TestBank)
	resp, err := hc.Post(ts.Config.BaseURL+"/infraction-reports/"+rep.ID+"/acknowledge", "application/xml", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || resp.Header.Get("Content-Type") != "application/problem+xml" ||
		!strings.Contains(string(b), dict.ErrRequestSignatureInvalid.Type()) || !strings.Contains(string(b), "ds:Signature") {
		t.Errorf("unsigned: %d %s %s", resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	if got, _ := ts.Report(rep.ID); got.Status != dict.ReportOpen {
		t.Errorf("a refused write changed the report: %+v", got)
	}

	c := client(t, ts.Config)
	ts.SetAnswerHook(func(_ *dictsim.Exchange, model func() dictsim.Answer) dictsim.Answer {
		a := model()
		a.Sign = dictsim.SignForeign
		return a
	})
	if _, err := c.AcknowledgeInfractionReport(ctx, rep.ID); !errors.Is(err, dict.ErrUnverifiedAnswer) {
		t.Errorf("an answer signed by a foreign certificate: %v", err)
	}
	ts.SetAnswerHook(nil)
	// The write was done; only its answer was not the DICT's.
	if got, err := c.GetInfractionReport(ctx, rep.ID); err != nil || got.Status != dict.ReportAcknowledged {
		t.Errorf("read back: %+v, %v", got, err)
	}
}

// httpsClient is an HTTP client with cfg's mutual TLS, for requests the
// DICT client would never send.
func httpsClient(t *testing.T, cfg dict.Config) *http.Client {
	t.Helper()
	cert, err := tls.LoadX509KeyPair(cfg.CertFile, cfg.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := os.ReadFile(cfg.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	return &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: pool, MinVersion: tls.VersionTLS12}}}
}

// TestMutualTLS: a client whose certificate is of no trusted CA gets no
// answer, and the simulator counts no call.
func TestMutualTLS(t *testing.T) {
	ts := dictsim.NewTestServer(t, dictsim.Options{})
	cfg := ts.Config
	cfg.CertFile, cfg.KeyFile = ts.ForeignCertFile, ts.ForeignKeyFile
	if _, err := client(t, cfg).Buckets(context.Background()); dict.Classify(err) != dict.Unknown {
		t.Fatalf("a stranger's certificate: %v", err)
	}
	if calls := ts.Calls(); len(calls) != 0 {
		t.Fatalf("calls served to a stranger: %v", calls)
	}
}

// TestLostAnswersAreReadBack: the next writes are done and their answers
// lost, the connection cut or a gateway's 504: the client's outcome is
// unknown, the read-back shows the write done, and the same write again
// gets the same answer.
func TestLostAnswersAreReadBack(t *testing.T) {
	ts := dictsim.NewTestServer(t, dictsim.Options{})
	c := client(t, ts.Config)
	ctx := context.Background()
	rep := report(t, ts, 1)
	unknown := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, dict.ErrUnknownOutcome) || dict.Classify(err) != dict.Unknown {
			t.Fatalf("%s: %v (class %s)", what, err, dict.Classify(err))
		}
	}

	if err := ts.LoseAnswers(1, dictsim.LossCut); err != nil {
		t.Fatal(err)
	}
	if f := ts.Faults(); f.LoseAnswers != 1 || f.LoseHow != dictsim.LossCut {
		t.Errorf("faults: %+v", f)
	}
	_, err := c.AcknowledgeInfractionReport(ctx, rep.ID)
	unknown("acknowledge, connection cut", err)
	if got, err := c.GetInfractionReport(ctx, rep.ID); err != nil || got.Status != dict.ReportAcknowledged {
		t.Fatalf("read back: %+v, %v", got, err)
	}

	if err := ts.LoseAnswers(2, dictsim.LossGatewayTimeout); err != nil {
		t.Fatal(err)
	}
	_, err = c.CloseInfractionReport(ctx, rep.ID, dict.Agreed, "bloqueado")
	unknown("close, 504", err)
	_, err = c.CloseInfractionReport(ctx, rep.ID, dict.Agreed, "bloqueado")
	unknown("the same close, 504 again", err)
	if f := ts.Faults(); f.LoseAnswers != 0 {
		t.Errorf("faults after the losses: %+v", f)
	}
	got, err := c.GetInfractionReport(ctx, rep.ID)
	if err != nil || got.Status != dict.ReportClosed || got.AnalysisResult != dict.Agreed || got.AnalysisDetails != "bloqueado" {
		t.Fatalf("read back: %+v, %v", got, err)
	}
	if again, err := c.CloseInfractionReport(ctx, rep.ID, dict.Agreed, "bloqueado"); err != nil || again != got {
		t.Fatalf("the same close: %+v, %v", again, err)
	}

	ref, err := ts.OpenRefund(dictsim.NewRefund{InfractionReportID: rep.ID})
	if err != nil {
		t.Fatal(err)
	}
	closing := dict.RefundClosing{Result: dict.TotallyAccepted, RefundTransactionID: "D1234567820261201100000000000001"}
	if err := ts.LoseAnswers(1, dictsim.LossCut); err != nil {
		t.Fatal(err)
	}
	_, err = c.CloseRefund(ctx, ref.ID, closing)
	unknown("close refund, connection cut", err)
	if got, err := c.GetRefund(ctx, ref.ID); err != nil || got.Status != dict.RefundClosed || got.RefundTransactionID != closing.RefundTransactionID {
		t.Fatalf("read back the refund request: %+v, %v", got, err)
	}
	// Reads are never lost.
	if err := ts.LoseAnswers(1, dictsim.LossCut); err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetRefund(ctx, ref.ID); err != nil {
		t.Fatalf("a read while a write's answer is to be lost: %v", err)
	}
	if err := ts.LoseAnswers(1, "later"); !errors.Is(err, dictsim.ErrInvalid) {
		t.Errorf("an unknown loss: %v", err)
	}
}

// TestRateLimits: each request takes a token of its policy's bucket, which
// refills at the policy's rate by the simulated clock; an empty bucket is
// 429 RateLimited, signed, and nothing is done; the policies show the
// buckets as they are; a storm empties them all for a while.
func TestRateLimits(t *testing.T) {
	ts := dictsim.NewTestServer(t, dictsim.Options{Now: frozen, Limits: map[string]dictsim.Limit{
		dict.PolicyInfractionReportsWrite: {RefillPerMinute: 60, BucketSize: 2},
	}})
	c := client(t, ts.Config)
	ctx := context.Background()
	limited := func(what string, err error) {
		t.Helper()
		var pe *dict.ProblemError
		if !errors.Is(err, dict.ErrRateLimited) || dict.Classify(err) != dict.RateLimited || !errors.As(err, &pe) || !pe.Signed {
			t.Fatalf("%s: %v, want a signed 429", what, err)
		}
	}
	rep := report(t, ts, 1)
	for range 2 {
		if _, err := c.AcknowledgeInfractionReport(ctx, rep.ID); err != nil {
			t.Fatal(err)
		}
	}
	_, err := c.CloseInfractionReport(ctx, rep.ID, dict.Agreed, "")
	limited("the third write of a bucket of 2", err)
	if b, err := c.Bucket(ctx, dict.PolicyInfractionReportsWrite); err != nil || b.AvailableTokens != 0 || b.Capacity != 2 || b.RefillTokens != 60 {
		t.Fatalf("the empty bucket: %+v, %v", b, err)
	}
	if got, _ := ts.Report(rep.ID); got.Status != dict.ReportAcknowledged {
		t.Fatalf("a write refused 429 was done: %+v", got)
	}
	if _, err := ts.Advance(time.Second); err != nil { // one token back
		t.Fatal(err)
	}
	if _, err := c.CloseInfractionReport(ctx, rep.ID, dict.Agreed, ""); err != nil {
		t.Fatalf("the write a second later: %v", err)
	}
	// The other buckets are untouched.
	if _, err := c.GetInfractionReport(ctx, rep.ID); err != nil {
		t.Fatal(err)
	}

	if err := ts.RateLimitStorm(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	_, err = c.GetInfractionReport(ctx, rep.ID)
	limited("a read in the storm", err)
	_, err = c.ListRefunds(ctx, dict.RefundQuery{})
	limited("a list in the storm", err)
	if f := ts.Faults(); f.RateLimitStormUntil == nil || !f.RateLimitStormUntil.Equal(frozen().Add(time.Second+30*time.Second)) {
		t.Errorf("faults in the storm: %+v", f)
	}
	if _, err := ts.Advance(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	_, err = c.GetInfractionReport(ctx, rep.ID)
	limited("a read as the storm ends: the buckets are empty", err)
	if _, err := ts.Advance(10 * time.Second); err != nil { // the lists' refill: 40 a minute
		t.Fatal(err)
	}
	if _, err := c.GetInfractionReport(ctx, rep.ID); err != nil {
		t.Errorf("a read after the storm: %v", err)
	}
	if _, err := c.ListRefunds(ctx, dict.RefundQuery{}); err != nil {
		t.Errorf("a list after the storm: %v", err)
	}

	if err := ts.RateLimitStorm(time.Hour); err != nil {
		t.Fatal(err)
	}
	ts.EndRateLimitStorm()
	if _, err := ts.Advance(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ListRefunds(ctx, dict.RefundQuery{}); err != nil {
		t.Errorf("a list after a storm ended early: %v", err)
	}
}

// TestOutage: the DICT down answers 503 ServiceUnavailable with
// Retry-After (or 500), does nothing, and comes back when the outage
// ends.
func TestOutage(t *testing.T) {
	ts := dictsim.NewTestServer(t, dictsim.Options{Now: frozen})
	c := client(t, ts.Config)
	ctx := context.Background()
	rep := report(t, ts, 1)
	if err := ts.SetOutage(dictsim.Outage{For: 2 * time.Minute}); err != nil {
		t.Fatal(err)
	}
	_, err := c.AcknowledgeInfractionReport(ctx, rep.ID)
	if d, ok := dict.RetryAfter(err); !errors.Is(err, dict.ErrServiceUnavailable) || dict.Classify(err) != dict.Unknown || !ok || d != 2*time.Minute {
		t.Fatalf("acknowledge, DICT down: %v, retry after %s", err, d)
	}
	if got, _ := ts.Report(rep.ID); got.Status != dict.ReportOpen {
		t.Fatalf("a write answered 503 was done: %+v", got)
	}
	if _, err := ts.Advance(2 * time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := c.AcknowledgeInfractionReport(ctx, rep.ID); err != nil {
		t.Fatalf("acknowledge once the DICT is back: %v", err)
	}
	if err := ts.SetOutage(dictsim.Outage{For: time.Minute, Status: http.StatusInternalServerError}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetInfractionReport(ctx, rep.ID); !errors.Is(err, dict.ErrInternalServerError) || dict.Classify(err) != dict.Unknown {
		t.Fatalf("read, 500: %v", err)
	}
	if f := ts.Faults(); f.OutageUntil == nil || f.OutageStatus != http.StatusInternalServerError {
		t.Errorf("faults: %+v", f)
	}
	ts.EndOutage()
	if _, err := c.GetInfractionReport(ctx, rep.ID); err != nil {
		t.Fatalf("read once the outage ended: %v", err)
	}
	for _, o := range []dictsim.Outage{{}, {For: time.Minute, Status: http.StatusBadGateway}} {
		if err := ts.SetOutage(o); !errors.Is(err, dictsim.ErrInvalid) {
			t.Errorf("outage %+v: %v", o, err)
		}
	}
}

// TestListsFilterAndPage: the lists' filters, their order, their pages
// (Limit, 20 by default, HasMoreElements), their details only when asked,
// and their lag.
func TestListsFilterAndPage(t *testing.T) {
	ts := dictsim.NewTestServer(t, dictsim.Options{Now: frozen})
	c := client(t, ts.Config)
	ctx := context.Background()
	var ids []string
	for i := range 25 {
		if _, err := ts.Advance(time.Second); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, report(t, ts, i).ID)
	}
	debited, err := ts.OpenReport(dictsim.NewReport{EndToEndID: e2e(100), Amount: 1, Debited: dictsim.TestBank, Credited: dictsim.TestPayer})
	if err != nil {
		t.Fatal(err)
	}

	page, err := c.ListInfractionReports(ctx, dict.ReportQuery{Role: dict.Credited})
	if err != nil || len(page.Reports) != dict.DefaultLimit || !page.HasMoreElements {
		t.Fatalf("the first page: %d reports, more %v, %v", len(page.Reports), page.HasMoreElements, err)
	}
	for i, r := range page.Reports {
		if r.ID != ids[i] {
			t.Fatalf("report %d is %s, want %s (LastModified ascending)", i, r.ID, ids[i])
		}
		if r.ReportDetails != "" {
			t.Errorf("details without IncludeDetails: %q", r.ReportDetails)
		}
	}
	page, err = c.ListInfractionReports(ctx, dict.ReportQuery{Role: dict.Credited, ModifiedAfter: frozen().Add(21 * time.Second), ModifiedBefore: frozen().Add(23 * time.Second)})
	if err != nil || page.HasMoreElements || len(page.Reports) != 3 || page.Reports[0].ID != ids[20] || page.Reports[2].ID != ids[22] {
		t.Fatalf("a window: %+v, %v", page, err)
	}
	if page, err := c.ListInfractionReports(ctx, dict.ReportQuery{Role: dict.Debited}); err != nil || len(page.Reports) != 1 || page.Reports[0].ID != debited.ID {
		t.Fatalf("as debited: %+v, %v", page, err)
	}
	if page, err := c.ListInfractionReports(ctx, dict.ReportQuery{Limit: 200}); err != nil || len(page.Reports) != 26 || page.HasMoreElements {
		t.Fatalf("either party: %d, %v", len(page.Reports), err)
	}
	ackAndClose(t, c, ids[3], dict.Agreed)
	page, err = c.ListInfractionReports(ctx, dict.ReportQuery{Role: dict.Credited, Status: []dict.InfractionReportStatus{dict.ReportClosed, dict.ReportCancelled}, IncludeDetails: true})
	if err != nil || len(page.Reports) != 1 || page.Reports[0].ID != ids[3] || page.Reports[0].ReportDetails == "" {
		t.Fatalf("by status: %+v, %v", page, err)
	}

	lagged := dictsim.NewTestServer(t, dictsim.Options{Now: frozen, ListLag: 5 * time.Second})
	lc := client(t, lagged.Config)
	r := report(t, lagged, 1)
	if page, err := lc.ListInfractionReports(ctx, dict.ReportQuery{}); err != nil || len(page.Reports) != 0 {
		t.Fatalf("a report just opened, lists lagging 5 s: %+v, %v", page, err)
	}
	if got, err := lc.GetInfractionReport(ctx, r.ID); err != nil || got.ID != r.ID {
		t.Fatalf("a read does not lag: %+v, %v", got, err)
	}
	if _, err := lagged.Advance(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	if page, err := lc.ListInfractionReports(ctx, dict.ReportQuery{}); err != nil || len(page.Reports) != 1 {
		t.Fatalf("5 s later: %+v, %v", page, err)
	}
}

// toldServer is a test server whose violations of the document are
// collected instead of failing the test: violations returns those told
// since its last call.
func toldServer(t *testing.T, opts dictsim.Options) (ts *dictsim.TestServer, violations func() []error) {
	t.Helper()
	var mu sync.Mutex
	var told []error
	opts.OnViolation = func(err error) {
		mu.Lock()
		defer mu.Unlock()
		told = append(told, err)
	}
	return dictsim.NewTestServer(t, opts), func() []error {
		mu.Lock()
		defer mu.Unlock()
		out := told
		told = nil
		return out
	}
}

// TestRequestsAreCheckedAgainstTheDocument: a request that breaks
// dict-api.yaml is refused 400 BadRequest and told; the check can fail.
func TestRequestsAreCheckedAgainstTheDocument(t *testing.T) {
	ts, violations := toldServer(t, dictsim.Options{})
	hc := httpsClient(t, ts.Config)
	resp, err := hc.Get(ts.Config.BaseURL + "/infraction-reports/?Participant=" + dictsim.TestBank + "&Limit=201&Offset=20")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), dict.ErrBadRequest.Type()) {
		t.Errorf("a list beyond the document: %d %s", resp.StatusCode, b)
	}
	if told := violations(); len(told) != 1 || !strings.Contains(told[0].Error(), "Limit") || !strings.Contains(told[0].Error(), "Offset") {
		t.Errorf("told %v", told)
	}
}

// TestListQueriesAreRefusedAsTheSpecSays: a list query the specification
// does not take (a date that is not RFC 3339's date-time, a Limit out of
// the document's range or not a number, a refund list without its
// required ParticipantRole or with a role it does not name) is answered
// 400 with the specification's problem for a malformed request,
// BadRequest, as RFC 7807 in XML, and told once (the refusal itself keeps
// to the document: a list documents its 400). A date RFC 3339 takes that
// time.Parse does not (lower case "t" and "z") filters the list.
func TestListQueriesAreRefusedAsTheSpecSays(t *testing.T) {
	ts, violations := toldServer(t, dictsim.Options{Now: frozen})
	hc := httpsClient(t, ts.Config)
	get := func(t *testing.T, query string) (int, string, string) {
		t.Helper()
		resp, err := hc.Get(ts.Config.BaseURL + query)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, resp.Header.Get("Content-Type"), string(b)
	}
	reports := "/infraction-reports/?Participant=" + dictsim.TestBank
	refunds := "/refunds/?Participant=" + dictsim.TestBank
	for _, tc := range []struct{ name, query, param string }{
		{"a date without its time", reports + "&ModifiedAfter=2026-12-01", "ModifiedAfter"},
		{"a date that is no date", reports + "&ModifiedBefore=yesterday", "ModifiedBefore"},
		{"a comma before the fraction", reports + "&ModifiedAfter=2026-12-01T10:00:00,5Z", "ModifiedAfter"},
		{"an offset of 24 hours", refunds + "&ParticipantRole=CONTESTED&ModifiedBefore=2026-12-01T10:00:00%2B24:00", "ModifiedBefore"},
		{"an offset without its colon", reports + "&ModifiedAfter=2026-12-01T10:00:00%2B0300", "ModifiedAfter"},
		{"a day that is not", refunds + "&ParticipantRole=CONTESTED&ModifiedAfter=2026-02-30T10:00:00Z", "ModifiedAfter"},
		{"a Limit beyond 200", reports + "&Limit=201", "Limit"},
		{"a Limit of 0", refunds + "&ParticipantRole=CONTESTED&Limit=0", "Limit"},
		{"a Limit that is no number", reports + "&Limit=all", "Limit"},
		{"refunds without ParticipantRole", refunds, "ParticipantRole"},
		{"refunds with an unknown ParticipantRole", refunds + "&ParticipantRole=PAYER", "ParticipantRole"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			violations() // those of the cases before
			status, ct, body := get(t, tc.query)
			if status != http.StatusBadRequest || ct != "application/problem+xml" ||
				!strings.Contains(body, "<type>"+dictspec.ProblemTypeBase+"BadRequest</type>") ||
				!strings.Contains(body, "<status>400</status>") || !strings.Contains(body, tc.param) {
				t.Errorf("%d %s %s", status, ct, body)
			}
			if told := violations(); len(told) != 1 || !strings.Contains(told[0].Error(), "query parameter "+tc.param) {
				t.Errorf("told %v", told)
			}
		})
	}

	for i := range 3 {
		if _, err := ts.Advance(10 * time.Second); err != nil {
			t.Fatal(err)
		}
		report(t, ts, i)
	}
	violations()
	// The reports are at 10:00:10, 10:00:20 and 10:00:30.
	status, _, body := get(t, reports+"&ModifiedAfter=2026-12-01t10:00:15z&ModifiedBefore=2026-12-01T07:00:25-03:00")
	if status != http.StatusOK || strings.Count(body, "<InfractionReport>") != 1 || !strings.Contains(body, e2e(1)) {
		t.Errorf("a window in lower case and in another offset: %d %s", status, body)
	}
	if told := violations(); len(told) != 0 {
		t.Errorf("told %v", told)
	}
}

// TestAnswersAreCheckedAgainstTheDocument: an answer of the simulator that
// breaks dict-api.yaml is told (so the tests that drive it fail on its
// defects); one a hook sends unchecked or not signed by the DICT is not.
func TestAnswersAreCheckedAgainstTheDocument(t *testing.T) {
	ts, violations := toldServer(t, dictsim.Options{})
	c := client(t, ts.Config)
	rep := report(t, ts, 1)
	for _, mode := range []string{"checked", "unchecked", "unsigned"} {
		ts.SetAnswerHook(func(_ *dictsim.Exchange, model func() dictsim.Answer) dictsim.Answer {
			a := model()
			a.Body.FindElement("//Status").SetText("OPENED")
			a.Unchecked = mode == "unchecked"
			if mode == "unsigned" {
				a.Sign = dictsim.SignNone
			}
			return a
		})
		_, _ = c.GetInfractionReport(context.Background(), rep.ID)
	}
	if told := violations(); len(told) != 1 || !strings.Contains(told[0].Error(), "OPENED") {
		t.Errorf("told %v", told)
	}
}

// TestAPlainHandler: served without TLS (behind a proxy, or in a test),
// the simulator takes the participant the request names, if it knows it.
func TestAPlainHandler(t *testing.T) {
	ts := dictsim.NewTestServer(t, dictsim.Options{})
	h := ts.Handler()
	for ispb, want := range map[string]int{dictsim.TestBank: http.StatusOK, thirdISPB: http.StatusForbidden} {
		r := httptest.NewRequest(http.MethodGet, "/api/v1/policies/", nil)
		r.Header.Set("PI-RequestingParticipant", ispb)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != want {
			t.Errorf("policies asked by %s: %d %s", ispb, w.Code, w.Body)
		}
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/elsewhere/policies/", nil))
	if w.Code != http.StatusNotFound {
		t.Errorf("outside the base path: %d", w.Code)
	}
}

// TestControlRoutes drives the behaviours through ControlHandler's JSON
// routes, as a tool beside a served simulator would.
func TestControlRoutes(t *testing.T) {
	ts := dictsim.NewTestServer(t, dictsim.Options{Now: frozen})
	ctl := httptest.NewServer(ts.ControlHandler())
	t.Cleanup(ctl.Close)
	call := func(method, path, body string, wantStatus int, into any) {
		t.Helper()
		req, err := http.NewRequest(method, ctl.URL+path, bytes.NewBufferString(body))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != wantStatus {
			t.Fatalf("%s %s: %d %s, want %d", method, path, resp.StatusCode, b, wantStatus)
		}
		if into != nil {
			if err := json.Unmarshal(b, into); err != nil {
				t.Fatalf("%s %s: %s: %v", method, path, b, err)
			}
		}
	}
	var opened struct {
		InfractionReport dict.InfractionReport `json:"infraction_report"`
	}
	call("POST", "/sim/infraction-reports", fmt.Sprintf(`{"end_to_end_id":%q,"amount_cents":20000,"debited":%q,"credited":%q,"details":"golpe"}`,
		e2e(1), dictsim.TestPayer, dictsim.TestBank), http.StatusCreated, &opened)
	rep := opened.InfractionReport
	if rep.Status != dict.ReportOpen || rep.TransactionID != e2e(1) || rep.CreditedParticipant != dictsim.TestBank {
		t.Fatalf("opened %+v", rep)
	}
	var errBody struct {
		Error struct{ Code, Message string }
	}
	call("POST", "/sim/infraction-reports", fmt.Sprintf(`{"end_to_end_id":%q,"amount_cents":1,"debited":%q,"credited":%q}`,
		e2e(1), dictsim.TestPayer, dictsim.TestBank), http.StatusConflict, &errBody)
	if errBody.Error.Code != "InfractionReportAlreadyBeingProcessedForTransaction" {
		t.Errorf("a second report: %+v", errBody)
	}
	call("POST", "/sim/infraction-reports", `{"end_to_end_id":"x","amont_cents":1}`, http.StatusBadRequest, &errBody)
	call("GET", "/sim/infraction-reports/"+uuid.NewString(), "", http.StatusNotFound, nil)
	call("POST", "/sim/refunds", fmt.Sprintf(`{"infraction_report_id":%q}`, rep.ID), http.StatusConflict, &errBody)
	if errBody.Error.Code != "RefundInfractionReportNotFound" {
		t.Errorf("a refund request of an open report: %+v", errBody)
	}

	c := client(t, ts.Config)
	ackAndClose(t, c, rep.ID, dict.Agreed)
	var ref struct{ Refund dict.Refund }
	call("POST", "/sim/refunds", fmt.Sprintf(`{"infraction_report_id":%q,"amount_cents":5000}`, rep.ID), http.StatusCreated, &ref)
	if ref.Refund.RefundAmount != 5000 || ref.Refund.Status != dict.RefundOpen {
		t.Fatalf("refund request %+v", ref.Refund)
	}
	call("GET", "/sim/refunds/"+ref.Refund.ID, "", http.StatusOK, &ref)
	call("POST", "/sim/refunds/"+ref.Refund.ID+"/cancel", "", http.StatusOK, &ref)
	if ref.Refund.Status != dict.RefundCancelled {
		t.Errorf("cancelled %+v", ref.Refund)
	}
	var refunds struct{ Refunds []dict.Refund }
	call("GET", "/sim/refunds", "", http.StatusOK, &refunds)
	if len(refunds.Refunds) != 1 {
		t.Errorf("refunds %+v", refunds)
	}
	call("POST", "/sim/infraction-reports/"+rep.ID+"/cancel", "", http.StatusOK, &opened)
	if opened.InfractionReport.Status != dict.ReportCancelled {
		t.Errorf("cancelled %+v", opened.InfractionReport)
	}
	var reports struct {
		InfractionReports []dict.InfractionReport `json:"infraction_reports"`
	}
	call("GET", "/sim/infraction-reports", "", http.StatusOK, &reports)
	if len(reports.InfractionReports) != 1 || reports.InfractionReports[0].ID != rep.ID {
		t.Errorf("reports %+v", reports)
	}

	call("PUT", "/sim/lost-answers", `{"count":2,"how":"gateway_timeout"}`, http.StatusNoContent, nil)
	call("PUT", "/sim/rate-limit-storm", `{"for":"30s"}`, http.StatusNoContent, nil)
	call("PUT", "/sim/outage", `{"for":"1m","status":500}`, http.StatusNoContent, nil)
	call("PUT", "/sim/outage", `{"for":"soon"}`, http.StatusBadRequest, nil)
	var faults dictsim.FaultsView
	call("GET", "/sim/faults", "", http.StatusOK, &faults)
	if faults.LoseAnswers != 2 || faults.LoseHow != dictsim.LossGatewayTimeout || faults.RateLimitStormUntil == nil || faults.OutageStatus != 500 {
		t.Errorf("faults %+v", faults)
	}
	call("DELETE", "/sim/lost-answers", "", http.StatusNoContent, nil)
	call("DELETE", "/sim/rate-limit-storm", "", http.StatusNoContent, nil)
	call("DELETE", "/sim/outage", "", http.StatusNoContent, nil)
	faults = dictsim.FaultsView{}
	call("GET", "/sim/faults", "", http.StatusOK, &faults)
	if faults != (dictsim.FaultsView{}) {
		t.Errorf("faults cleared %+v", faults)
	}
	var clock struct{ Now time.Time }
	call("POST", "/sim/clock/advance", `{"by":"168h"}`, http.StatusOK, &clock)
	if !clock.Now.Equal(frozen().Add(7 * 24 * time.Hour)) {
		t.Errorf("advanced to %s", clock.Now)
	}
	call("POST", "/sim/clock/advance", `{"by":"-1h"}`, http.StatusBadRequest, nil)
	var calls struct{ Calls map[string]int }
	call("GET", "/sim/calls", "", http.StatusOK, &calls)
	if calls.Calls["closeInfractionReport"] != 1 {
		t.Errorf("calls %v", calls.Calls)
	}
	call("GET", "/healthz", "", http.StatusOK, nil)
}

// TestAnswersCarryCorrelationIDs: each answer its own CorrelationId, as
// the log of a call is found by it.
func TestAnswersCarryCorrelationIDs(t *testing.T) {
	ts := dictsim.NewTestServer(t, dictsim.Options{})
	var mu sync.Mutex
	var seen []string
	ts.SetAnswerHook(func(_ *dictsim.Exchange, model func() dictsim.Answer) dictsim.Answer {
		a := model()
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, a.Body.SelectElement("CorrelationId").Text())
		return a
	})
	c := client(t, ts.Config)
	rep := report(t, ts, 1)
	for range 3 {
		if _, err := c.GetInfractionReport(context.Background(), rep.ID); err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if distinct := slices.Compact(slices.Sorted(slices.Values(seen))); len(seen) != 3 || len(distinct) != 3 {
		t.Errorf("correlation ids %v", seen)
	}
}
