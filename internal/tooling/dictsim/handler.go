package dictsim

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/beevik/etree"
	dsig "github.com/russellhaering/goxmldsig"

	"github.com/pixbank/pix/internal/dict"
)

// maxRequestBytes bounds a request's body: a close with its 2,000
// characters of details and its signature is a few kilobytes.
const maxRequestBytes = 64 << 10

// Handler is the DICT's API, under the base path (Options.BasePath): the
// operations of dict-api.yaml, found by its paths (package dictspec).
// Every request goes through, in order:
//
//   - its operation: a path and method of no operation is 404 NotFound;
//   - for a write (a signed operation), its XML, its participant (the
//     body's Participant, who must be the connection's) and its
//     signature, by a signing certificate of that participant: a body that
//     is not XML is 400 BadRequest, a participant the simulator does not
//     know or that is not the connection's 403 Forbidden, a signature
//     missing, broken or by another certificate 400
//     RequestSignatureInvalid;
//   - its keeping to the document (dictspec.CheckRequest): 400
//     BadRequest, and Options.OnViolation is told;
//   - for a read or a list, its participant (PI-RequestingParticipant, or
//     the list's Participant), who must be the connection's: otherwise
//     NotFound for a read (the document gives it no 403), Forbidden for a
//     list;
//   - the answer hook (SetAnswerHook), if any, or the model: a DICT down
//     (SetOutage) is 503 ServiceUnavailable; an empty bucket (or a storm,
//     RateLimitStorm) 429 RateLimited; then the operation itself, whose
//     answer may be lost (LoseAnswers).
//
// The connection's participant is the one whose TLS client certificate it
// presents (Participant.TLSCertificates); without TLS (the handler served
// behind a proxy, or in a test), the participant the request names.
//
// Each request is logged once (Options.Logger): its operation, participant,
// status, and whether its answer was lost or it was refused.
func (s *Simulator) Handler() http.Handler { return http.HandlerFunc(s.serve) }

func (s *Simulator) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxRequestBytes))
	if err != nil {
		s.write(w, nil, ProblemAnswer(http.StatusBadRequest, dict.ErrBadRequest.Name(), "body unreadable or too large"))
		return
	}
	rest, ok := strings.CutPrefix(r.URL.Path, s.basePath)
	if !ok || !strings.HasPrefix(rest, "/") {
		s.write(w, nil, ProblemAnswer(http.StatusNotFound, dict.ErrNotFound.Name(), "not under "+s.basePath))
		return
	}
	rel := r.Clone(r.Context())
	rel.URL.Path, rel.URL.RawPath = rest, ""
	op, params, err := s.spec.Find(rel.Method, rel.URL.Path)
	if err != nil {
		s.write(w, nil, ProblemAnswer(http.StatusNotFound, dict.ErrNotFound.Name(), "no such operation"))
		return
	}
	s.mu.Lock()
	s.calls[op.ID]++
	hook := s.hook
	s.mu.Unlock()
	x := &Exchange{Op: op.ID, Request: rel, Body: body, op: op, params: params}
	a, refused := s.admit(x)
	if !refused {
		model := func() Answer { return s.model(x) }
		if hook != nil {
			a = hook(x, model)
		} else {
			a = model()
		}
	}
	s.log.LogAttrs(context.WithoutCancel(r.Context()), slog.LevelInfo, "dict simulator request",
		slog.String("op", x.Op), slog.String("participant", x.Participant), slog.Int("status", a.Status),
		slog.String("problem", a.problemName()), slog.Bool("refused", refused), slog.String("answer_lost", string(a.Loss)))
	s.write(w, x, a)
}

// problemName names the problem a answers, for the log; "" for none.
func (a Answer) problemName() string {
	if a.Body == nil {
		return ""
	}
	if t := a.Body.SelectElement("type"); t != nil {
		return strings.TrimPrefix(t.Text(), dict.ProblemTypePrefix)
	}
	return ""
}

// admit checks what every request must be before it is answered (see
// Handler), and fills x's participant and signed fields; refused: the
// answer is the refusal.
func (s *Simulator) admit(x *Exchange) (Answer, bool) {
	r := x.Request
	if x.op.Signed {
		if a, refused := s.admitSigned(x); refused {
			return a, true
		}
	}
	if err := s.spec.CheckRequest(r, x.Body); err != nil {
		s.violation(fmt.Errorf("dict simulator request: %w", err))
		a := problem(http.StatusBadRequest, dict.ErrBadRequest, err.Error())
		// A read's documented answers have no 400: the request broke the
		// document first, which is what is told. A list's and a write's
		// have, and the refusal is checked as any answer.
		a.Unchecked = x.op.Responses["400"] == nil
		return a, true
	}
	if x.op.Signed {
		return Answer{}, false
	}
	claimed := r.Header.Get("PI-RequestingParticipant")
	if claimed == "" {
		claimed = r.URL.Query().Get("Participant")
	}
	p, ok := s.connection(r, claimed)
	if !ok {
		return s.notYours(x, "PI-RequestingParticipant or Participant "+claimed+" is not the connection's participant"), true
	}
	x.Participant = p
	return Answer{}, false
}

