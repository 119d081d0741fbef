package dictsim

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/beevik/etree"

	"github.com/pixbank/pix/internal/dict"
	"github.com/pixbank/pix/internal/dict/dictspec"
)

// Answer is what the simulator answers a request: its own, or a hook's.
type Answer struct {
	Status int
	Header http.Header
	// Body is the answer's root element, written as XML and signed as
	// Sign says.
	Body *etree.Element
	Sign SignMode
	// Raw, when not nil, is sent as it is instead of Body, unsigned and
	// unchecked (not XML, say).
	Raw []byte
	// Unchecked: not checked against the document (a status it does not
	// give the operation, on purpose).
	Unchecked bool
	// Loss loses the answer: the request is done, and the answer never
	// reaches the client.
	Loss Loss
}

// SignMode is how an answer is signed.
type SignMode int

// The ways an answer is signed.
const (
	// SignDICT: by the DICT's certificate, as every answer of the DICT.
	SignDICT SignMode = iota
	// SignNone: unsigned, as a gateway's answer.
	SignNone
	// SignForeign: by a certificate the client does not trust
	// (Options.Foreign).
	SignForeign
	// SignTampered: by the DICT's certificate, then one fact changed on
	// the way.
	SignTampered
)

// Loss is how an answer is lost.
type Loss string

// The ways an answer is lost.
const (
	// LossNone: the answer is sent.
	LossNone Loss = ""
	// LossCut: the connection is cut before the answer's status line.
	LossCut Loss = "cut"
	// LossGatewayTimeout: a gateway answers 504 without a body, as one
	// that gave up waiting for the DICT.
	LossGatewayTimeout Loss = "gateway_timeout"
)

func (l Loss) valid() bool { return l == LossCut || l == LossGatewayTimeout }

// ProblemAnswer is an RFC 7807 problem of the DICT in XML, signed: status,
// the type's name (NotFound: its type is dict.ProblemTypePrefix + name),
// and detail.
func ProblemAnswer(status int, name, detail string) Answer {
	root := etree.NewElement("problem")
	root.CreateAttr("xmlns", "urn:ietf:rfc:7807")
	root.CreateElement("type").SetText(dictspec.ProblemTypeBase + name)
	root.CreateElement("title").SetText(name)
	root.CreateElement("status").SetText(strconv.Itoa(status))
	if detail != "" {
		root.CreateElement("detail").SetText(detail)
	}
	root.CreateElement("correlationId").SetText(correlationID())
	return Answer{Status: status, Body: root}
}

// answerRoot is the root of an answer: its ResponseTime, on the real
// clock (the client holds it to its own), and a CorrelationId.
func answerRoot(name string) *etree.Element {
	root := etree.NewElement(name)
	root.CreateElement("ResponseTime").SetText(instant(time.Now()))
	root.CreateElement("CorrelationId").SetText(correlationID())
	return root
}

// correlationID is a new CorrelationId: 32 hexadecimal digits.
func correlationID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return hex.EncodeToString(b)
}

