package dict

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/pixbank/pix/internal/dict/dictspec"
)

const e2e = "E9999901012341234123412345678900"
const devolucao = "D1234567820261201100000000000001"

func openReport(f *fakeDICT, status InfractionReportStatus) InfractionReport {
	now := f.tick(time.Second)
	r := InfractionReport{
		ID: uuid.NewString(), TransactionID: e2e, InfractionType: InfractionFraud,
		ReportedBy: ReportedByDebited, ReportDetails: "QR Code falso em boleto", Status: status,
		DebitedParticipant: payerISPB, CreditedParticipant: bankISPB,
		CreationTime: now, LastModified: now,
	}
	f.addReport(r)
	return r
}

func openRefund(f *fakeDICT) Refund {
	now := f.tick(time.Second)
	r := Refund{
		ID: uuid.NewString(), TransactionID: e2e, RefundReason: RefundFraud, RefundAmount: 20000,
		Status: RefundOpen, RequestingParticipant: payerISPB, ContestedParticipant: bankISPB,
		CreationTime: now, LastModified: now, InfractionReportID: uuid.NewString(),
	}
	f.addRefund(r)
	return r
}

// TestEveryOperationKeepsToTheFactsDocument calls each operation of the
// client against the fake DICT, which checks every request (path, method,
// parameters, element names, enumerations, the bank's signature) and
// every answer against dict-api.yaml; and every operation of the document
// is called.
func TestEveryOperationKeepsToTheFactsDocument(t *testing.T) {
	f := newFakeDICT(t)
	c := f.client(t)
	ctx := context.Background()

	rep := openReport(f, ReportOpen)
	page, err := c.ListInfractionReports(ctx, ReportQuery{
		Role: Credited, Status: []InfractionReportStatus{ReportOpen, ReportAcknowledged},
		ModifiedAfter: rep.LastModified.Add(-time.Minute), ModifiedBefore: rep.LastModified.Add(time.Minute),
		Limit: 50, IncludeDetails: true, IncludeIndirectParticipants: true,
	})
	if err != nil || len(page.Reports) != 1 || page.Reports[0].ID != rep.ID || page.HasMoreElements {
		t.Fatalf("list reports: %+v, %v", page, err)
	}
	got := page.Reports[0]
	if got.TransactionID != e2e || got.Status != ReportOpen || got.CreditedParticipant != bankISPB ||
		got.InfractionType != InfractionFraud || !got.LastModified.Equal(rep.LastModified) {
		t.Errorf("listed report %+v, want %+v", got, rep)
	}
	if _, err := c.ListInfractionReports(ctx, ReportQuery{Role: Debited}); err != nil {
		t.Errorf("list reports as the debited: %v", err)
	}
	if _, err := c.ListInfractionReports(ctx, ReportQuery{}); err != nil {
		t.Errorf("list reports of either party: %v", err)
	}
	ack, err := c.AcknowledgeInfractionReport(ctx, rep.ID)
	if err != nil || ack.Status != ReportAcknowledged {
		t.Fatalf("acknowledge: %+v, %v", ack, err)
	}
	closed, err := c.CloseInfractionReport(ctx, rep.ID, Agreed, "Valor bloqueado.")
	if err != nil || closed.Status != ReportClosed || closed.AnalysisResult != Agreed || closed.AnalysisDetails != "Valor bloqueado." {
		t.Fatalf("close: %+v, %v", closed, err)
	}
	read, err := c.GetInfractionReport(ctx, rep.ID)
	if err != nil || read.Status != ReportClosed {
		t.Fatalf("get: %+v, %v", read, err)
	}

	ref := openRefund(f)
	rp, err := c.ListRefunds(ctx, RefundQuery{Status: []RefundStatus{RefundOpen}, ModifiedAfter: ref.LastModified, Limit: 10, IncludeDetails: true})
	if err != nil || len(rp.Refunds) != 1 || rp.Refunds[0].ID != ref.ID || rp.Refunds[0].RefundAmount != 20000 {
		t.Fatalf("list refunds: %+v, %v", rp, err)
	}
	if _, err := c.ListRefunds(ctx, RefundQuery{Role: RoleRequesting}); err != nil {
		t.Errorf("list refunds as the requester: %v", err)
	}
	gr, err := c.GetRefund(ctx, ref.ID)
	if err != nil || gr.Status != RefundOpen || gr.InfractionReportID != ref.InfractionReportID {
		t.Fatalf("get refund: %+v, %v", gr, err)
	}
	cr, err := c.CloseRefund(ctx, ref.ID, RefundClosing{Result: TotallyAccepted, Details: "Valor devolvido.", RefundTransactionID: devolucao})
	if err != nil || cr.Status != RefundClosed || cr.AnalysisResult != TotallyAccepted || cr.RefundTransactionID != devolucao {
		t.Fatalf("close refund: %+v, %v", cr, err)
	}
	rejected := openRefund(f)
	if _, err := c.CloseRefund(ctx, rejected.ID, RefundClosing{Result: Rejected, RejectionReason: RejectionNoBalance}); err != nil {
		t.Fatalf("close refund rejected: %v", err)
	}

	buckets, err := c.Buckets(ctx)
	if err != nil || buckets.Category != "D" || len(buckets.Buckets) != len(allPolicies) {
		t.Fatalf("buckets: %+v, %v", buckets, err)
	}
	b, err := c.Bucket(ctx, PolicyInfractionReportsWrite)
	if err != nil || b.Name != PolicyInfractionReportsWrite || b.Capacity != 36000 {
		t.Fatalf("bucket: %+v, %v", b, err)
	}

	for _, op := range f.spec.Operations() {
		if f.count(op.ID) == 0 {
			t.Errorf("%s (%s) of the facts document was never called", op, op.ID)
		}
	}
}