// admitSigned reads a write's body, its participant and its signature.
func (s *Simulator) admitSigned(x *Exchange) (Answer, bool) {
	doc := etree.NewDocument()
	if err := doc.ReadFromBytes(x.Body); err != nil || doc.Root() == nil {
		return problem(http.StatusBadRequest, dict.ErrBadRequest, "the body is not XML"), true
	}
	claimed := ""
	if e := doc.Root().SelectElement("Participant"); e != nil {
		claimed = strings.TrimSpace(e.Text())
	}
	ispb, ok := s.connection(x.Request, claimed)
	if !ok {
		return problem(http.StatusForbidden, dict.ErrForbidden, "Participant "+claimed+" is not the connection's participant"), true
	}
	p, _ := s.participantOf(ispb)
	signed, err := verify(p.SigningCertificates, doc.Root())
	if err != nil {
		return problem(http.StatusBadRequest, dict.ErrRequestSignatureInvalid, "the request's signature: "+err.Error()), true
	}
	x.Participant = ispb
	x.fields = map[string]string{}
	for _, e := range signed.ChildElements() {
		x.fields[e.Tag] = e.Text()
	}
	return Answer{}, false
}

// verify returns what a signature of one of certs covers in root.
func verify(certs []*x509.Certificate, root *etree.Element) (*etree.Element, error) {
	vc := dsig.NewDefaultValidationContext(&dsig.MemoryX509CertificateStore{Roots: certs})
	el, err := vc.Validate(root)
	if errors.Is(err, dsig.ErrMissingSignature) {
		return nil, errors.New("unsigned")
	}
	return el, err
}

// VerifyRequest checks a signed request's body as the simulator does: the
// enveloped signature of participant ispb's. It returns what the signature
// covers.
func (s *Simulator) VerifyRequest(ispb string, body []byte) (*etree.Element, error) {
	p, ok := s.participantOf(ispb)
	if !ok {
		return nil, fmt.Errorf("no participant %s", ispb)
	}
	doc := etree.NewDocument()
	if err := doc.ReadFromBytes(body); err != nil {
		return nil, err
	}
	return verify(p.SigningCertificates, doc.Root())
}

// connection is the participant asking, claimed being the one the request
// names: the connection's, by its TLS client certificate, which must be
// claimed; without TLS, claimed. ok false: no participant the simulator
// knows, or not the one claimed.
func (s *Simulator) connection(r *http.Request, claimed string) (string, bool) {
	if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
		p, ok := s.participantByTLS(r.TLS.PeerCertificates[0])
		return p.ISPB, ok && p.ISPB == claimed
	}
	_, ok := s.participantOf(claimed)
	return claimed, ok
}

// notYours refuses a read or a list of a participant that is not the
// connection's: Forbidden where the document gives the operation a 403,
// else NotFound (a report of another's looks like none).
func (s *Simulator) notYours(x *Exchange, detail string) Answer {
	if x.op.Responses["403"] != nil {
		return problem(http.StatusForbidden, dict.ErrForbidden, detail)
	}
	return problem(http.StatusNotFound, dict.ErrNotFound, detail)
}

// operations are the simulator's model of each operation, called under
// s.mu with the simulated clock's now.
var operations = map[string]func(s *Simulator, x *Exchange, now time.Time) Answer{
	"listInfractionReport":        (*Simulator).listReports,
	"getInfractionReport":         (*Simulator).getReport,
	"acknowledgeInfractionReport": (*Simulator).acknowledgeReport,
	"closeInfractionReport":       (*Simulator).closeReport,
	"listRefund":                  (*Simulator).listRefunds,
	"getRefund":                   (*Simulator).getRefund,
	"closeRefund":                 (*Simulator).closeRefund,
	"bucketStates":                (*Simulator).listBuckets,
	"getPolicy":                   (*Simulator).getBucket,
}

// model is the simulator's answer to an admitted request: the faults in
// force, the participant's bucket, then the operation.
func (s *Simulator) model(x *Exchange) Answer {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	if a, down := s.outage(now); down {
		return a
	}
	if a, limited := s.take(x, now); limited {
		return a
	}
	do, ok := operations[x.Op]
	if !ok {
		s.violation(fmt.Errorf("dict simulator: no model of %s", x.Op))
		return problem(http.StatusInternalServerError, dict.ErrInternalServerError, "the simulator has no model of "+x.Op)
	}
	a := do(s, x, now)
	if x.op.Signed && s.faults.lose > 0 {
		s.faults.lose--
		a.Loss = s.faults.loseHow
	}
	return a
}
