package dict

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/beevik/etree"
	dsig "github.com/russellhaering/goxmldsig"

	"github.com/pixbank/pix/internal/dict/dictspec"
)

// The tests' DICT: an httptest TLS server that requires the bank's client
// certificate, checks every request the client sends against the facts
// document (dictspec) and the bank's signature, keeps infraction reports
// and refund requests as the specification describes them, and answers in
// XML signed by the DICT's key, each answer checked against the document
// too. Hooks let a test answer otherwise (a problem, a 429, an unsigned or
// tampered answer, a lost one).

const (
	bankISPB  = "12345678"
	payerISPB = "99999010"
	basePath  = "/api/v1"
)

// keyPair is a certificate and its key, in PEM files too.
type keyPair struct {
	cert              *x509.Certificate
	key               crypto.Signer
	certFile, keyFile string
}

// testKeys are the tests' keys by name: an RSA key takes long enough to
// make that each test's PKI reuses them (its certificates are its own).
var testKeys sync.Map

func testKey(t *testing.T, name string, isCA bool) crypto.Signer {
	t.Helper()
	if k, ok := testKeys.Load(name); ok {
		return k.(crypto.Signer)
	}
	var key crypto.Signer
	var err error
	if isCA {
		key, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	} else {
		// The DICT's and the bank's signatures are RSA, as the Pix's
		// certificates are.
		key, err = rsa.GenerateKey(rand.Reader, 2048)
	}
	if err != nil {
		t.Fatal(err)
	}
	k, _ := testKeys.LoadOrStore(name, key)
	return k.(crypto.Signer)
}

// newCA returns a self-signed CA.
func newCA(t *testing.T, dir, name string) keyPair {
	t.Helper()
	return issue(t, dir, name, nil, true)
}

// issue makes a certificate for name, signed by ca (nil: self-signed).
func issue(t *testing.T, dir, name string, ca *keyPair, isCA bool) keyPair {
	t.Helper()
	key := testKey(t, name, isCA)
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: name},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
	}
	parent, signer := tmpl, key
	if isCA {
		tmpl.IsCA, tmpl.BasicConstraintsValid = true, true
		tmpl.KeyUsage |= x509.KeyUsageCertSign
	}
	if ca != nil {
		parent, signer = ca.cert, ca.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, key.Public(), signer)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	kp := keyPair{cert: cert, key: key, certFile: filepath.Join(dir, name+".crt"), keyFile: filepath.Join(dir, name+".key")}
	write := func(file, typ string, b []byte) {
		if err := os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: b}), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(kp.certFile, "CERTIFICATE", der)
	write(kp.keyFile, "PRIVATE KEY", keyDER)
	return kp
}

// answer is what a hook makes the DICT answer instead.
type answer struct {
	status int
	header http.Header
	body   *etree.Element // signed unless sign says otherwise
	sign   signMode
	raw    []byte // sent as is, unchecked (not XML, say)
}

type signMode int

const (
	signDICT     signMode = iota // by the DICT's key: the real thing
	signNone                     // unsigned
	signOther                    // by a key the client does not trust
	signTampered                 // by the DICT's key, then changed
)

// fakeDICT is the tests' DICT.
type fakeDICT struct {
	t      *testing.T
	srv    *httptest.Server
	spec   *dictspec.Spec
	dict   keyPair // the DICT's signing certificate
	other  keyPair // a certificate the client does not trust
	bankCA keyPair
	// bankSigner is the certificate the DICT takes the bank's signatures
	// from.
	bankSigner *x509.Certificate
	// the client's settings
	cfg Config

	mu      sync.Mutex
	reports map[string]*InfractionReport
	refunds map[string]*Refund
	// hook, if set, may answer a request (after its checks) instead of the
	// DICT's model: ok false lets the model answer.
	hook func(r *http.Request, body []byte) (answer, bool)
	// drop: the model does the request, and the answer is lost (the
	// connection is cut).
	drop bool
	// calls counts the requests by operationId.
	calls map[string]int
	now   time.Time
}