// TestPoliciesBaseIsItsOwn: the policies are read from PoliciesURL, the
// rest from BaseURL.
func TestPoliciesBaseIsItsOwn(t *testing.T) {
	f := newFakeDICT(t)
	f.cfg.BaseURL = f.srv.URL + "/elsewhere"
	f.cfg.PoliciesURL = f.srv.URL + basePath
	c := f.client(t)
	if _, err := c.Buckets(context.Background()); err != nil {
		t.Fatalf("buckets from the policies' base: %v", err)
	}
}

// TestWalkHandsEachItemOnce walks lists of many pages whose boundaries
// fall inside instants shared by several items (ModifiedAfter is >=):
// each item is handed once, in LastModified order, and the walk returns
// the last one's LastModified.
func TestWalkHandsEachItemOnce(t *testing.T) {
	f := newFakeDICT(t)
	c := f.client(t)
	ctx := context.Background()
	start := f.now
	var want []string
	for i := range 47 {
		r := openReport(f, ReportOpen)
		if i%3 != 0 {
			// Two or three reports per instant.
			f.now = f.now.Add(-time.Second)
			r.LastModified = f.now
			f.addReport(r)
		}
		want = append(want, r.ID)
	}
	for range 47 {
		openRefund(f)
	}
	other := openReport(f, ReportOpen)
	other.CreditedParticipant, other.DebitedParticipant = payerISPB, bankISPB
	f.addReport(other) // the bank is debited: not in a credited list

	var got []string
	var last time.Time
	end, err := c.WalkInfractionReports(ctx, ReportQuery{Role: Credited, ModifiedAfter: start, Limit: 7}, func(r InfractionReport) error {
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
	if pages := f.count("listInfractionReport"); pages < 47/7 {
		t.Errorf("%d pages for 47 reports of 7 a page", pages)
	}

	var refunds int
	if _, err := c.WalkRefunds(ctx, RefundQuery{Limit: 5}, func(Refund) error { refunds++; return nil }); err != nil || refunds != 47 {
		t.Fatalf("walk refunds: %d handed, %v", refunds, err)
	}

	// An error of fn stops the walk where it is.
	stop := errors.New("stop")
	n := 0
	if _, err := c.WalkInfractionReports(ctx, ReportQuery{Role: Credited}, func(InfractionReport) error {
		if n++; n == 10 {
			return stop
		}
		return nil
	}); !errors.Is(err, stop) || n != 10 {
		t.Fatalf("walk after fn's error: %d handed, %v", n, err)
	}
}

// TestAnswersNotSignedByTheDICTAreNotAccepted: a tampered answer, one
// signed by another certificate, an unsigned one, one that is not XML:
// each is ErrUnverifiedAnswer, never taken, whatever it says; so is a
// refusal (a problem) that is not signed.
func TestAnswersNotSignedByTheDICTAreNotAccepted(t *testing.T) {
	f := newFakeDICT(t)
	c := f.client(t)
	ctx := context.Background()
	rep := openReport(f, ReportOpen)
	for _, tc := range []struct {
		name   string
		mode   signMode
		raw    []byte
		reason string
	}{
		{"tampered", signTampered, nil, "signature invalid"},
		{"wrong certificate", signOther, nil, "signature invalid"},
		{"unsigned", signNone, nil, "unsigned"},
		{"not xml", signDICT, []byte("<html>gateway"), "not XML"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f.hook = func(r *http.Request, _ []byte) (answer, bool) {
				a := f.model("getInfractionReport", r, map[string]string{"InfractionReportId": rep.ID}, nil)
				a.sign, a.raw = tc.mode, tc.raw
				return a, true
			}
			got, err := c.GetInfractionReport(ctx, rep.ID)
			var se *SignatureError
			if !errors.Is(err, ErrUnverifiedAnswer) || !errors.As(err, &se) || se.Reason != tc.reason || Classify(err) != Unverified {
				t.Fatalf("answer %s: %+v, %v (class %s)", tc.name, got, err, Classify(err))
			}
			if got != (InfractionReport{}) {
				t.Errorf("a report was returned: %+v", got)
			}
		})
	}
	t.Run("unsigned problem", func(t *testing.T) {
		f.hook = func(*http.Request, []byte) (answer, bool) {
			a := f.problem(http.StatusNotFound, "NotFound", "no such report")
			a.sign = signNone
			return a, true
		}
		_, err := c.GetInfractionReport(ctx, rep.ID)
		if errors.Is(err, ErrNotFound) || Classify(err) != Unverified {
			t.Fatalf("unsigned 404: %v (class %s)", err, Classify(err))
		}
	})
	t.Run("tampered problem", func(t *testing.T) {
		f.hook = func(*http.Request, []byte) (answer, bool) {
			a := f.problem(http.StatusNotFound, "NotFound", "no such report")
			a.sign = signTampered
			return a, true
		}
		_, err := c.GetInfractionReport(ctx, rep.ID)
		if errors.Is(err, ErrForbidden) || errors.Is(err, ErrNotFound) || Classify(err) != Unverified {
			t.Fatalf("tampered 404: %v (class %s)", err, Classify(err))
		}
	})
}

// TestTheDICTRefusesAnotherSigningCertificate: requests signed by a key
// the DICT does not know for the bank get RequestSignatureInvalid, a
// refusal, not a retry.
func TestTheDICTRefusesAnotherSigningCertificate(t *testing.T) {
	f := newFakeDICT(t)
	f.cfg.SigningCertFile, f.cfg.SigningKeyFile = f.other.certFile, f.other.keyFile
	c := f.client(t)
	rep := openReport(f, ReportOpen)
	_, err := c.AcknowledgeInfractionReport(context.Background(), rep.ID)
	if !errors.Is(err, ErrRequestSignatureInvalid) || Classify(err) != Refused || Classify(err).Retryable() {
		t.Fatalf("acknowledge signed by another key: %v (class %s)", err, Classify(err))
	}
}

// TestEveryProblemTypeIsClassified: each problem type of the document,
// signed, is its declared error and a refusal; 429 is RateLimited; 5xx
// are unknown outcomes; a type the specification does not declare is a
// refusal by its status, never taken for a declared one.
func TestEveryProblemTypeIsClassified(t *testing.T) {
	f := newFakeDICT(t)
	c := f.client(t)
	ctx := context.Background()
	rep := openReport(f, ReportAcknowledged)
	status := map[string]int{
		"NotFound": http.StatusNotFound, "Forbidden": http.StatusForbidden,
		"RateLimited": http.StatusTooManyRequests, "InternalServerError": http.StatusInternalServerError,
		"ServiceUnavailable": http.StatusServiceUnavailable,
	}
	for _, full := range f.spec.ProblemTypes() {
		name := strings.TrimPrefix(full, dictspec.ProblemTypeBase)
		t.Run(name, func(t *testing.T) {
			code, ok := status[name]
			if !ok {
				code = http.StatusBadRequest
			}
			f.hook = func(*http.Request, []byte) (answer, bool) { return f.problem(code, name, "as the test says"), true }
			_, err := c.CloseInfractionReport(ctx, rep.ID, Disagreed, "")
			declared := problems[full]
			var pe *ProblemError
			if declared == nil || !errors.Is(err, declared) || !errors.As(err, &pe) || pe.Type != full || pe.StatusCode != code {
				t.Fatalf("%s: %v; declared %v", name, err, declared)
			}
			for other := range maps.Values(problems) {
				if other != declared && errors.Is(err, other) && !(other == ErrRateLimited && code == http.StatusTooManyRequests) {
					t.Errorf("%s is also %s", name, other.Name())
				}
			}
			want := Refused
			switch {
			case code == http.StatusTooManyRequests:
				want = RateLimited
			case code >= 500:
				want = Unknown
			}
			if got := Classify(err); got != want || got.Retryable() != (want != Refused) {
				t.Errorf("%s classified %s, want %s", name, got, want)
			}
			if want == Unknown && !errors.Is(err, ErrUnknownOutcome) {
				t.Errorf("%s is not ErrUnknownOutcome", name)
			}
		})
	}
	t.Run("undeclared type", func(t *testing.T) {
		f.hook = func(*http.Request, []byte) (answer, bool) {
			a := f.problem(http.StatusNotFound, "SomethingNew", "another API's type")
			a.body.FindElement("type").SetText("https://pix.bcb.gov.br/api/v2/error/NotFound")
			return a, true
		}
		_, err := c.GetInfractionReport(ctx, rep.ID)
		var pe *ProblemError
		if !errors.As(err, &pe) || pe.Problem != nil || errors.Is(err, ErrNotFound) || Classify(err) != Refused {
			t.Fatalf("undeclared problem: %v (class %s)", err, Classify(err))
		}
	})
	t.Run("gateway 502 without a problem", func(t *testing.T) {
		f.hook = func(*http.Request, []byte) (answer, bool) {
			return answer{status: http.StatusBadGateway, raw: []byte("bad gateway")}, true
		}
		_, err := c.AcknowledgeInfractionReport(ctx, rep.ID)
		if !errors.Is(err, ErrUnknownOutcome) || Classify(err) != Unknown {
			t.Fatalf("502: %v (class %s)", err, Classify(err))
		}
	})
}

// TestDeclaredProblemsAreTheDocuments: each problem type of the facts
// document is declared once by the client, and no other.
func TestDeclaredProblemsAreTheDocuments(t *testing.T) {
	spec, err := dictspec.Load()
	if err != nil {
		t.Fatal(err)
	}
	got, want := slices.Collect(maps.Keys(problems)), spec.ProblemTypes()
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("declared %v\nthe document's %v", got, want)
	}
}

