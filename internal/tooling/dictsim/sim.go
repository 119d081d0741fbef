package dictsim

import (
	"crypto"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"time"

	dsig "github.com/russellhaering/goxmldsig"

	"github.com/pixbank/pix/internal/dict"
	"github.com/pixbank/pix/internal/dict/dictspec"
)

// DefaultBasePath is the path of the DICT's base URL
// (https://dict.pi.rsfn.net.br:16422/api/v1), under which the simulator
// serves the API unless Options.BasePath says otherwise.
const DefaultBasePath = "/api/v1"

// DefaultCategory is the participants' category (the specification's
// PolicyCategory, A to F) the policies' answers name when
// Options.Category does not: a middle one; the buckets the MED calls draw
// from are the same in every category.
const DefaultCategory = "D"

// Signer is a certificate and its key that sign XML.
type Signer struct {
	Key         crypto.Signer
	Certificate *x509.Certificate
}

// Participant is a participant of the Pix the simulator knows: its ISPB,
// the client certificates its connections present, and the certificates
// its signed requests may be signed by.
type Participant struct {
	ISPB string
	// TLSCertificates are its mutual TLS client certificates: a request
	// over TLS is the participant's whose certificate it presents.
	TLSCertificates []*x509.Certificate
	// SigningCertificates are the certificates whose signatures of its
	// requests the simulator accepts (compared whole, as the client
	// compares the DICT's).
	SigningCertificates []*x509.Certificate
}

// Limit is a rate-limit policy's token bucket: how many tokens it refills
// a minute and how many it holds.
type Limit struct {
	RefillPerMinute int
	BucketSize      int
}

// Options configure a Simulator. Signer is required.
type Options struct {
	// Logger gets one line per request; nil discards them.
	Logger *slog.Logger
	// Now is the base of the simulated clock; nil is time.Now. The clock
	// is Now() plus what Advance added: a test freezes it with a fixed
	// Now and moves it with Advance. ResponseTime is never on it (see the
	// package's doc).
	Now func() time.Time
	// BasePath is the path the API is served under; "" is
	// DefaultBasePath. Both the DICT's API and its policies are served
	// there.
	BasePath string
	// Signer is the DICT's signing certificate and key: every answer is
	// signed by it.
	Signer Signer
	// Foreign is a certificate and key no client trusts, for answers a
	// test wants signed by another (SignForeign); nil: such answers are
	// signed by Signer and then tampered with.
	Foreign *Signer
	// Participants are the participants that may call: a request of
	// another is Forbidden (or NotFound, see the package's doc).
	Participants []Participant
	// Category is the participants' policy category; "" is
	// DefaultCategory.
	Category string
	// Limits replace the document's rate-limit policies by name (a test
	// that empties a bucket in a few calls); the others are the
	// document's (dictspec's x-policies).
	Limits map[string]Limit
	// ListLag hides from the lists what changed less than ListLag ago (by
	// the simulated clock): the specification says the lists may lag the
	// writes by up to 5 seconds. 0: the lists show every write at once.
	ListLag time.Duration
	// OnViolation is told each request that breaks dict-api.yaml (then
	// answered 400 BadRequest) and each answer of the simulator that
	// breaks it (a defect of the simulator's, sent all the same): the
	// tests fail on them. nil: they are logged only.
	OnViolation func(error)
}

// Simulator is an in-memory DICT. It is safe for concurrent use.
type Simulator struct {
	log         *slog.Logger
	spec        *dictspec.Spec
	base        func() time.Time
	basePath    string
	sign        *dsig.SigningContext
	foreign     *dsig.SigningContext
	category    string
	limits      map[string]Limit
	listLag     time.Duration
	onViolation func(error)
	// participants by ISPB.
	participants map[string]Participant

	mu      sync.Mutex
	offset  time.Duration // what Advance added to base
	reports map[string]*report
	refunds map[string]*refund
	buckets map[bucketKey]*bucket
	calls   map[string]int
	faults  faults
	hook    AnswerHook
}

var ispbPattern = regexp.MustCompile(`^[0-9]{8}$`)