func newFakeDICT(t *testing.T) *fakeDICT {
	t.Helper()
	spec, err := dictspec.Load()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	serverCA := newCA(t, dir, "rsfn-ca")
	bankCA := newCA(t, dir, "bank-ca")
	server := issue(t, dir, "dict-tls", &serverCA, false)
	bankTLS := issue(t, dir, "bank-tls", &bankCA, false)
	f := &fakeDICT{
		t: t, spec: spec, bankCA: bankCA,
		dict:    issue(t, dir, "dict-signer", &serverCA, false),
		other:   issue(t, dir, "other-signer", &serverCA, false),
		reports: map[string]*InfractionReport{}, refunds: map[string]*Refund{},
		calls: map[string]int{},
		now:   time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC),
	}
	f.bankSigner = bankTLS.cert
	f.srv = httptest.NewUnstartedServer(http.HandlerFunc(f.serve))
	pool := x509.NewCertPool()
	pool.AddCert(bankCA.cert)
	tlsCert, err := tls.LoadX509KeyPair(server.certFile, server.keyFile)
	if err != nil {
		t.Fatal(err)
	}
	f.srv.TLS = &tls.Config{
		Certificates: []tls.Certificate{tlsCert},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    pool,
		MinVersion:   tls.VersionTLS12,
	}
	// A refused handshake (TestMutualTLS) is the test's point, not news.
	f.srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	f.srv.StartTLS()
	t.Cleanup(f.srv.Close)
	f.cfg = Config{
		BaseURL:      f.srv.URL + basePath,
		Participant:  bankISPB,
		Timeout:      5 * time.Second,
		CertFile:     bankTLS.certFile,
		KeyFile:      bankTLS.keyFile,
		CAFile:       serverCA.certFile,
		DICTCertFile: f.dict.certFile,
	}
	return f
}

func (f *fakeDICT) client(t *testing.T) *HTTPClient {
	t.Helper()
	c, err := New(f.cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// tick advances the DICT's clock by d and returns it.
func (f *fakeDICT) tick(d time.Duration) time.Time {
	f.now = f.now.Add(d)
	return f.now
}

func (f *fakeDICT) addReport(r InfractionReport) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reports[r.ID] = &r
}

func (f *fakeDICT) addRefund(r Refund) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.refunds[r.ID] = &r
}

func (f *fakeDICT) count(op string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[op]
}

func (f *fakeDICT) serve(w http.ResponseWriter, r *http.Request) {
	t := f.t
	body, err := io.ReadAll(r.Body)
	if err != nil {
		t.Errorf("read request: %v", err)
		return
	}
	rel := r.Clone(r.Context())
	rel.URL.Path = strings.TrimPrefix(r.URL.Path, basePath)
	if err := f.spec.CheckRequest(rel, body); err != nil {
		t.Errorf("client request: %v", err)
		f.write(w, rel, f.problem(http.StatusBadRequest, "BadRequest", err.Error()))
		return
	}
	op, params, _ := f.spec.Find(rel.Method, rel.URL.Path)
	f.mu.Lock()
	f.calls[op.ID]++
	f.mu.Unlock()
	var req *etree.Element
	if op.Signed {
		if req, err = f.verifyBank(body); err != nil {
			f.write(w, rel, f.problem(http.StatusBadRequest, "RequestSignatureInvalid", err.Error()))
			return
		}
	}
	if f.hook != nil {
		if a, ok := f.hook(rel, body); ok {
			f.write(w, rel, a)
			return
		}
	}
	f.mu.Lock()
	a := f.model(op.ID, rel, params, req)
	drop := f.drop
	f.mu.Unlock()
	if drop {
		// Done, and the answer lost: the connection is cut.
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
		return
	}
	f.write(w, rel, a)
}

// verifyBank checks the bank's enveloped signature on a request.
func (f *fakeDICT) verifyBank(body []byte) (*etree.Element, error) {
	doc := etree.NewDocument()
	if err := doc.ReadFromBytes(body); err != nil {
		return nil, err
	}
	vc := dsig.NewDefaultValidationContext(&dsig.MemoryX509CertificateStore{Roots: []*x509.Certificate{f.bankSigner}})
	return vc.Validate(doc.Root())
}

