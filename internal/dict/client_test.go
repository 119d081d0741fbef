package dict_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/beevik/etree"
	"github.com/google/uuid"

	"github.com/pixbank/pix/internal/dict"
	"github.com/pixbank/pix/internal/dict/dictspec"
	"github.com/pixbank/pix/internal/tooling/dictsim"
)

// The client's calls, against the DICT simulator served over mutual TLS
// (dictsim.NewTestServer): it checks every request the client sends
// against the facts document (dictspec) and the bank's signature, keeps
// infraction reports and refund requests as the specification describes
// them, and answers in XML signed by the DICT's key, each answer checked
// against the document too (a violation fails the test). Its answer hook
// lets a test answer otherwise (a problem, a 429, an unsigned or tampered
// answer), and LoseAnswers loses an answer.

const (
	bankISPB  = dictsim.TestBank
	payerISPB = dictsim.TestPayer
)

const devolucao = "D1234567820261201100000000000001"

// frozen is a fixed clock for the simulator: its times move only with
// Advance.
func frozen() time.Time { return time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC) }

func newDICT(t *testing.T, opts dictsim.Options) *dictsim.TestServer {
	t.Helper()
	return dictsim.NewTestServer(t, opts)
}

func newClient(t *testing.T, cfg dict.Config) *dict.HTTPClient {
	t.Helper()
	c, err := dict.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// pixes numbers the tests' PIX: each report is of a PIX of its own (the
// DICT takes one report of a PIX at a time).
var pixes atomic.Int64

func nextE2E() string { return fmt.Sprintf("E99999010202612011000%011d", pixes.Add(1)) }

// openReport opens a report the payer makes against a PIX of R$ 200,00
// the bank credited, and brings it to status through c (OPEN or
// ACKNOWLEDGED).
func openReport(t *testing.T, ts *dictsim.TestServer, c *dict.HTTPClient, status dict.InfractionReportStatus) dict.InfractionReport {
	t.Helper()
	r, err := ts.OpenReport(dictsim.NewReport{
		EndToEndID: nextE2E(), Amount: 20000, Debited: payerISPB, Credited: bankISPB,
		Details: "QR Code falso em boleto",
	})
	if err != nil {
		t.Fatal(err)
	}
	if status == dict.ReportAcknowledged {
		if r, err = c.AcknowledgeInfractionReport(context.Background(), r.ID); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

// openRefund opens a refund request of R$ 200,00, the whole PIX, once the
// bank agreed (through c) with the report of a PIX of its own.
func openRefund(t *testing.T, ts *dictsim.TestServer, c *dict.HTTPClient) dict.Refund {
	t.Helper()
	rep := openReport(t, ts, c, dict.ReportAcknowledged)
	if _, err := c.CloseInfractionReport(context.Background(), rep.ID, dict.Agreed, "Valor bloqueado."); err != nil {
		t.Fatal(err)
	}
	r, err := ts.OpenRefund(dictsim.NewRefund{InfractionReportID: rep.ID, Amount: 20000})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// hook makes the simulator answer every request as h says.
func hook(ts *dictsim.TestServer, h func(x *dictsim.Exchange, model func() dictsim.Answer) dictsim.Answer) {
	ts.SetAnswerHook(h)
}

// answer makes the simulator answer every request a (a new copy each time).
func answer(ts *dictsim.TestServer, a func() dictsim.Answer) {
	ts.SetAnswerHook(func(*dictsim.Exchange, func() dictsim.Answer) dictsim.Answer { return a() })
}

func mustSpec(t *testing.T) *dictspec.Spec {
	t.Helper()
	spec, err := dictspec.Load()
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

// TestEveryOperationKeepsToTheFactsDocument calls each operation of the
// client against the DICT simulator, which checks every request (path,
// method, parameters, element names, enumerations, the bank's signature)
// and every answer against dict-api.yaml; and every operation of the
// document is called.
func TestEveryOperationKeepsToTheFactsDocument(t *testing.T) {
	ts := newDICT(t, dictsim.Options{})
	c := newClient(t, ts.Config)
	ctx := context.Background()

	rep := openReport(t, ts, c, dict.ReportOpen)
	page, err := c.ListInfractionReports(ctx, dict.ReportQuery{
		Role: dict.Credited, Status: []dict.InfractionReportStatus{dict.ReportOpen, dict.ReportAcknowledged},
		ModifiedAfter: rep.LastModified.Add(-time.Minute), ModifiedBefore: rep.LastModified.Add(time.Minute),
		Limit: 50, IncludeDetails: true, IncludeIndirectParticipants: true,
	})
	if err != nil || len(page.Reports) != 1 || page.Reports[0].ID != rep.ID || page.HasMoreElements {
		t.Fatalf("list reports: %+v, %v", page, err)
	}
	got := page.Reports[0]
	if got.TransactionID != rep.TransactionID || got.Status != dict.ReportOpen || got.CreditedParticipant != bankISPB ||
		got.InfractionType != dict.InfractionFraud || !got.LastModified.Equal(rep.LastModified) {
		t.Errorf("listed report %+v, want %+v", got, rep)
	}
	if _, err := c.ListInfractionReports(ctx, dict.ReportQuery{Role: dict.Debited}); err != nil {
		t.Errorf("list reports as the debited: %v", err)
	}
	if _, err := c.ListInfractionReports(ctx, dict.ReportQuery{}); err != nil {
		t.Errorf("list reports of either party: %v", err)
	}
	ack, err := c.AcknowledgeInfractionReport(ctx, rep.ID)
	if err != nil || ack.Status != dict.ReportAcknowledged {
		t.Fatalf("acknowledge: %+v, %v", ack, err)
	}
	closed, err := c.CloseInfractionReport(ctx, rep.ID, dict.Agreed, "Valor bloqueado.")
	if err != nil || closed.Status != dict.ReportClosed || closed.AnalysisResult != dict.Agreed || closed.AnalysisDetails != "Valor bloqueado." {
		t.Fatalf("close: %+v, %v", closed, err)
	}
	read, err := c.GetInfractionReport(ctx, rep.ID)
	if err != nil || read.Status != dict.ReportClosed {
		t.Fatalf("get: %+v, %v", read, err)
	}

	ref, err := ts.OpenRefund(dictsim.NewRefund{InfractionReportID: rep.ID, Amount: 20000})
	if err != nil {
		t.Fatal(err)
	}
	rp, err := c.ListRefunds(ctx, dict.RefundQuery{Status: []dict.RefundStatus{dict.RefundOpen}, ModifiedAfter: ref.LastModified, Limit: 10, IncludeDetails: true})
	if err != nil || len(rp.Refunds) != 1 || rp.Refunds[0].ID != ref.ID || rp.Refunds[0].RefundAmount != 20000 {
		t.Fatalf("list refunds: %+v, %v", rp, err)
	}
	if _, err := c.ListRefunds(ctx, dict.RefundQuery{Role: dict.RoleRequesting}); err != nil {
		t.Errorf("list refunds as the requester: %v", err)
	}
	gr, err := c.GetRefund(ctx, ref.ID)
	if err != nil || gr.Status != dict.RefundOpen || gr.InfractionReportID != ref.InfractionReportID {
		t.Fatalf("get refund: %+v, %v", gr, err)
	}
	cr, err := c.CloseRefund(ctx, ref.ID, dict.RefundClosing{Result: dict.TotallyAccepted, Details: "Valor devolvido.", RefundTransactionID: devolucao})
	if err != nil || cr.Status != dict.RefundClosed || cr.AnalysisResult != dict.TotallyAccepted || cr.RefundTransactionID != devolucao {
		t.Fatalf("close refund: %+v, %v", cr, err)
	}
	rejected := openRefund(t, ts, c)
	if _, err := c.CloseRefund(ctx, rejected.ID, dict.RefundClosing{Result: dict.Rejected, RejectionReason: dict.RejectionNoBalance}); err != nil {
		t.Fatalf("close refund rejected: %v", err)
	}

	buckets, err := c.Buckets(ctx)
	if err != nil || buckets.Category != dictsim.DefaultCategory || len(buckets.Buckets) != len(mustSpec(t).Policies()) {
		t.Fatalf("buckets: %+v, %v", buckets, err)
	}
	b, err := c.Bucket(ctx, dict.PolicyInfractionReportsWrite)
	if err != nil || b.Name != dict.PolicyInfractionReportsWrite || b.Capacity != 36000 {
		t.Fatalf("bucket: %+v, %v", b, err)
	}

	calls := ts.Calls()
	for _, op := range mustSpec(t).Operations() {
		if calls[op.ID] == 0 {
			t.Errorf("%s (%s) of the facts document was never called", op, op.ID)
		}
	}
}

// TestPoliciesBaseIsItsOwn: the policies are read from PoliciesURL, the
// rest from BaseURL.
func TestPoliciesBaseIsItsOwn(t *testing.T) {
	ts := newDICT(t, dictsim.Options{})
	cfg := ts.Config
	cfg.BaseURL = ts.Server.URL + "/elsewhere"
	cfg.PoliciesURL = ts.Config.BaseURL
	c := newClient(t, cfg)
	if _, err := c.Buckets(context.Background()); err != nil {
		t.Fatalf("buckets from the policies' base: %v", err)
	}
}

// TestWalkHandsEachItemOnce walks lists of many pages whose boundaries
// fall inside instants shared by several items (ModifiedAfter is >=):
// each item is handed once, in LastModified order, and the walk returns
// the last one's LastModified.
func TestWalkHandsEachItemOnce(t *testing.T) {
	ts := newDICT(t, dictsim.Options{Now: frozen})
	c := newClient(t, ts.Config)
	ctx := context.Background()
	start := ts.Now()
	var want []string
	for i := range 47 {
		if i%3 == 0 {
			// Three reports per instant (two at the last).
			if _, err := ts.Advance(time.Second); err != nil {
				t.Fatal(err)
			}
		}
		want = append(want, openReport(t, ts, c, dict.ReportOpen).ID)
	}
	// The bank is debited: not in a credited list.
	if _, err := ts.OpenReport(dictsim.NewReport{EndToEndID: nextE2E(), Amount: 1, Debited: bankISPB, Credited: payerISPB}); err != nil {
		t.Fatal(err)
	}

	var got []string
	var last time.Time
	end, err := c.WalkInfractionReports(ctx, dict.ReportQuery{Role: dict.Credited, ModifiedAfter: start, Limit: 7}, func(r dict.InfractionReport) error {
		if r.LastModified.Before(last) {
			t.Errorf("%s modified %s after one of %s", r.ID, r.LastModified, last)
		}
		last = r.LastModified
		got = append(got, r.ID)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(want)
	sorted := slices.Sorted(slices.Values(got))
	if !slices.Equal(sorted, want) {
		t.Fatalf("walk handed %d reports (%d distinct wanted): %v", len(got), len(want), got)
	}
	if !end.Equal(last) {
		t.Errorf("walk ended at %s, last report modified %s", end, last)
	}
	if pages := ts.Calls()["listInfractionReport"]; pages < 47/7 {
		t.Errorf("%d pages for 47 reports of 7 a page", pages)
	}

	for range 47 {
		if _, err := ts.Advance(time.Second); err != nil {
			t.Fatal(err)
		}
		openRefund(t, ts, c)
	}
	var refunds int
	if _, err := c.WalkRefunds(ctx, dict.RefundQuery{Limit: 5}, func(dict.Refund) error { refunds++; return nil }); err != nil || refunds != 47 {
		t.Fatalf("walk refunds: %d handed, %v", refunds, err)
	}

	// An error of fn stops the walk where it is.
	stop := errors.New("stop")
	n := 0
	if _, err := c.WalkInfractionReports(ctx, dict.ReportQuery{Role: dict.Credited}, func(dict.InfractionReport) error {
		if n++; n == 10 {
			return stop
		}
		return nil
	}); !errors.Is(err, stop) || n != 10 {
		t.Fatalf("walk after fn's error: %d handed, %v", n, err)
	}
}

// TestPagingIsAskedBeforeEveryPageOfAWalk: a query's Paging is asked
// before each page a walk requests, those of a crowded instant (more items
// modified at it than a page holds, listed one status at a time) too; its
// error stops the walk before that request, with that error, every item of
// the pages before handed.
func TestPagingIsAskedBeforeEveryPageOfAWalk(t *testing.T) {
	ts := newDICT(t, dictsim.Options{Now: frozen})
	c := newClient(t, ts.Config)
	ctx := context.Background()
	for range 5 { // at one instant: 10 reports (5 OPEN, 5 CLOSED), 5 refund requests
		openReport(t, ts, c, dict.ReportOpen)
		openRefund(t, ts, c)
	}
	if _, err := ts.Advance(time.Second); err != nil {
		t.Fatal(err)
	}
	openReport(t, ts, c, dict.ReportOpen)
	openRefund(t, ts, c)
	low := errors.New("the bucket is low")
	for name, walk := range map[string]func(paging func() error) (int, error){
		"reports": func(paging func() error) (int, error) {
			n := 0
			_, err := c.WalkInfractionReports(ctx, dict.ReportQuery{Role: dict.Credited, ModifiedAfter: frozen(), Limit: 3, Paging: paging},
				func(dict.InfractionReport) error { n++; return nil })
			return n, err
		},
		"refunds": func(paging func() error) (int, error) {
			n := 0
			_, err := c.WalkRefunds(ctx, dict.RefundQuery{ModifiedAfter: frozen(), Limit: 3, Paging: paging}, func(dict.Refund) error { n++; return nil })
			return n, err
		},
	} {
		sent := func() int { calls := ts.Calls(); return calls["listInfractionReport"] + calls["listRefund"] }
		before, asked := sent(), 0
		if _, err := walk(func() error { asked++; return nil }); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		// Two pages of 3 at the instant, one a status there, the rest.
		if pages := sent() - before; asked != pages || pages < 6 {
			t.Fatalf("%s: Paging asked %d times for %d pages", name, asked, pages)
		}
		before, asked = sent(), 0
		n, err := walk(func() error {
			if asked++; asked > 2 {
				return low
			}
			return nil
		})
		// The third page is the instant's first: never requested.
		if !errors.Is(err, low) || n != 3 || asked != 3 || sent()-before != 2 {
			t.Fatalf("%s: %d handed, asked %d times, %d pages, %v; want 3 handed, the instant's pages never requested", name, n, asked, sent()-before, err)
		}
	}
}

// TestAnswersNotSignedByTheDICTAreNotAccepted: a tampered answer, one
// signed by another certificate, an unsigned one, one that is not XML:
// each is ErrUnverifiedAnswer, never taken, whatever it says; so is a
// refusal (a problem) that is not signed.
func TestAnswersNotSignedByTheDICTAreNotAccepted(t *testing.T) {
	ts := newDICT(t, dictsim.Options{})
	c := newClient(t, ts.Config)
	ctx := context.Background()
	rep := openReport(t, ts, c, dict.ReportOpen)
	for _, tc := range []struct {
		name   string
		mode   dictsim.SignMode
		raw    []byte
		reason string
	}{
		{"tampered", dictsim.SignTampered, nil, "signature invalid"},
		{"wrong certificate", dictsim.SignForeign, nil, "signature invalid"},
		{"unsigned", dictsim.SignNone, nil, "unsigned"},
		{"not xml", dictsim.SignDICT, []byte("<html>gateway"), "not XML"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hook(ts, func(_ *dictsim.Exchange, model func() dictsim.Answer) dictsim.Answer {
				a := model()
				a.Sign, a.Raw = tc.mode, tc.raw
				return a
			})
			got, err := c.GetInfractionReport(ctx, rep.ID)
			var se *dict.SignatureError
			if !errors.Is(err, dict.ErrUnverifiedAnswer) || !errors.As(err, &se) || se.Reason != tc.reason || dict.Classify(err) != dict.Unverified {
				t.Fatalf("answer %s: %+v, %v (class %s)", tc.name, got, err, dict.Classify(err))
			}
			if got != (dict.InfractionReport{}) {
				t.Errorf("a report was returned: %+v", got)
			}
		})
	}
	t.Run("unsigned problem", func(t *testing.T) {
		answer(ts, func() dictsim.Answer {
			a := dictsim.ProblemAnswer(http.StatusNotFound, "NotFound", "no such report")
			a.Sign = dictsim.SignNone
			return a
		})
		_, err := c.GetInfractionReport(ctx, rep.ID)
		if errors.Is(err, dict.ErrNotFound) || dict.Classify(err) != dict.Unverified {
			t.Fatalf("unsigned 404: %v (class %s)", err, dict.Classify(err))
		}
	})
	t.Run("tampered problem", func(t *testing.T) {
		answer(ts, func() dictsim.Answer {
			a := dictsim.ProblemAnswer(http.StatusNotFound, "NotFound", "no such report")
			a.Sign = dictsim.SignTampered
			return a
		})
		_, err := c.GetInfractionReport(ctx, rep.ID)
		if errors.Is(err, dict.ErrForbidden) || errors.Is(err, dict.ErrNotFound) || dict.Classify(err) != dict.Unverified {
			t.Fatalf("tampered 404: %v (class %s)", err, dict.Classify(err))
		}
	})
}

// TestTheDICTRefusesAnotherSigningCertificate: requests signed by a key
// the DICT does not know for the bank get RequestSignatureInvalid, a
// refusal, not a retry.
func TestTheDICTRefusesAnotherSigningCertificate(t *testing.T) {
	ts := newDICT(t, dictsim.Options{})
	rep := openReport(t, ts, nil, dict.ReportOpen)
	cfg := ts.Config
	cfg.SigningCertFile, cfg.SigningKeyFile = ts.ForeignCertFile, ts.ForeignKeyFile
	_, err := newClient(t, cfg).AcknowledgeInfractionReport(context.Background(), rep.ID)
	if !errors.Is(err, dict.ErrRequestSignatureInvalid) || dict.Classify(err) != dict.Refused || dict.Classify(err).Retryable() {
		t.Fatalf("acknowledge signed by another key: %v (class %s)", err, dict.Classify(err))
	}
}

// TestEveryProblemTypeIsClassified: each problem type of the document,
// signed, is its declared error and a refusal; 429 is RateLimited; 5xx
// are unknown outcomes; a type the specification does not declare is a
// refusal by its status, never taken for a declared one.
func TestEveryProblemTypeIsClassified(t *testing.T) {
	ts := newDICT(t, dictsim.Options{})
	c := newClient(t, ts.Config)
	ctx := context.Background()
	rep := openReport(t, ts, c, dict.ReportAcknowledged)
	problems := dict.DeclaredProblems()
	status := map[string]int{
		"NotFound": http.StatusNotFound, "Forbidden": http.StatusForbidden,
		"RateLimited": http.StatusTooManyRequests, "InternalServerError": http.StatusInternalServerError,
		"ServiceUnavailable": http.StatusServiceUnavailable,
	}
	for _, full := range mustSpec(t).ProblemTypes() {
		name := strings.TrimPrefix(full, dictspec.ProblemTypeBase)
		t.Run(name, func(t *testing.T) {
			code, ok := status[name]
			if !ok {
				code = http.StatusBadRequest
			}
			answer(ts, func() dictsim.Answer { return dictsim.ProblemAnswer(code, name, "as the test says") })
			_, err := c.CloseInfractionReport(ctx, rep.ID, dict.Disagreed, "")
			declared := problems[full]
			var pe *dict.ProblemError
			if declared == nil || !errors.Is(err, declared) || !errors.As(err, &pe) || pe.Type != full || pe.StatusCode != code {
				t.Fatalf("%s: %v; declared %v", name, err, declared)
			}
			for other := range maps.Values(problems) {
				if other != declared && errors.Is(err, other) && !(other == dict.ErrRateLimited && code == http.StatusTooManyRequests) {
					t.Errorf("%s is also %s", name, other.Name())
				}
			}
			want := dict.Refused
			switch {
			case code == http.StatusTooManyRequests:
				want = dict.RateLimited
			case code >= 500:
				want = dict.Unknown
			}
			if got := dict.Classify(err); got != want || got.Retryable() != (want != dict.Refused) {
				t.Errorf("%s classified %s, want %s", name, got, want)
			}
			if want == dict.Unknown && !errors.Is(err, dict.ErrUnknownOutcome) {
				t.Errorf("%s is not ErrUnknownOutcome", name)
			}
		})
	}
	t.Run("undeclared type", func(t *testing.T) {
		answer(ts, func() dictsim.Answer {
			a := dictsim.ProblemAnswer(http.StatusNotFound, "SomethingNew", "another API's type")
			a.Body.SelectElement("type").SetText("https://pix.bcb.gov.br/api/v2/error/NotFound")
			return a
		})
		_, err := c.GetInfractionReport(ctx, rep.ID)
		var pe *dict.ProblemError
		if !errors.As(err, &pe) || pe.Problem != nil || errors.Is(err, dict.ErrNotFound) || dict.Classify(err) != dict.Refused {
			t.Fatalf("undeclared problem: %v (class %s)", err, dict.Classify(err))
		}
	})
	t.Run("gateway 502 without a problem", func(t *testing.T) {
		answer(ts, func() dictsim.Answer {
			return dictsim.Answer{Status: http.StatusBadGateway, Raw: []byte("bad gateway")}
		})
		_, err := c.AcknowledgeInfractionReport(ctx, rep.ID)
		if !errors.Is(err, dict.ErrUnknownOutcome) || dict.Classify(err) != dict.Unknown {
			t.Fatalf("502: %v (class %s)", err, dict.Classify(err))
		}
	})
}

// TestRateLimited: a 429 is RateLimited, retryable after Retry-After, or,
// without one, after the operation's bucket refills one token (the
// specification's table); it needs no signature.
func TestRateLimited(t *testing.T) {
	ts := newDICT(t, dictsim.Options{})
	c := newClient(t, ts.Config)
	ctx := context.Background()
	rep := openReport(t, ts, c, dict.ReportOpen)
	for _, tc := range []struct {
		name       string
		retryAfter string
		call       func() error
		want       time.Duration
	}{
		{"retry-after seconds", "3", func() error { _, err := c.AcknowledgeInfractionReport(ctx, rep.ID); return err }, 3 * time.Second},
		{"list with role, no retry-after", "", func() error {
			_, err := c.ListInfractionReports(ctx, dict.ReportQuery{Role: dict.Credited})
			return err
		}, 1500 * time.Millisecond},
		{"list without role", "", func() error { _, err := c.ListInfractionReports(ctx, dict.ReportQuery{}); return err }, 6 * time.Second},
		{"write", "", func() error { _, err := c.CloseInfractionReport(ctx, rep.ID, dict.Agreed, ""); return err }, 50 * time.Millisecond},
		{"refunds list", "", func() error { _, err := c.ListRefunds(ctx, dict.RefundQuery{}); return err }, 1500 * time.Millisecond},
		{"retry-after date", time.Now().Add(2 * time.Minute).UTC().Format(http.TimeFormat), func() error { _, err := c.GetRefund(ctx, uuid.NewString()); return err }, 2 * time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			answer(ts, func() dictsim.Answer {
				a := dictsim.ProblemAnswer(http.StatusTooManyRequests, "RateLimited", "")
				a.Sign = dictsim.SignNone
				if tc.retryAfter != "" {
					a.Header = http.Header{"Retry-After": {tc.retryAfter}}
				}
				return a
			})
			err := tc.call()
			d, ok := dict.RetryAfter(err)
			if !errors.Is(err, dict.ErrRateLimited) || dict.Classify(err) != dict.RateLimited || !ok {
				t.Fatalf("429: %v (class %s)", err, dict.Classify(err))
			}
			// An HTTP date is read against the clock: within seconds of it.
			if d > tc.want || d < tc.want-5*time.Second || !strings.Contains(tc.name, "date") && d != tc.want {
				t.Errorf("retry after %s, want %s", d, tc.want)
			}
		})
	}
	t.Run("503 retry-after", func(t *testing.T) {
		answer(ts, func() dictsim.Answer {
			a := dictsim.ProblemAnswer(http.StatusServiceUnavailable, "ServiceUnavailable", "maintenance")
			a.Header = http.Header{"Retry-After": {"120"}}
			return a
		})
		_, err := c.GetInfractionReport(ctx, rep.ID)
		if d, ok := dict.RetryAfter(err); !ok || d != 2*time.Minute || dict.Classify(err) != dict.Unknown || !errors.Is(err, dict.ErrServiceUnavailable) {
			t.Fatalf("503: %v, retry after %s", err, d)
		}
	})
}

// TestLostAnswersAreReadBack: the DICT does an acknowledge, a close, a
// refund's close, and the answer is lost (the connection cut): the call is
// an unknown outcome; the read-back shows it done; the same request sent
// again gets the same answer (the specification's idempotency), and a
// different close is refused as ...OperationInvalid.
func TestLostAnswersAreReadBack(t *testing.T) {
	ts := newDICT(t, dictsim.Options{})
	c := newClient(t, ts.Config)
	ctx := context.Background()
	rep := openReport(t, ts, c, dict.ReportOpen)

	lose := func(call func() error) {
		t.Helper()
		if err := ts.LoseAnswers(1, dictsim.LossCut); err != nil {
			t.Fatal(err)
		}
		err := call()
		if dict.Classify(err) != dict.Unknown || !errors.Is(err, dict.ErrUnknownOutcome) {
			t.Fatalf("lost answer: %v (class %s)", err, dict.Classify(err))
		}
	}

	lose(func() error { _, err := c.AcknowledgeInfractionReport(ctx, rep.ID); return err })
	if r, err := c.GetInfractionReport(ctx, rep.ID); err != nil || r.Status != dict.ReportAcknowledged {
		t.Fatalf("read back after a lost acknowledge: %+v, %v", r, err)
	}
	if r, err := c.AcknowledgeInfractionReport(ctx, rep.ID); err != nil || r.Status != dict.ReportAcknowledged {
		t.Fatalf("acknowledge again: %+v, %v", r, err)
	}

	lose(func() error { _, err := c.CloseInfractionReport(ctx, rep.ID, dict.Agreed, "bloqueado"); return err })
	r, err := c.GetInfractionReport(ctx, rep.ID)
	if err != nil || r.Status != dict.ReportClosed || r.AnalysisResult != dict.Agreed {
		t.Fatalf("read back after a lost close: %+v, %v", r, err)
	}
	if r, err := c.CloseInfractionReport(ctx, rep.ID, dict.Agreed, "bloqueado"); err != nil || r.Status != dict.ReportClosed {
		t.Fatalf("the same close again: %+v, %v", r, err)
	}
	if _, err := c.CloseInfractionReport(ctx, rep.ID, dict.Disagreed, ""); !errors.Is(err, dict.ErrInfractionReportOperationInvalid) || dict.Classify(err) != dict.Refused {
		t.Fatalf("another close: %v", err)
	}
	if _, err := c.AcknowledgeInfractionReport(ctx, rep.ID); !errors.Is(err, dict.ErrInfractionReportOperationInvalid) {
		t.Fatalf("acknowledge of a closed report: %v", err)
	}

	ref := openRefund(t, ts, c)
	closing := dict.RefundClosing{Result: dict.PartiallyAccepted, Details: "parte devolvida", RefundTransactionID: devolucao}
	lose(func() error { _, err := c.CloseRefund(ctx, ref.ID, closing); return err })
	got, err := c.GetRefund(ctx, ref.ID)
	if err != nil || got.Status != dict.RefundClosed || got.AnalysisResult != dict.PartiallyAccepted || got.RefundTransactionID != devolucao {
		t.Fatalf("read back after a lost refund close: %+v, %v", got, err)
	}
	if got, err := c.CloseRefund(ctx, ref.ID, closing); err != nil || got.Status != dict.RefundClosed {
		t.Fatalf("the same refund close again: %+v, %v", got, err)
	}
	closing.Result = dict.TotallyAccepted
	if _, err := c.CloseRefund(ctx, ref.ID, closing); !errors.Is(err, dict.ErrRefundOperationInvalid) || dict.Classify(err) != dict.Refused {
		t.Fatalf("another refund close: %v", err)
	}
}

// TestTransportFailuresAreUnknownOutcomes: a DICT that does not answer in
// time, or is not there, leaves the outcome unknown; a caller's
// cancellation is its own.
func TestTransportFailuresAreUnknownOutcomes(t *testing.T) {
	ts := newDICT(t, dictsim.Options{})
	cfg := ts.Config
	cfg.Timeout = 200 * time.Millisecond
	c := newClient(t, cfg)
	rep := openReport(t, ts, c, dict.ReportOpen)
	release := make(chan struct{})
	hook(ts, func(_ *dictsim.Exchange, model func() dictsim.Answer) dictsim.Answer {
		<-release
		return model()
	})
	_, err := c.AcknowledgeInfractionReport(context.Background(), rep.ID)
	// Released, the hook lets every request through.
	close(release)
	if !errors.Is(err, dict.ErrUnknownOutcome) || dict.Classify(err) != dict.Unknown {
		t.Fatalf("timeout: %v (class %s)", err, dict.Classify(err))
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.GetInfractionReport(ctx, rep.ID); errors.Is(err, dict.ErrUnknownOutcome) || !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}

	ts.Server.Close()
	if _, err := c.GetInfractionReport(context.Background(), rep.ID); !errors.Is(err, dict.ErrUnknownOutcome) {
		t.Fatalf("server gone: %v", err)
	}
}

// TestMutualTLS: a client whose certificate the DICT does not trust gets
// no answer.
func TestMutualTLS(t *testing.T) {
	ts := newDICT(t, dictsim.Options{})
	cfg := ts.Config
	cfg.CertFile, cfg.KeyFile = ts.ForeignCertFile, ts.ForeignKeyFile
	c := newClient(t, cfg)
	if _, err := c.Buckets(context.Background()); err == nil || dict.Classify(err) != dict.Unknown {
		t.Fatalf("a stranger's certificate: %v", err)
	}
	if n := ts.Calls()["bucketStates"]; n != 0 {
		t.Fatalf("the DICT served a stranger %d times", n)
	}
}

// TestRequestsNotSent: what the client knows to be invalid is never sent.
func TestRequestsNotSent(t *testing.T) {
	ts := newDICT(t, dictsim.Options{})
	c := newClient(t, ts.Config)
	ctx := context.Background()
	id := uuid.NewString()
	for name, call := range map[string]func() error{
		"id not a uuid":  func() error { _, err := c.GetInfractionReport(ctx, "../refunds/x"); return err },
		"unknown result": func() error { _, err := c.CloseInfractionReport(ctx, id, "MAYBE", ""); return err },
		"long details": func() error {
			_, err := c.CloseInfractionReport(ctx, id, dict.Agreed, strings.Repeat("é", 2001))
			return err
		},
		"accepted, no e2e": func() error {
			_, err := c.CloseRefund(ctx, id, dict.RefundClosing{Result: dict.TotallyAccepted})
			return err
		},
		"rejected with e2e": func() error {
			_, err := c.CloseRefund(ctx, id, dict.RefundClosing{Result: dict.Rejected, RefundTransactionID: devolucao})
			return err
		},
		"reason, accepted": func() error {
			_, err := c.CloseRefund(ctx, id, dict.RefundClosing{Result: dict.PartiallyAccepted, RefundTransactionID: devolucao, RejectionReason: dict.RejectionOther})
			return err
		},
		"limit": func() error { _, err := c.ListInfractionReports(ctx, dict.ReportQuery{Limit: 201}); return err },
		"status": func() error {
			_, err := c.ListRefunds(ctx, dict.RefundQuery{Status: []dict.RefundStatus{"GONE"}})
			return err
		},
		"role":           func() error { _, err := c.ListRefunds(ctx, dict.RefundQuery{Role: "PAYER"}); return err },
		"no policy name": func() error { _, err := c.Bucket(ctx, ""); return err },
	} {
		if err := call(); !errors.Is(err, dict.ErrNotSent) || dict.Classify(err) != dict.Refused {
			t.Errorf("%s: %v", name, err)
		}
	}
	for op, n := range ts.Calls() {
		t.Errorf("%s sent %d times", op, n)
	}
}

// TestConfig: settings that do not go together are refused at New.
func TestConfig(t *testing.T) {
	ts := newDICT(t, dictsim.Options{})
	for name, change := range map[string]func(*dict.Config){
		"http":            func(c *dict.Config) { c.BaseURL = "http://dict.example/api/v1" },
		"query":           func(c *dict.Config) { c.BaseURL += "?x=1" },
		"policies http":   func(c *dict.Config) { c.PoliciesURL = "http://x" },
		"participant":     func(c *dict.Config) { c.Participant = "1234" },
		"no client cert":  func(c *dict.Config) { c.CertFile = "" },
		"half signing":    func(c *dict.Config) { c.SigningCertFile = ts.ForeignCertFile },
		"no dict cert":    func(c *dict.Config) { c.DICTCertFile = "" },
		"dict cert empty": func(c *dict.Config) { c.DICTCertFile = ts.Config.KeyFile },
	} {
		cfg := ts.Config
		change(&cfg)
		if _, err := dict.New(cfg); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// TestDetailsWithCarriageReturnsAreSigned: details written on Windows
// ("\r\n") are sent so that the DICT, whose XML parser reads a line break
// as "\n" (XML 1.0 §2.11), computes the digest the bank signed; what the
// DICT keeps, and the read-back shows, is the text with "\n" line breaks,
// and the same close sent again is the same close.
func TestDetailsWithCarriageReturnsAreSigned(t *testing.T) {
	ts := newDICT(t, dictsim.Options{})
	c := newClient(t, ts.Config)
	ctx := context.Background()
	const details, kept = "linha 1\r\nlinha 2\rlinha 3", "linha 1\nlinha 2\nlinha 3"

	rep := openReport(t, ts, c, dict.ReportAcknowledged)
	closed, err := c.CloseInfractionReport(ctx, rep.ID, dict.Agreed, details)
	if err != nil || closed.AnalysisDetails != kept {
		t.Fatalf("close with CR LF details: %+v, %v", closed, err)
	}
	read, err := c.GetInfractionReport(ctx, rep.ID)
	if err != nil || read.AnalysisDetails != kept || read.AnalysisDetails != dict.NormalizeDetails(details) {
		t.Fatalf("read back: %q, %v; want %q", read.AnalysisDetails, err, kept)
	}
	if _, err := c.CloseInfractionReport(ctx, rep.ID, dict.Agreed, details); err != nil {
		t.Fatalf("the same close again: %v", err)
	}

	ref := openRefund(t, ts, c)
	got, err := c.CloseRefund(ctx, ref.ID, dict.RefundClosing{Result: dict.TotallyAccepted, Details: details, RefundTransactionID: devolucao})
	if err != nil || got.AnalysisDetails != kept {
		t.Fatalf("refund close with CR LF details: %+v, %v", got, err)
	}
}

// TestSignedRequestsSurviveXMLParsing: whatever a request's text holds, a
// carriage return included, the bytes sent are the bytes signed, as any
// XML parser reads them: the signature verifies after a parse.
func TestSignedRequestsSurviveXMLParsing(t *testing.T) {
	ts := newDICT(t, dictsim.Options{})
	c := newClient(t, ts.Config)
	b, err := dict.SignedAcknowledge(c, "a\r\nb\rc")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "\r") {
		t.Errorf("a raw carriage return on the wire: %q", b)
	}
	el, err := ts.VerifyRequest(bankISPB, b)
	if err != nil {
		t.Fatalf("the signature does not survive a parse: %v\n%s", err, b)
	}
	if got := el.FindElement("InfractionReportId").Text(); got != "a\r\nb\rc" {
		t.Errorf("signed text read as %q", got)
	}
	// The Signature is the root's first child, as in every example of the
	// specification (CloseRefundRequest.xml and the others).
	doc := etree.NewDocument()
	if err := doc.ReadFromBytes(b); err != nil {
		t.Fatal(err)
	}
	if kids := doc.Root().ChildElements(); len(kids) == 0 || kids[0].Tag != "Signature" {
		t.Errorf("the Signature is not the root's first child:\n%s", b)
	}
}

// TestUnsignedLaterAnswersNameNoProblem: an answer that only says "later"
// (429, 5xx, 408) is taken unsigned, so a gateway may send it: the type
// it carries is kept for the log, but is never the declared problem; only
// its class holds.
func TestUnsignedLaterAnswersNameNoProblem(t *testing.T) {
	ts := newDICT(t, dictsim.Options{})
	c := newClient(t, ts.Config)
	ctx := context.Background()
	rep := openReport(t, ts, c, dict.ReportAcknowledged)
	problems := dict.DeclaredProblems()
	for _, code := range []int{http.StatusTooManyRequests, http.StatusInternalServerError, http.StatusServiceUnavailable, http.StatusRequestTimeout} {
		for _, p := range problems {
			answer(ts, func() dictsim.Answer {
				a := dictsim.ProblemAnswer(code, p.Name(), "forged")
				a.Sign = dictsim.SignNone
				return a
			})
			_, err := c.GetInfractionReport(ctx, rep.ID)
			var pe *dict.ProblemError
			if !errors.As(err, &pe) || pe.Type != p.Type() {
				t.Errorf("unsigned %d %s: %v, type not kept", code, p.Name(), err)
			}
			for _, q := range problems {
				if errors.Is(err, q) && !(q == dict.ErrRateLimited && code == http.StatusTooManyRequests) {
					t.Errorf("unsigned %d %s is %s", code, p.Name(), q.Name())
				}
			}
			want := dict.Unknown
			if code == http.StatusTooManyRequests {
				want = dict.RateLimited
			}
			if got := dict.Classify(err); got != want {
				t.Errorf("unsigned %d %s classified %s, want %s", code, p.Name(), got, want)
			}
		}
	}
	// Signed, "later" is still "later": 408 and 425 are not refusals
	// (statuses the document does not give the DICT: unchecked).
	for _, code := range []int{http.StatusRequestTimeout, http.StatusTooEarly} {
		answer(ts, func() dictsim.Answer {
			a := dictsim.ProblemAnswer(code, "BadRequest", "try again")
			a.Unchecked = true
			return a
		})
		_, err := c.GetInfractionReport(ctx, rep.ID)
		if got := dict.Classify(err); got != dict.Unknown || !errors.Is(err, dict.ErrUnknownOutcome) {
			t.Errorf("signed %d classified %s: %v", code, got, err)
		}
	}
}

// TestRetryAfterIsBoundedOnTheWire: a 429's Retry-After far ahead is cut
// to 5 minutes; one negative or zero leaves the 429 to the bucket's
// refill (50 ms for a report's write).
func TestRetryAfterIsBoundedOnTheWire(t *testing.T) {
	const most = 5 * time.Minute
	ts := newDICT(t, dictsim.Options{})
	c := newClient(t, ts.Config)
	rep := openReport(t, ts, c, dict.ReportAcknowledged)
	for in, want := range map[string]time.Duration{"-5": 50 * time.Millisecond, "10000000000": most, "0": 50 * time.Millisecond} {
		answer(ts, func() dictsim.Answer {
			a := dictsim.ProblemAnswer(http.StatusTooManyRequests, "RateLimited", "")
			a.Header = http.Header{"Retry-After": {in}}
			return a
		})
		_, err := c.CloseInfractionReport(context.Background(), rep.ID, dict.Agreed, "")
		if d, ok := dict.RetryAfter(err); !ok || d != want {
			t.Errorf("429 with Retry-After %q: retry after %s, want %s (%v)", in, d, want, err)
		}
	}
}

// TestWalkComparesAtTheCursorsPrecision: a DICT whose LastModified is
// finer than milliseconds; the walk asks from exactly where it stopped,
// and hands each item once.
func TestWalkComparesAtTheCursorsPrecision(t *testing.T) {
	ts := newDICT(t, dictsim.Options{Now: frozen})
	c := newClient(t, ts.Config)
	start := ts.Now()
	base := start.Add(time.Minute)
	var want []string
	at := start
	for _, d := range []time.Duration{123100 * time.Microsecond, 123456 * time.Microsecond, 124 * time.Millisecond} {
		if _, err := ts.Advance(base.Add(d).Sub(at)); err != nil {
			t.Fatal(err)
		}
		at = base.Add(d)
		want = append(want, openReport(t, ts, c, dict.ReportOpen).ID)
	}
	var got []string
	end, err := c.WalkInfractionReports(context.Background(), dict.ReportQuery{Role: dict.Credited, ModifiedAfter: start, Limit: 2}, func(r dict.InfractionReport) error {
		got = append(got, r.ID)
		return nil
	})
	if err != nil || !slices.Equal(got, want) || !end.Equal(base.Add(124*time.Millisecond)) {
		t.Fatalf("walk: handed %v, want %v; ended %s; %v", got, want, end, err)
	}
}

// withResponseTime makes the simulator's answers' ResponseTime off the
// real time.
func withResponseTime(ts *dictsim.TestServer, off time.Duration) {
	hook(ts, func(_ *dictsim.Exchange, model func() dictsim.Answer) dictsim.Answer {
		a := model()
		a.Body.SelectElement("ResponseTime").SetText(time.Now().Add(off).UTC().Format(time.RFC3339Nano))
		return a
	})
}

// TestStaleAnswersAreRefused: an answer genuinely signed by the DICT, but
// whose ResponseTime is far from the call (a replayed page or read), is
// not accepted: a verification failure, never done nor refused.
func TestStaleAnswersAreRefused(t *testing.T) {
	ts := newDICT(t, dictsim.Options{})
	c := newClient(t, ts.Config)
	ctx := context.Background()
	rep := openReport(t, ts, c, dict.ReportAcknowledged)
	for _, off := range []time.Duration{-time.Hour, -6 * time.Minute, time.Hour} {
		withResponseTime(ts, off)
		page, err := c.ListInfractionReports(ctx, dict.ReportQuery{Role: dict.Credited})
		if !errors.Is(err, dict.ErrUnverifiedAnswer) || dict.Classify(err) != dict.Unverified || len(page.Reports) != 0 {
			t.Errorf("a page answered %s off: %+v, %v (class %s)", off, page, err, dict.Classify(err))
		}
		got, err := c.GetInfractionReport(ctx, rep.ID)
		if !errors.Is(err, dict.ErrUnverifiedAnswer) || dict.Classify(err) != dict.Unverified || got != (dict.InfractionReport{}) {
			t.Errorf("a read answered %s off: %+v, %v (class %s)", off, got, err, dict.Classify(err))
		}
	}
	ts.SetAnswerHook(nil)
	if _, err := c.GetInfractionReport(ctx, rep.ID); err != nil {
		t.Fatalf("a fresh answer: %v", err)
	}
}

// TestProblemTextIsOneLine: the problem's words go to logs: no line
// breaks or other control characters of a peer's survive.
func TestProblemTextIsOneLine(t *testing.T) {
	ts := newDICT(t, dictsim.Options{})
	c := newClient(t, ts.Config)
	answer(ts, func() dictsim.Answer {
		a := dictsim.ProblemAnswer(http.StatusServiceUnavailable, "ServiceUnavailable", "down\n2026-12-01 level=info msg=\"forged\"\r\x1b[2J\tok")
		a.Body.SelectElement("title").SetText("a\nb")
		a.Sign = dictsim.SignNone
		return a
	})
	_, err := c.GetInfractionReport(context.Background(), uuid.NewString())
	var pe *dict.ProblemError
	if !errors.As(err, &pe) {
		t.Fatalf("503: %v", err)
	}
	for _, s := range []string{err.Error(), pe.Title, pe.Detail} {
		if strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
			t.Errorf("a control character kept: %q", s)
		}
	}
}

// TestResponseTimeSkewIsConfigured: Config.ResponseTimeSkew widens the
// window (a test bench whose DICT's clock is an hour off, say).
func TestResponseTimeSkewIsConfigured(t *testing.T) {
	ts := newDICT(t, dictsim.Options{})
	cfg := ts.Config
	cfg.ResponseTimeSkew = 2 * time.Hour
	c := newClient(t, cfg)
	rep := openReport(t, ts, c, dict.ReportOpen)
	withResponseTime(ts, -time.Hour)
	if _, err := c.GetInfractionReport(context.Background(), rep.ID); err != nil {
		t.Fatalf("an answer an hour old, skew 2h: %v", err)
	}
}

// TestAFullPageIsVerified: a page of MaxLimit reports with their details,
// signed as the specification's examples place the Signature (the root's
// first child), is verified and read whole, as the walks ask for it. (A
// goxmldsig verifier gives up looking for a Signature placed last after
// 1,000 elements, about 65 reports: see doc.go.)
func TestAFullPageIsVerified(t *testing.T) {
	ts := newDICT(t, dictsim.Options{Now: frozen})
	c := newClient(t, ts.Config)
	for range dict.MaxLimit + 1 {
		if _, err := ts.Advance(time.Millisecond); err != nil {
			t.Fatal(err)
		}
		openReport(t, ts, c, dict.ReportOpen)
	}
	page, err := c.ListInfractionReports(context.Background(), dict.ReportQuery{Role: dict.Credited, Limit: dict.MaxLimit, IncludeDetails: true})
	if err != nil || len(page.Reports) != dict.MaxLimit || !page.HasMoreElements {
		t.Fatalf("a full page: %d reports, more %v, %v", len(page.Reports), page.HasMoreElements, err)
	}
	var n int
	if _, err := c.WalkInfractionReports(context.Background(), dict.ReportQuery{Role: dict.Credited}, func(dict.InfractionReport) error { n++; return nil }); err != nil || n != dict.MaxLimit+1 {
		t.Fatalf("a walk of pages of %d: %d handed, %v", dict.MaxLimit, n, err)
	}
}

// TestAWalkGetsPastAnInstantOfMoreThanAPage: the lists have no offset, so
// a walk paged by LastModified meets a full page of one instant again and
// again. More reports modified at one instant than a page holds (400, of
// three statuses) are walked one status at a time, and the walk goes on
// after the instant: every report handed once, those after it too. More
// of one status at one instant than a page holds can't be reached by any
// query of the specification: the walk stops, ErrInstantTooFull.
func TestAWalkGetsPastAnInstantOfMoreThanAPage(t *testing.T) {
	ts := newDICT(t, dictsim.Options{Now: frozen})
	c := newClient(t, ts.Config)
	ctx := context.Background()
	want := map[string]bool{}
	for i := range 400 {
		status := dict.ReportOpen
		if i%2 == 1 {
			status = dict.ReportAcknowledged
		}
		r := openReport(t, ts, c, status)
		if i%5 == 0 {
			if _, err := ts.CancelReport(r.ID); err != nil {
				t.Fatal(err)
			}
		}
		want[r.ID] = true
	}
	if _, err := ts.Advance(time.Millisecond); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		want[openReport(t, ts, c, dict.ReportOpen).ID] = true
	}
	got := map[string]int{}
	end, err := c.WalkInfractionReports(ctx, dict.ReportQuery{Role: dict.Credited, ModifiedAfter: frozen()}, func(r dict.InfractionReport) error {
		got[r.ID]++
		return nil
	})
	if err != nil {
		t.Fatalf("a walk over 400 reports of one instant: %v", err)
	}
	for id, n := range got {
		if n != 1 || !want[id] {
			t.Errorf("report %s handed %d times (wanted: %v)", id, n, want[id])
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d reports handed, %d wanted", len(got), len(want))
	}
	if !end.Equal(frozen().Add(time.Millisecond)) {
		t.Errorf("the walk ended at %s, the last report's instant is %s", end, frozen().Add(time.Millisecond))
	}
	// Bounded by ModifiedBefore at the full instant: the walk ends there.
	clear(got)
	if _, err := c.WalkInfractionReports(ctx, dict.ReportQuery{Role: dict.Credited, ModifiedAfter: frozen(), ModifiedBefore: frozen()},
		func(r dict.InfractionReport) error { got[r.ID]++; return nil }); err != nil || len(got) != 400 {
		t.Fatalf("a walk of the full instant alone: %d handed, %v", len(got), err)
	}

	ts = newDICT(t, dictsim.Options{Now: frozen})
	c = newClient(t, ts.Config)
	for range dict.MaxLimit + 1 {
		openReport(t, ts, c, dict.ReportOpen)
	}
	n := 0
	_, err = c.WalkInfractionReports(ctx, dict.ReportQuery{Role: dict.Credited}, func(dict.InfractionReport) error { n++; return nil })
	if !errors.Is(err, dict.ErrInstantTooFull) {
		t.Fatalf("a walk over %d OPEN reports of one instant: %d handed, %v; want ErrInstantTooFull", dict.MaxLimit+1, n, err)
	}
}

// TestARefundWalkGetsPastAnInstantOfMoreThanAPage: the refund requests'
// walk does the same, by their own statuses (OPEN, CANCELLED here), its
// ParticipantRole kept in the instant's lists.
func TestARefundWalkGetsPastAnInstantOfMoreThanAPage(t *testing.T) {
	ts := newDICT(t, dictsim.Options{Now: frozen})
	c := newClient(t, ts.Config)
	want := map[string]bool{}
	for i := range dict.MaxLimit + 30 {
		r := openRefund(t, ts, c)
		if i%3 == 0 {
			if _, err := ts.CancelRefund(r.ID); err != nil {
				t.Fatal(err)
			}
		}
		want[r.ID] = true
	}
	got := map[string]int{}
	if _, err := c.WalkRefunds(context.Background(), dict.RefundQuery{ModifiedAfter: frozen()}, func(r dict.Refund) error {
		got[r.ID]++
		return nil
	}); err != nil {
		t.Fatalf("a walk over %d refund requests of one instant: %v", len(want), err)
	}
	for id, n := range got {
		if n != 1 || !want[id] {
			t.Errorf("refund request %s handed %d times (wanted: %v)", id, n, want[id])
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d refund requests handed, %d wanted", len(got), len(want))
	}
}