// instant writes t as precisely as the simulator keeps it, in UTC: a
// client's walk must cope with a DICT that writes more than milliseconds.
func instant(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// text adds the element name with v, unless v is empty (the document's
// optional elements are left out rather than sent empty).
func text(parent *etree.Element, name, v string) {
	if v != "" {
		parent.CreateElement(name).SetText(v)
	}
}

// reportElement writes r as the specification's InfractionReport (its
// ExtendedInfractionReport), without its free texts unless details.
func reportElement(parent *etree.Element, r *dict.InfractionReport, details bool) {
	e := parent.CreateElement("InfractionReport")
	text(e, "TransactionId", r.TransactionID)
	text(e, "TransactionType", r.TransactionType)
	text(e, "TransactionResult", r.TransactionResult)
	text(e, "InfractionType", string(r.InfractionType))
	if details {
		text(e, "ReportDetails", r.ReportDetails)
	}
	text(e, "Id", r.ID)
	text(e, "ReportedBy", string(r.ReportedBy))
	text(e, "Status", string(r.Status))
	text(e, "DebitedParticipant", r.DebitedParticipant)
	text(e, "CreditedParticipant", r.CreditedParticipant)
	text(e, "CreationTime", instant(r.CreationTime))
	text(e, "LastModified", instant(r.LastModified))
	text(e, "AnalysisResult", string(r.AnalysisResult))
	if details {
		text(e, "AnalysisDetails", r.AnalysisDetails)
	}
}

// refundElement writes r as the specification's Refund (its
// ExtendedRefund), without its free texts unless details.
func refundElement(parent *etree.Element, r *dict.Refund, details bool) {
	e := parent.CreateElement("Refund")
	amount, _ := r.RefundAmount.MarshalText() // never negative: OpenRefund refuses it
	text(e, "TransactionId", r.TransactionID)
	text(e, "RefundReason", string(r.RefundReason))
	text(e, "RefundAmount", string(amount))
	if details {
		text(e, "RefundDetails", r.RefundDetails)
	}
	text(e, "Id", r.ID)
	text(e, "Status", string(r.Status))
	text(e, "ContestedParticipant", r.ContestedParticipant)
	text(e, "RequestingParticipant", r.RequestingParticipant)
	text(e, "CreationTime", instant(r.CreationTime))
	text(e, "LastModified", instant(r.LastModified))
	text(e, "InfractionReportId", r.InfractionReportID)
	text(e, "AnalysisResult", string(r.AnalysisResult))
	if details {
		text(e, "AnalysisDetails", r.AnalysisDetails)
	}
	text(e, "RefundRejectionReason", string(r.RefundRejectionReason))
	text(e, "RefundTransactionId", r.RefundTransactionID)
}

// encode writes a's body as XML, signed as a.Sign says.
func (s *Simulator) encode(a Answer) ([]byte, error) {
	root := a.Body.Copy()
	sc := s.sign
	if a.Sign == SignForeign && s.foreign != nil {
		sc = s.foreign
	}
	if a.Sign != SignNone {
		// The Signature is the root's first child, where every example of
		// the specification puts it (goxmldsig's SignEnveloped appends
		// it). It matters to a goxmldsig verifier: it stops looking for the
		// Signature after 1,000 elements, so a page of more than about 65
		// reports whose Signature comes last cannot be verified at all.
		sig, err := sc.ConstructSignature(root, true)
		if err != nil {
			return nil, fmt.Errorf("sign: %w", err)
		}
		root.InsertChildAt(0, sig)
	}
	doc := etree.NewDocument()
	// A carriage return in a text is written &#xD;, as the client writes
	// its own: a raw one would be read as a line feed, and the digest
	// would be of another text than the one signed.
	doc.WriteSettings.CanonicalText = true
	doc.CreateProcInst("xml", `version="1.0" encoding="UTF-8"`)
	doc.SetRoot(root)
	b, err := doc.WriteToBytes()
	if err != nil {
		return nil, err
	}
	if a.Sign == SignTampered || a.Sign == SignForeign && s.foreign == nil {
		b = tampered(b)
	}
	return b, nil
}

// tampered is the signed answer b with one fact changed: a result, a
// status, a problem's type; or, without any of them, an element added.
func tampered(b []byte) []byte {
	for _, swap := range [][2]string{
		{"<AnalysisResult>AGREED<", "<AnalysisResult>DISAGREED<"},
		{"<Status>OPEN<", "<Status>CLOSED<"},
		{"<Status>ACKNOWLEDGED<", "<Status>CANCELLED<"},
		{"<Status>CLOSED<", "<Status>CANCELLED<"},
		{"/NotFound<", "/Forbidden<"},
	} {
		if c := strings.Replace(string(b), swap[0], swap[1], 1); c != string(b) {
			return []byte(c)
		}
	}
	end := strings.LastIndex(string(b), "</")
	return []byte(string(b[:end]) + "<Tampered>true</Tampered>" + string(b[end:]))
}

// write sends a for x (nil when the request is of no operation), after
// checking it against the document: a defect of the simulator's is told,
// and sent all the same. A lost answer is never sent.
func (s *Simulator) write(w http.ResponseWriter, x *Exchange, a Answer) {
	switch a.Loss {
	case LossCut:
		// The server cuts the connection (HTTP/1.1) or resets the stream
		// (HTTP/2), without logging it.
		panic(http.ErrAbortHandler)
	case LossGatewayTimeout:
		w.WriteHeader(http.StatusGatewayTimeout)
		return
	}
	for k, v := range a.Header {
		w.Header()[k] = v
	}
	body := a.Raw
	if body == nil {
		var err error
		if body, err = s.encode(a); err != nil {
			s.violation(fmt.Errorf("dict simulator answer: %w", err))
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		ct := "application/xml"
		if a.Body.Tag == "problem" {
			ct = "application/problem+xml"
		}
		w.Header().Set("Content-Type", ct)
		if x != nil && a.Sign == SignDICT && !a.Unchecked {
			if err := s.spec.CheckResponse(x.Request, a.Status, w.Header(), body); err != nil {
				s.violation(fmt.Errorf("dict simulator answer: %w", err))
			}
		}
	}
	w.WriteHeader(a.Status)
	_, _ = w.Write(body) // a write error is a client gone: nothing to do
}

// violation tells Options.OnViolation of a request or an answer that
// breaks the document, and logs it.
func (s *Simulator) violation(err error) {
	s.log.Warn("dict simulator: not what dict-api.yaml says", slog.String("error", err.Error()))
	if s.onViolation != nil {
		s.onViolation(err)
	}
}