// model is the DICT's behaviour, under f.mu.
func (f *fakeDICT) model(op string, r *http.Request, params map[string]string, req *etree.Element) answer {
	switch op {
	case "listInfractionReport":
		q := r.URL.Query()
		var list []*InfractionReport
		for _, rep := range f.reports {
			if q.Get("IsCredited") == "true" && rep.CreditedParticipant != q.Get("Participant") ||
				q.Get("IsDebited") == "true" && rep.DebitedParticipant != q.Get("Participant") ||
				len(q["Status"]) > 0 && !slices.Contains(q["Status"], string(rep.Status)) ||
				!inWindow(rep.LastModified, q) {
				continue
			}
			list = append(list, rep)
		}
		slices.SortFunc(list, func(a, b *InfractionReport) int {
			if c := a.LastModified.Compare(b.LastModified); c != 0 {
				return c
			}
			return cmpID(a.ID, b.ID)
		})
		page, more := paged(list, q)
		root := f.answerRoot("ListInfractionReportsResponse")
		root.CreateElement("HasMoreElements").SetText(strconv.FormatBool(more))
		if len(page) > 0 {
			wrap := root.CreateElement("InfractionReports")
			for _, rep := range page {
				reportElement(wrap, rep)
			}
		}
		return answer{status: http.StatusOK, body: root}
	case "getInfractionReport", "acknowledgeInfractionReport", "closeInfractionReport":
		rep := f.reports[params["InfractionReportId"]]
		if rep == nil {
			return f.problem(http.StatusNotFound, "NotFound", "no such infraction report")
		}
		switch op {
		case "acknowledgeInfractionReport":
			switch rep.Status {
			case ReportOpen:
				rep.Status, rep.LastModified = ReportAcknowledged, f.tick(time.Second)
			case ReportAcknowledged:
			default:
				return f.problem(http.StatusBadRequest, "InfractionReportOperationInvalid", "report is "+string(rep.Status))
			}
		case "closeInfractionReport":
			result := AnalysisResult(req.FindElement("AnalysisResult").Text())
			details := ""
			if d := req.FindElement("AnalysisDetails"); d != nil {
				details = d.Text()
			}
			switch {
			case rep.Status == ReportAcknowledged:
				rep.Status, rep.AnalysisResult, rep.AnalysisDetails, rep.LastModified = ReportClosed, result, details, f.tick(time.Second)
			case rep.Status == ReportClosed && rep.AnalysisResult == result && rep.AnalysisDetails == details:
			default:
				return f.problem(http.StatusBadRequest, "InfractionReportOperationInvalid", "report is "+string(rep.Status))
			}
		}
		root := f.answerRoot(map[string]string{
			"getInfractionReport":         "GetInfractionReportResponse",
			"acknowledgeInfractionReport": "AcknowledgeInfractionReportResponse",
			"closeInfractionReport":       "CloseInfractionReportResponse",
		}[op])
		reportElement(root, rep)
		return answer{status: http.StatusOK, body: root}
	case "listRefund":
		q := r.URL.Query()
		var list []*Refund
		for _, ref := range f.refunds {
			party := ref.ContestedParticipant
			if q.Get("ParticipantRole") == string(RoleRequesting) {
				party = ref.RequestingParticipant
			}
			if party != q.Get("Participant") ||
				len(q["Status"]) > 0 && !slices.Contains(q["Status"], string(ref.Status)) ||
				!inWindow(ref.LastModified, q) {
				continue
			}
			list = append(list, ref)
		}
		slices.SortFunc(list, func(a, b *Refund) int {
			if c := a.LastModified.Compare(b.LastModified); c != 0 {
				return c
			}
			return cmpID(a.ID, b.ID)
		})
		page, more := paged(list, q)
		root := f.answerRoot("ListRefundsResponse")
		root.CreateElement("HasMoreElements").SetText(strconv.FormatBool(more))
		if len(page) > 0 {
			wrap := root.CreateElement("Refunds")
			for _, ref := range page {
				refundElement(wrap, ref)
			}
		}
		return answer{status: http.StatusOK, body: root}
	case "getRefund", "closeRefund":
		ref := f.refunds[params["RefundId"]]
		if ref == nil {
			return f.problem(http.StatusNotFound, "NotFound", "no such refund request")
		}
		if op == "closeRefund" {
			text := func(name string) string {
				if e := req.FindElement(name); e != nil {
					return e.Text()
				}
				return ""
			}
			result := RefundAnalysisResult(text("RefundAnalysisResult"))
			same := ref.AnalysisResult == result && ref.AnalysisDetails == text("RefundAnalysisDetails") &&
				ref.RefundTransactionID == text("RefundTransactionId") && string(ref.RefundRejectionReason) == text("RefundRejectionReason")
			switch {
			case ref.Status == RefundOpen:
				ref.Status, ref.AnalysisResult, ref.AnalysisDetails = RefundClosed, result, text("RefundAnalysisDetails")
				ref.RefundTransactionID, ref.RefundRejectionReason = text("RefundTransactionId"), RefundRejectionReason(text("RefundRejectionReason"))
				ref.LastModified = f.tick(time.Second)
			case ref.Status == RefundClosed && same:
			default:
				return f.problem(http.StatusBadRequest, "RefundOperationInvalid", "refund request is "+string(ref.Status))
			}
		}
		root := f.answerRoot(map[string]string{"getRefund": "GetRefundResponse", "closeRefund": "CloseRefundResponse"}[op])
		refundElement(root, ref)
		return answer{status: http.StatusOK, body: root}
	case "bucketStates":
		root := f.answerRoot("ListPoliciesResponse")
		root.CreateElement("Category").SetText("D")
		wrap := root.CreateElement("Policies")
		for _, p := range allPolicies {
			policyElement(wrap, p)
		}
		return answer{status: http.StatusOK, body: root}
	case "getPolicy":
		for _, p := range allPolicies {
			if p.name == params["policy"] {
				root := f.answerRoot("GetPolicyResponse")
				root.CreateElement("Category").SetText("D")
				policyElement(root, p)
				return answer{status: http.StatusOK, body: root}
			}
		}
		return f.problem(http.StatusNotFound, "NotFound", "no such policy")
	}
	f.t.Errorf("the fake DICT has no model of %s", op)
	return f.problem(http.StatusInternalServerError, "InternalServerError", "no model")
}

