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
		{"retry-after date", time.Now().Add(time.Hour).UTC().Format(http.TimeFormat), func() error { _, err := c.GetRefund(ctx, uuid.NewString()); return err }, time.Hour},
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
			if d > tc.want || d < tc.want-5*time.Second || tc.want < time.Hour && d != tc.want {
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
	close(release)
	if !errors.Is(err, ErrUnknownOutcome) || Classify(err) != Unknown {
		t.Fatalf("timeout: %v (class %s)", err, Classify(err))
	}
	f.hook = nil

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