// TestPoliciesAreTheDocuments: the client's policy table is the facts
// document's.
func TestPoliciesAreTheDocuments(t *testing.T) {
	spec, err := dictspec.Load()
	if err != nil {
		t.Fatal(err)
	}
	doc := spec.Policies()
	if len(doc) != len(allPolicies) {
		t.Errorf("%d policies, the document has %d", len(allPolicies), len(doc))
	}
	for _, p := range allPolicies {
		d, ok := doc[p.name]
		if !ok || d.RefillPerMinute != p.refillPerMinute || d.BucketSize != p.bucketSize {
			t.Errorf("policy %+v, the document's %+v", p, d)
		}
	}
	for _, op := range spec.Operations() {
		for _, name := range op.Policies {
			if _, ok := doc[name]; !ok {
				t.Errorf("%s draws from %s, not in x-policies", op, name)
			}
		}
	}
}

// TestRateLimited: a 429 is RateLimited, retryable after Retry-After, or,
// without one, after the operation's bucket refills one token (the
// specification's table); it needs no signature.
func TestRateLimited(t *testing.T) {
	f := newFakeDICT(t)
	c := f.client(t)
	ctx := context.Background()
	rep := openReport(f, ReportOpen)
	for _, tc := range []struct {
		name       string
		retryAfter string
		call       func() error
		want       time.Duration
	}{
		{"retry-after seconds", "3", func() error { _, err := c.AcknowledgeInfractionReport(ctx, rep.ID); return err }, 3 * time.Second},
		{"list with role, no retry-after", "", func() error { _, err := c.ListInfractionReports(ctx, ReportQuery{Role: Credited}); return err }, 1500 * time.Millisecond},
		{"list without role", "", func() error { _, err := c.ListInfractionReports(ctx, ReportQuery{}); return err }, 6 * time.Second},
		{"write", "", func() error { _, err := c.CloseInfractionReport(ctx, rep.ID, Agreed, ""); return err }, 50 * time.Millisecond},
		{"refunds list", "", func() error { _, err := c.ListRefunds(ctx, RefundQuery{}); return err }, 1500 * time.Millisecond},
		{"retry-after date", time.Now().Add(2 * time.Minute).UTC().Format(http.TimeFormat), func() error { _, err := c.GetRefund(ctx, uuid.NewString()); return err }, 2 * time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f.hook = func(*http.Request, []byte) (answer, bool) {
				a := f.problem(http.StatusTooManyRequests, "RateLimited", "")
				a.sign = signNone
				if tc.retryAfter != "" {
					a.header = http.Header{"Retry-After": {tc.retryAfter}}
				}
				return a, true
			}
			err := tc.call()
			d, ok := RetryAfter(err)
			if !errors.Is(err, ErrRateLimited) || Classify(err) != RateLimited || !ok {
				t.Fatalf("429: %v (class %s)", err, Classify(err))
			}
			// An HTTP date is read against the clock: within seconds of it.
			if d > tc.want || d < tc.want-5*time.Second || !strings.Contains(tc.name, "date") && d != tc.want {
				t.Errorf("retry after %s, want %s", d, tc.want)
			}
		})
	}
	t.Run("503 retry-after", func(t *testing.T) {
		f.hook = func(*http.Request, []byte) (answer, bool) {
			a := f.problem(http.StatusServiceUnavailable, "ServiceUnavailable", "maintenance")
			a.header = http.Header{"Retry-After": {"120"}}
			return a, true
		}
		_, err := c.GetInfractionReport(ctx, rep.ID)
		if d, ok := RetryAfter(err); !ok || d != 2*time.Minute || Classify(err) != Unknown || !errors.Is(err, ErrServiceUnavailable) {
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
	f := newFakeDICT(t)
	c := f.client(t)
	ctx := context.Background()
	rep := openReport(f, ReportOpen)

	lose := func(call func() error) {
		t.Helper()
		f.mu.Lock()
		f.drop = true
		f.mu.Unlock()
		err := call()
		f.mu.Lock()
		f.drop = false
		f.mu.Unlock()
		if Classify(err) != Unknown || !errors.Is(err, ErrUnknownOutcome) {
			t.Fatalf("lost answer: %v (class %s)", err, Classify(err))
		}
	}

	lose(func() error { _, err := c.AcknowledgeInfractionReport(ctx, rep.ID); return err })
	if r, err := c.GetInfractionReport(ctx, rep.ID); err != nil || r.Status != ReportAcknowledged {
		t.Fatalf("read back after a lost acknowledge: %+v, %v", r, err)
	}
	if r, err := c.AcknowledgeInfractionReport(ctx, rep.ID); err != nil || r.Status != ReportAcknowledged {
		t.Fatalf("acknowledge again: %+v, %v", r, err)
	}

	lose(func() error { _, err := c.CloseInfractionReport(ctx, rep.ID, Agreed, "bloqueado"); return err })
	r, err := c.GetInfractionReport(ctx, rep.ID)
	if err != nil || r.Status != ReportClosed || r.AnalysisResult != Agreed {
		t.Fatalf("read back after a lost close: %+v, %v", r, err)
	}
	if r, err := c.CloseInfractionReport(ctx, rep.ID, Agreed, "bloqueado"); err != nil || r.Status != ReportClosed {
		t.Fatalf("the same close again: %+v, %v", r, err)
	}
	if _, err := c.CloseInfractionReport(ctx, rep.ID, Disagreed, ""); !errors.Is(err, ErrInfractionReportOperationInvalid) || Classify(err) != Refused {
		t.Fatalf("another close: %v", err)
	}
	if _, err := c.AcknowledgeInfractionReport(ctx, rep.ID); !errors.Is(err, ErrInfractionReportOperationInvalid) {
		t.Fatalf("acknowledge of a closed report: %v", err)
	}

	ref := openRefund(f)
	closing := RefundClosing{Result: PartiallyAccepted, Details: "parte devolvida", RefundTransactionID: devolucao}
	lose(func() error { _, err := c.CloseRefund(ctx, ref.ID, closing); return err })
	got, err := c.GetRefund(ctx, ref.ID)
	if err != nil || got.Status != RefundClosed || got.AnalysisResult != PartiallyAccepted || got.RefundTransactionID != devolucao {
		t.Fatalf("read back after a lost refund close: %+v, %v", got, err)
	}
	if got, err := c.CloseRefund(ctx, ref.ID, closing); err != nil || got.Status != RefundClosed {
		t.Fatalf("the same refund close again: %+v, %v", got, err)
	}
	closing.Result = TotallyAccepted
	if _, err := c.CloseRefund(ctx, ref.ID, closing); !errors.Is(err, ErrRefundOperationInvalid) || Classify(err) != Refused {
		t.Fatalf("another refund close: %v", err)
	}
}

// TestTransportFailuresAreUnknownOutcomes: a DICT that does not answer in
// time, or is not there, leaves the outcome unknown; a caller's
// cancellation is its own.
func TestTransportFailuresAreUnknownOutcomes(t *testing.T) {
	f := newFakeDICT(t)
	f.cfg.Timeout = 200 * time.Millisecond
	c := f.client(t)
	rep := openReport(f, ReportOpen)
	release := make(chan struct{})
	f.hook = func(*http.Request, []byte) (answer, bool) {
		<-release
		return answer{}, false
	}
	_, err := c.AcknowledgeInfractionReport(context.Background(), rep.ID)
	// Released, the hook lets every request through: it stays set, as the
	// server's goroutines read it (no write here races with them).
	close(release)
	if !errors.Is(err, ErrUnknownOutcome) || Classify(err) != Unknown {
		t.Fatalf("timeout: %v (class %s)", err, Classify(err))
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.GetInfractionReport(ctx, rep.ID); errors.Is(err, ErrUnknownOutcome) || !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}

	f.srv.Close()
	if _, err := c.GetInfractionReport(context.Background(), rep.ID); !errors.Is(err, ErrUnknownOutcome) {
		t.Fatalf("server gone: %v", err)
	}
}

// TestMutualTLS: a client whose certificate the DICT does not trust gets
// no answer.
func TestMutualTLS(t *testing.T) {
	f := newFakeDICT(t)
	stranger := issue(t, t.TempDir(), "stranger", nil, false)
	f.cfg.CertFile, f.cfg.KeyFile = stranger.certFile, stranger.keyFile
	f.cfg.SigningCertFile, f.cfg.SigningKeyFile = f.dict.certFile, f.dict.keyFile
	c := f.client(t)
	if _, err := c.Buckets(context.Background()); err == nil || Classify(err) != Unknown {
		t.Fatalf("a stranger's certificate: %v", err)
	}
	if n := f.count("bucketStates"); n != 0 {
		t.Fatalf("the DICT served a stranger %d times", n)
	}
}

// TestRequestsNotSent: what the client knows to be invalid is never sent.
func TestRequestsNotSent(t *testing.T) {
	f := newFakeDICT(t)
	c := f.client(t)
	ctx := context.Background()
	id := uuid.NewString()
	for name, call := range map[string]func() error{
		"id not a uuid":  func() error { _, err := c.GetInfractionReport(ctx, "../refunds/x"); return err },
		"unknown result": func() error { _, err := c.CloseInfractionReport(ctx, id, "MAYBE", ""); return err },
		"long details": func() error {
			_, err := c.CloseInfractionReport(ctx, id, Agreed, strings.Repeat("é", 2001))
			return err
		},
		"accepted, no e2e": func() error { _, err := c.CloseRefund(ctx, id, RefundClosing{Result: TotallyAccepted}); return err },
		"rejected with e2e": func() error {
			_, err := c.CloseRefund(ctx, id, RefundClosing{Result: Rejected, RefundTransactionID: devolucao})
			return err
		},
		"reason, accepted": func() error {
			_, err := c.CloseRefund(ctx, id, RefundClosing{Result: PartiallyAccepted, RefundTransactionID: devolucao, RejectionReason: RejectionOther})
			return err
		},
		"limit":          func() error { _, err := c.ListInfractionReports(ctx, ReportQuery{Limit: 201}); return err },
		"status":         func() error { _, err := c.ListRefunds(ctx, RefundQuery{Status: []RefundStatus{"GONE"}}); return err },
		"role":           func() error { _, err := c.ListRefunds(ctx, RefundQuery{Role: "PAYER"}); return err },
		"no policy name": func() error { _, err := c.Bucket(ctx, ""); return err },
	} {
		if err := call(); !errors.Is(err, ErrNotSent) || Classify(err) != Refused {
			t.Errorf("%s: %v", name, err)
		}
	}
	for op, n := range f.calls {
		t.Errorf("%s sent %d times", op, n)
	}
}

// TestConfig: settings that do not go together are refused at New.
func TestConfig(t *testing.T) {
	f := newFakeDICT(t)
	for name, change := range map[string]func(*Config){
		"http":            func(c *Config) { c.BaseURL = "http://dict.example/api/v1" },
		"query":           func(c *Config) { c.BaseURL += "?x=1" },
		"policies http":   func(c *Config) { c.PoliciesURL = "http://x" },
		"participant":     func(c *Config) { c.Participant = "1234" },
		"no client cert":  func(c *Config) { c.CertFile = "" },
		"half signing":    func(c *Config) { c.SigningCertFile = f.other.certFile },
		"no dict cert":    func(c *Config) { c.DICTCertFile = "" },
		"dict cert empty": func(c *Config) { c.DICTCertFile = f.cfg.KeyFile },
	} {
		cfg := f.cfg
		change(&cfg)
		if _, err := New(cfg); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestAmount(t *testing.T) {
	for in, want := range map[string]Amount{"200.00": 20000, "0.01": 1, "7": 700, "12.5": 1250, " 3.10 ": 310} {
		var a Amount
		if err := a.UnmarshalText([]byte(in)); err != nil || a != want {
			t.Errorf("%q: %d, %v", in, a, err)
		}
		if b, _ := want.MarshalText(); fmt.Sprint(string(b)) != fmt.Sprintf("%d.%02d", want/100, want%100) {
			t.Errorf("%d written %s", want, b)
		}
	}
	for _, in := range []string{"", "1.234", "-1.00", "+1", "1e3", "1,00", ".5", "99999999999999999999"} {
		var a Amount
		if err := a.UnmarshalText([]byte(in)); err == nil {
			t.Errorf("%q read as %d", in, a)
		}
	}
}

func TestRetryAfterHeader(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	for in, want := range map[string]time.Duration{
		"": 0, "0": 0, "-5": 0, "30": 30 * time.Second, "soon": 0,
		now.Add(90 * time.Second).Format(http.TimeFormat): 90 * time.Second,
		now.Add(-time.Minute).Format(http.TimeFormat):     0,
	} {
		if got := retryAfter(in, now); got != want {
			t.Errorf("Retry-After %q: %s, want %s", in, got, want)
		}
	}
}

// TestDetailsWithCarriageReturnsAreSigned: details written on Windows
// ("\r\n") are sent so that the DICT, whose XML parser reads a line break
// as "\n" (XML 1.0 §2.11), computes the digest the bank signed; what the
// DICT keeps, and the read-back shows, is the text with "\n" line breaks,
// and the same close sent again is the same close.
func TestDetailsWithCarriageReturnsAreSigned(t *testing.T) {
	f := newFakeDICT(t)
	c := f.client(t)
	ctx := context.Background()
	const details, kept = "linha 1\r\nlinha 2\rlinha 3", "linha 1\nlinha 2\nlinha 3"

	rep := openReport(f, ReportAcknowledged)
	closed, err := c.CloseInfractionReport(ctx, rep.ID, Agreed, details)
	if err != nil || closed.AnalysisDetails != kept {
		t.Fatalf("close with CR LF details: %+v, %v", closed, err)
	}
	read, err := c.GetInfractionReport(ctx, rep.ID)
	if err != nil || read.AnalysisDetails != kept || read.AnalysisDetails != NormalizeDetails(details) {
		t.Fatalf("read back: %q, %v; want %q", read.AnalysisDetails, err, kept)
	}
	if _, err := c.CloseInfractionReport(ctx, rep.ID, Agreed, details); err != nil {
		t.Fatalf("the same close again: %v", err)
	}

	ref := openRefund(f)
	got, err := c.CloseRefund(ctx, ref.ID, RefundClosing{Result: TotallyAccepted, Details: details, RefundTransactionID: devolucao})
	if err != nil || got.AnalysisDetails != kept {
		t.Fatalf("refund close with CR LF details: %+v, %v", got, err)
	}
}

// TestSignedRequestsSurviveXMLParsing: whatever a request's text holds, a
// carriage return included, the bytes sent are the bytes signed, as any
// XML parser reads them: the signature verifies after a parse.
func TestSignedRequestsSurviveXMLParsing(t *testing.T) {
	f := newFakeDICT(t)
	c := f.client(t)
	b, err := signedXML(c.sign, acknowledgeRequest{InfractionReportID: "a\r\nb\rc", Participant: bankISPB})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "\r") {
		t.Errorf("a raw carriage return on the wire: %q", b)
	}
	el, err := f.verifyBank(b)
	if err != nil {
		t.Fatalf("the signature does not survive a parse: %v\n%s", err, b)
	}
	if got := el.FindElement("InfractionReportId").Text(); got != "a\r\nb\rc" {
		t.Errorf("signed text read as %q", got)
	}
}

// TestUnsignedLaterAnswersNameNoProblem: an answer that only says "later"
// (429, 5xx, 408) is taken unsigned, so a gateway may send it: the type
// it carries is kept for the log, but is never the declared problem; only
// its class holds.
func TestUnsignedLaterAnswersNameNoProblem(t *testing.T) {
	f := newFakeDICT(t)
	c := f.client(t)
	ctx := context.Background()
	rep := openReport(f, ReportAcknowledged)
	for _, code := range []int{http.StatusTooManyRequests, http.StatusInternalServerError, http.StatusServiceUnavailable, http.StatusRequestTimeout} {
		for _, p := range problems {
			f.hook = func(*http.Request, []byte) (answer, bool) {
				a := f.problem(code, p.Name(), "forged")
				a.sign = signNone
				return a, true
			}
			_, err := c.GetInfractionReport(ctx, rep.ID)
			var pe *ProblemError
			if !errors.As(err, &pe) || pe.Type != p.Type() {
				t.Errorf("unsigned %d %s: %v, type not kept", code, p.Name(), err)
			}
			for _, q := range problems {
				if errors.Is(err, q) && !(q == ErrRateLimited && code == http.StatusTooManyRequests) {
					t.Errorf("unsigned %d %s is %s", code, p.Name(), q.Name())
				}
			}
			want := Unknown
			if code == http.StatusTooManyRequests {
				want = RateLimited
			}
			if got := Classify(err); got != want {
				t.Errorf("unsigned %d %s classified %s, want %s", code, p.Name(), got, want)
			}
		}
	}
	// Signed, "later" is still "later": 408 and 425 are not refusals
	// (statuses the document does not give the DICT: sent raw).
	for _, code := range []int{http.StatusRequestTimeout, http.StatusTooEarly} {
		f.hook = func(*http.Request, []byte) (answer, bool) {
			a := f.problem(code, "BadRequest", "try again")
			a.raw = f.signed(a)
			return a, true
		}
		_, err := c.GetInfractionReport(ctx, rep.ID)
		if got := Classify(err); got != Unknown || !errors.Is(err, ErrUnknownOutcome) {
			t.Errorf("signed %d classified %s: %v", code, got, err)
		}
	}
}

// TestRetryAfterIsBounded: a Retry-After far ahead is cut to 5 minutes
// (the largest a caller waits on the DICT's word), never overflows, and
// one in the past, negative or zero leaves a 429 to the bucket's refill.
func TestRetryAfterIsBounded(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	const most = 5 * time.Minute
	for in, want := range map[string]time.Duration{
		"300": most, "301": most, "299": 299 * time.Second,
		"10000000000": most, "9223372036854775807": most, "99999999999999999999": most,
		"-9223372036854775808": 0, "-1": 0,
		now.AddDate(1, 0, 0).Format(http.TimeFormat):  most,
		now.AddDate(-1, 0, 0).Format(http.TimeFormat): 0,
	} {
		if got := retryAfter(in, now); got != want {
			t.Errorf("Retry-After %q: %s, want %s", in, got, want)
		}
	}

	f := newFakeDICT(t)
	c := f.client(t)
	rep := openReport(f, ReportAcknowledged)
	for in, want := range map[string]time.Duration{"-5": 50 * time.Millisecond, "10000000000": most, "0": 50 * time.Millisecond} {
		f.hook = func(*http.Request, []byte) (answer, bool) {
			a := f.problem(http.StatusTooManyRequests, "RateLimited", "")
			a.header = http.Header{"Retry-After": {in}}
			return a, true
		}
		_, err := c.CloseInfractionReport(context.Background(), rep.ID, Agreed, "")
		if d, ok := RetryAfter(err); !ok || d != want {
			t.Errorf("429 with Retry-After %q: retry after %s, want %s (%v)", in, d, want, err)
		}
	}
}

// TestWalkComparesAtTheCursorsPrecision: a DICT whose LastModified is
// finer than milliseconds; the walk asks from exactly where it stopped,
// and hands each item once.
func TestWalkComparesAtTheCursorsPrecision(t *testing.T) {
	f := newFakeDICT(t)
	c := f.client(t)
	start := f.now
	base := start.Add(time.Minute)
	var want []string
	for _, at := range []time.Duration{123100 * time.Microsecond, 123456 * time.Microsecond, 124 * time.Millisecond} {
		r := openReport(f, ReportOpen)
		r.LastModified = base.Add(at)
		f.addReport(r)
		want = append(want, r.ID)
	}
	var got []string
	end, err := c.WalkInfractionReports(context.Background(), ReportQuery{Role: Credited, ModifiedAfter: start, Limit: 2}, func(r InfractionReport) error {
		got = append(got, r.ID)
		return nil
	})
	if err != nil || !slices.Equal(got, want) || !end.Equal(base.Add(124*time.Millisecond)) {
		t.Fatalf("walk: handed %v, want %v; ended %s; %v", got, want, end, err)
	}
}

// TestStaleAnswersAreRefused: an answer genuinely signed by the DICT, but
// whose ResponseTime is far from the call (a replayed page or read), is
// not accepted: a verification failure, never done nor refused.
func TestStaleAnswersAreRefused(t *testing.T) {
	f := newFakeDICT(t)
	c := f.client(t)
	ctx := context.Background()
	rep := openReport(f, ReportAcknowledged)
	for _, off := range []time.Duration{-time.Hour, -6 * time.Minute, time.Hour} {
		f.hook = func(r *http.Request, _ []byte) (answer, bool) {
			var a answer
			if strings.HasSuffix(r.URL.Path, "/infraction-reports/") {
				a = f.model("listInfractionReport", r, nil, nil)
			} else {
				a = f.model("getInfractionReport", r, map[string]string{"InfractionReportId": rep.ID}, nil)
			}
			a.body.FindElement("ResponseTime").SetText(dateTime(time.Now().Add(off)))
			return a, true
		}
		page, err := c.ListInfractionReports(ctx, ReportQuery{Role: Credited})
		if !errors.Is(err, ErrUnverifiedAnswer) || Classify(err) != Unverified || len(page.Reports) != 0 {
			t.Errorf("a page answered %s off: %+v, %v (class %s)", off, page, err, Classify(err))
		}
		got, err := c.GetInfractionReport(ctx, rep.ID)
		if !errors.Is(err, ErrUnverifiedAnswer) || Classify(err) != Unverified || got != (InfractionReport{}) {
			t.Errorf("a read answered %s off: %+v, %v (class %s)", off, got, err, Classify(err))
		}
	}
	f.hook = nil
	if _, err := c.GetInfractionReport(ctx, rep.ID); err != nil {
		t.Fatalf("a fresh answer: %v", err)
	}
}

// TestProblemTextIsOneLine: the problem's words go to logs: no line
// breaks or other control characters of a peer's survive.
func TestProblemTextIsOneLine(t *testing.T) {
	f := newFakeDICT(t)
	c := f.client(t)
	f.hook = func(*http.Request, []byte) (answer, bool) {
		a := f.problem(http.StatusServiceUnavailable, "ServiceUnavailable", "down\n2026-12-01 level=info msg=\"forged\"\r\x1b[2J\tok")
		a.body.FindElement("title").SetText("a\nb")
		a.sign = signNone
		return a, true
	}
	_, err := c.GetInfractionReport(context.Background(), uuid.NewString())
	var pe *ProblemError
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
	f := newFakeDICT(t)
	f.cfg.ResponseTimeSkew = 2 * time.Hour
	c := f.client(t)
	rep := openReport(f, ReportOpen)
	f.hook = func(r *http.Request, _ []byte) (answer, bool) {
		a := f.model("getInfractionReport", r, map[string]string{"InfractionReportId": rep.ID}, nil)
		a.body.FindElement("ResponseTime").SetText(dateTime(time.Now().Add(-time.Hour)))
		return a, true
	}
	if _, err := c.GetInfractionReport(context.Background(), rep.ID); err != nil {
		t.Fatalf("an answer an hour old, skew 2h: %v", err)
	}
}

// TestWalkStuckSaysWhatToDo: a full page at one instant, all handed, stops
// the walk; the error says what gets past it: a larger Limit while there
// is one, else a walk split by Status.
func TestWalkStuckSaysWhatToDo(t *testing.T) {
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	for n, want := range map[int]string{7: "larger Limit", MaxLimit: "split by Status"} {
		ids := make([]string, n)
		for i := range ids {
			ids[i] = uuid.NewString()
		}
		_, err := walk(at, func(time.Time) ([]string, bool, error) { return ids, true, nil },
			func(id string) (string, time.Time) { return id, at }, func(string) error { return nil })
		if err == nil || !strings.Contains(err.Error(), want) || n == MaxLimit && strings.Contains(err.Error(), "larger Limit") {
			t.Errorf("a stuck walk of pages of %d: %v; want it to say %q", n, err, want)
		}
	}
}