func cmpID(a, b string) int { return strings.Compare(a, b) }

// inWindow applies ModifiedAfter and ModifiedBefore, both included.
func inWindow(mod time.Time, q map[string][]string) bool {
	get := func(k string) string {
		if v := q[k]; len(v) > 0 {
			return v[0]
		}
		return ""
	}
	if a := get("ModifiedAfter"); a != "" {
		if t, _ := time.Parse(time.RFC3339Nano, a); mod.Before(t) {
			return false
		}
	}
	if b := get("ModifiedBefore"); b != "" {
		if t, _ := time.Parse(time.RFC3339Nano, b); mod.After(t) {
			return false
		}
	}
	return true
}

// paged cuts list to the query's Limit (DefaultLimit without one).
func paged[T any](list []T, q map[string][]string) ([]T, bool) {
	limit := DefaultLimit
	if v := q["Limit"]; len(v) > 0 {
		limit, _ = strconv.Atoi(v[0])
	}
	if len(list) > limit {
		return list[:limit], true
	}
	return list, false
}

func (f *fakeDICT) answerRoot(name string) *etree.Element {
	root := etree.NewElement(name)
	// The DICT's clock is the real one (the client holds ResponseTime to
	// its own); f.now is the model's, for LastModified.
	root.CreateElement("ResponseTime").SetText(dateTime(time.Now()))
	root.CreateElement("CorrelationId").SetText("a9f13566e19f5ca51329479a5bae60c5")
	return root
}

// problem is an RFC 7807 problem of the DICT.
func (f *fakeDICT) problem(status int, typ, detail string) answer {
	root := etree.NewElement("problem")
	root.CreateAttr("xmlns", "urn:ietf:rfc:7807")
	root.CreateElement("type").SetText(dictspec.ProblemTypeBase + typ)
	root.CreateElement("title").SetText(typ)
	root.CreateElement("status").SetText(strconv.Itoa(status))
	root.CreateElement("detail").SetText(detail)
	return answer{status: status, body: root}
}

func text(parent *etree.Element, name, v string) {
	if v != "" {
		parent.CreateElement(name).SetText(v)
	}
}