// New returns an empty simulator: no report, no refund request, full
// buckets. An error when opts are malformed.
func New(opts Options) (*Simulator, error) {
	spec, err := dictspec.Load()
	if err != nil {
		return nil, err
	}
	s := &Simulator{
		log: opts.Logger, spec: spec, base: opts.Now,
		basePath: strings.TrimRight(opts.BasePath, "/"),
		category: opts.Category, listLag: opts.ListLag, onViolation: opts.OnViolation,
		limits:       map[string]Limit{},
		participants: map[string]Participant{},
		reports:      map[string]*report{}, refunds: map[string]*refund{},
		buckets: map[bucketKey]*bucket{}, calls: map[string]int{},
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.base == nil {
		s.base = time.Now
	}
	if opts.BasePath == "" {
		s.basePath = DefaultBasePath
	}
	if s.category == "" {
		s.category = DefaultCategory
	}
	var errs []error
	if !strings.HasPrefix(s.basePath, "/") {
		errs = append(errs, fmt.Errorf("base path %q: want /path", opts.BasePath))
	}
	if s.sign, err = signingContext(opts.Signer); err != nil {
		errs = append(errs, fmt.Errorf("dict signer: %w", err))
	}
	if opts.Foreign != nil {
		if s.foreign, err = signingContext(*opts.Foreign); err != nil {
			errs = append(errs, fmt.Errorf("foreign signer: %w", err))
		}
	}
	for _, p := range opts.Participants {
		switch {
		case !ispbPattern.MatchString(p.ISPB):
			errs = append(errs, fmt.Errorf("participant %q: want an ISPB, 8 digits", p.ISPB))
		case len(p.SigningCertificates) == 0:
			errs = append(errs, fmt.Errorf("participant %s: no signing certificate", p.ISPB))
		}
		s.participants[p.ISPB] = p
	}
	for name, l := range spec.Policies() {
		s.limits[name] = Limit{RefillPerMinute: l.RefillPerMinute, BucketSize: l.BucketSize}
	}
	for name, l := range opts.Limits {
		if _, ok := s.limits[name]; !ok {
			errs = append(errs, fmt.Errorf("limit %s: no such policy in the document", name))
		}
		if l.RefillPerMinute <= 0 || l.BucketSize <= 0 {
			errs = append(errs, fmt.Errorf("limit %s: want a positive refill and bucket size", name))
		}
		s.limits[name] = l
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("dict simulator: %w", err)
	}
	return s, nil
}

// signingContext signs with sg: RSA (or ECDSA) with SHA-256, exclusive XML
// canonicalization, the certificate in KeyInfo. It is the DICT's own
// (goxmldsig, as the client's), not the client's code: the client's
// signatures are verified by code that is not theirs.
func signingContext(sg Signer) (*dsig.SigningContext, error) {
	if sg.Key == nil || sg.Certificate == nil {
		return nil, errors.New("want a certificate and its key")
	}
	sc, err := dsig.NewSigningContext(sg.Key, [][]byte{sg.Certificate.Raw})
	if err != nil {
		return nil, err
	}
	sc.Canonicalizer = dsig.MakeC14N10ExclusiveCanonicalizerWithPrefixList("")
	return sc, nil
}

// now is the simulated clock. The caller holds s.mu.
func (s *Simulator) now() time.Time { return s.base().Add(s.offset).UTC() }

// Now is the simulated clock's time.
func (s *Simulator) Now() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.now()
}

// Advance moves the simulated clock d on (72 hours, 7 days: the MED's
// deadlines), and returns its new time. The buckets refill for the time
// passed, and the faults set for a while end by it. d must not be
// negative: the DICT's times never go back.
func (s *Simulator) Advance(d time.Duration) (time.Time, error) {
	if d < 0 {
		return time.Time{}, errors.New("the clock does not go back")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.offset += d
	return s.now(), nil
}

// Calls is how many requests of each operation (by the specification's
// operationId) the simulator received and recognised, refused ones
// included.
func (s *Simulator) Calls() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.calls)
}

// SetAnswerHook makes every request the simulator admits (its signature,
// its keeping to the document and its participant checked) answered by
// h, which may call model for the simulator's own answer (doing what the
// request asks), alter it, or answer otherwise without calling it: the
// tests of a client's handling of wrong answers. nil removes the hook.
func (s *Simulator) SetAnswerHook(h AnswerHook) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hook = h
}

// AnswerHook answers an admitted request instead of the simulator; model
// is the simulator's answer (SetAnswerHook).
type AnswerHook func(x *Exchange, model func() Answer) Answer

// Exchange is a request the simulator admitted.
type Exchange struct {
	// Op is the operation's operationId (getInfractionReport).
	Op string
	// Request is the request, its path relative to the base path.
	Request *http.Request
	// Body is the request's body as sent.
	Body []byte
	// Participant is the ISPB of the participant asking.
	Participant string

	op     *dictspec.Operation
	params map[string]string
	// fields are the texts of the signed body's elements (what its
	// signature covers), for a write.
	fields map[string]string
}

// participantOf is the participant registered under ispb (the
// participants are set once, by New: read without the lock).
func (s *Simulator) participantOf(ispb string) (Participant, bool) {
	p, ok := s.participants[ispb]
	return p, ok
}

// participantByTLS is the participant whose client certificate is cert.
func (s *Simulator) participantByTLS(cert *x509.Certificate) (Participant, bool) {
	for _, p := range s.participants {
		for _, c := range p.TLSCertificates {
			if c.Equal(cert) {
				return p, true
			}
		}
	}
	return Participant{}, false
}

// problem is the simulator's signed answer of a declared problem.
func problem(status int, p *dict.Problem, detail string) Answer {
	return ProblemAnswer(status, p.Name(), detail)
}