func reportElement(parent *etree.Element, r *InfractionReport) {
	e := parent.CreateElement("InfractionReport")
	text(e, "TransactionId", r.TransactionID)
	text(e, "InfractionType", string(r.InfractionType))
	text(e, "ReportedBy", string(r.ReportedBy))
	text(e, "ReportDetails", r.ReportDetails)
	text(e, "Id", r.ID)
	text(e, "Status", string(r.Status))
	text(e, "DebitedParticipant", r.DebitedParticipant)
	text(e, "CreditedParticipant", r.CreditedParticipant)
	text(e, "CreationTime", instant(r.CreationTime))
	text(e, "LastModified", instant(r.LastModified))
	text(e, "AnalysisResult", string(r.AnalysisResult))
	text(e, "AnalysisDetails", r.AnalysisDetails)
}

func refundElement(parent *etree.Element, r *Refund) {
	e := parent.CreateElement("Refund")
	amount, _ := r.RefundAmount.MarshalText()
	text(e, "TransactionId", r.TransactionID)
	text(e, "RefundReason", string(r.RefundReason))
	text(e, "RefundAmount", string(amount))
	text(e, "RefundDetails", r.RefundDetails)
	text(e, "Id", r.ID)
	text(e, "Status", string(r.Status))
	text(e, "ContestedParticipant", r.ContestedParticipant)
	text(e, "RequestingParticipant", r.RequestingParticipant)
	text(e, "CreationTime", instant(r.CreationTime))
	text(e, "LastModified", instant(r.LastModified))
	text(e, "InfractionReportId", r.InfractionReportID)
	text(e, "AnalysisResult", string(r.AnalysisResult))
	text(e, "AnalysisDetails", r.AnalysisDetails)
	text(e, "RefundRejectionReason", string(r.RefundRejectionReason))
	text(e, "RefundTransactionId", r.RefundTransactionID)
}

// instant writes the model's times as precisely as it keeps them: a DICT
// that sends more than milliseconds must not break the walks.
func instant(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

func policyElement(parent *etree.Element, p policy) {
	e := parent.CreateElement("Policy")
	text(e, "AvailableTokens", strconv.Itoa(p.bucketSize-1))
	text(e, "Capacity", strconv.Itoa(p.bucketSize))
	text(e, "RefillTokens", strconv.Itoa(p.refillPerMinute))
	text(e, "RefillPeriodSec", "60")
	text(e, "Name", p.name)
}

// write signs a and sends it, after checking it against the document
// (a raw answer is sent unchecked: it is meant to be wrong).
func (f *fakeDICT) write(w http.ResponseWriter, r *http.Request, a answer) {
	for k, v := range a.header {
		w.Header()[k] = v
	}
	body := a.raw
	if body == nil {
		body = f.signed(a)
		ct := "application/xml"
		if a.body.Tag == "problem" {
			ct = "application/problem+xml"
		}
		w.Header().Set("Content-Type", ct)
		if a.sign == signDICT {
			if err := f.spec.CheckResponse(r, a.status, w.Header(), body); err != nil {
				f.t.Errorf("fake DICT answer: %v", err)
			}
		}
	}
	w.WriteHeader(a.status)
	_, _ = w.Write(body)
}

func (f *fakeDICT) signed(a answer) []byte {
	doc := etree.NewDocument()
	doc.CreateProcInst("xml", `version="1.0" encoding="UTF-8"`)
	root := a.body.Copy()
	if a.sign != signNone {
		kp := f.dict
		if a.sign == signOther {
			kp = f.other
		}
		sc, err := newSigningContext(kp.key, kp.cert)
		if err != nil {
			f.t.Fatal(err)
		}
		if root, err = sc.SignEnveloped(root); err != nil {
			f.t.Fatal(err)
		}
	}
	doc.SetRoot(root)
	b, err := doc.WriteToBytes()
	if err != nil {
		f.t.Fatal(err)
	}
	if a.sign == signTampered {
		// The signed answer, one fact changed on the way.
		for _, swap := range [][2]string{{"AGREED", "DISAGREED"}, {"<Status>OPEN<", "<Status>CLOSED<"}, {"ACKNOWLEDGED", "CANCELLED"}, {"NotFound", "Forbidden"}} {
			if c := strings.Replace(string(b), swap[0], swap[1], 1); c != string(b) {
				return []byte(c)
			}
		}
		panic(fmt.Sprintf("nothing to tamper with in %s", b))
	}
	return b
}
