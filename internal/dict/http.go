package dict

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/beevik/etree"
	dsig "github.com/russellhaering/goxmldsig"
)

// maxResponseBytes bounds what a call reads of an answer: a page of 200
// reports with their details is well under it, and a broken or hostile
// peer must not make the worker buffer without limit.
const maxResponseBytes = 4 << 20

// maxErrorText bounds what an error keeps of the DICT's words: errors go
// to logs, spans and Temporal failures.
const maxErrorText = 200

// MaxRetryAfter bounds the wait an answer's Retry-After asks for: a
// longer one (or one that does not fit a time.Duration) is cut to it. A
// worker that waits hours on an unsigned header a gateway may have
// written holds the MED's deadlines hostage; after 5 minutes the caller
// asks again and is told again.
const MaxRetryAfter = 5 * time.Minute

// DefaultResponseTimeSkew is how far an answer's ResponseTime may lie
// outside the call (before its sending, after its receipt) when
// Config.ResponseTimeSkew does not say: the two clocks' difference, which
// the RSFN's time synchronisation keeps well under it.
const DefaultResponseTimeSkew = 5 * time.Minute

// HTTPClient calls the DICT: mutual TLS, XML bodies, write requests signed
// by the bank's certificate, answers verified against the DICT's. It is
// safe for concurrent use.
type HTTPClient struct {
	base, policiesBase string
	participant        string
	timeout            time.Duration
	skew               time.Duration
	hc                 *http.Client
	sign               *dsig.SigningContext
	verify             *dsig.ValidationContext
}

// New returns a client of the DICT as cfg describes it: an error when the
// settings do not go together or a certificate or key can't be read.
func New(cfg Config) (*HTTPClient, error) {
	cfg.BaseURL = strings.TrimRight(cfg.BaseURL, "/")
	cfg.PoliciesURL = strings.TrimRight(cfg.PoliciesURL, "/")
	if err := cfg.check(); err != nil {
		return nil, err
	}
	tc, err := cfg.tlsConfig()
	if err != nil {
		return nil, err
	}
	key, cert, err := cfg.signingKey()
	if err != nil {
		return nil, err
	}
	sc, err := newSigningContext(key, cert)
	if err != nil {
		return nil, err
	}
	dictCerts, err := readCertificates(cfg.DICTCertFile)
	if err != nil {
		return nil, fmt.Errorf("dict certificate: %w", err)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = tc
	// The specification asks for connections kept and reused: a mutual TLS
	// handshake costs more than a call.
	tr.MaxIdleConnsPerHost = 16
	timeout := cfg.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	skew := cfg.ResponseTimeSkew
	if skew <= 0 {
		skew = DefaultResponseTimeSkew
	}
	policies := cfg.PoliciesURL
	if policies == "" {
		policies = cfg.BaseURL
	}
	return &HTTPClient{
		base: cfg.BaseURL, policiesBase: policies,
		participant: cfg.Participant,
		timeout:     timeout,
		skew:        skew,
		hc: &http.Client{
			Transport: tr,
			// The DICT does not redirect; following one would send a
			// signed request to an address nobody configured.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
		sign:   sc,
		verify: newValidationContext(dictCerts),
	}, nil
}

// exchange is one call of an operation.
type exchange struct {
	op     string // the specification's operationId
	policy policy // the token bucket the operation draws from
	base   string
	method string
	path   string
	query  url.Values
	// requester: the read carries PI-RequestingParticipant.
	requester bool
	// body is the request to sign and send; nil for a read.
	body any
	// answer is the root element of the operation's answer.
	answer string
	// timeOptional: the answer's ResponseTime is checked only when it has
	// one (the policies', where the specification does not require it).
	timeOptional bool
}

// do sends x and decodes the DICT's verified answer into into. Its errors
// are the package's classes (Classify).
func (c *HTTPClient) do(ctx context.Context, x exchange, into any) error {
	var body []byte
	if x.body != nil {
		var err error
		if body, err = signedXML(c.sign, x.body); err != nil {
			return fmt.Errorf("dict %s: %w: %w", x.op, ErrNotSent, err)
		}
	}
	callCtx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	u := x.base + x.path
	if len(x.query) > 0 {
		u += "?" + x.query.Encode()
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(callCtx, x.method, u, rd)
	if err != nil {
		return fmt.Errorf("dict %s: %w: %w", x.op, ErrNotSent, err)
	}
	req.Header.Set("Accept", "application/xml, application/problem+xml")
	if body != nil {
		req.Header.Set("Content-Type", "application/xml")
	}
	if x.requester {
		req.Header.Set("PI-RequestingParticipant", c.participant)
	}
	sent := time.Now()
	resp, err := c.hc.Do(req)
	if err != nil {
		return exchangeError(ctx, x.op, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes+1))
	if err != nil {
		return exchangeError(ctx, x.op, fmt.Errorf("read http %d answer: %w", resp.StatusCode, err))
	}
	if len(b) > maxResponseBytes {
		return fmt.Errorf("dict %s: %w: http %d answer larger than %d bytes", x.op, ErrUnknownOutcome, resp.StatusCode, maxResponseBytes)
	}
	received := time.Now()
	code := resp.StatusCode
	switch {
	case code == http.StatusOK || code == http.StatusCreated:
		signed, el, reason, err := verified(c.verify, b)
		if reason != "" {
			return &SignatureError{Operation: x.op, StatusCode: code, Reason: reason, cause: err}
		}
		if el.Tag != x.answer {
			return fmt.Errorf("dict %s: %w: http %d answer is %s, not %s", x.op, ErrUnknownOutcome, code, el.Tag, x.answer)
		}
		if reason := c.timely(el, sent, received, x.timeOptional); reason != "" {
			return &SignatureError{Operation: x.op, StatusCode: code, Reason: reason}
		}
		if err := xml.Unmarshal(signed, into); err != nil {
			return fmt.Errorf("dict %s: %w: decode %s: %w", x.op, ErrUnknownOutcome, x.answer, err)
		}
		return nil
	case later(code):
		// Nothing is accepted from it but "later", so it is taken without
		// a signature (a gateway's); the problem it names is the DICT's
		// word, a declared problem, only under the DICT's signature.
		pe := problemOf(x.op, code, b, false)
		if signed, _, reason, _ := verified(c.verify, b); reason == "" {
			pe = problemOf(x.op, code, signed, true)
		}
		pe.RetryAfter = retryAfter(resp.Header.Get("Retry-After"), time.Now())
		if pe.RetryAfter == 0 && code == http.StatusTooManyRequests {
			pe.RetryAfter = x.policy.refillInterval()
		}
		return pe
	case code >= 400 && code < 500:
		signed, _, reason, err := verified(c.verify, b)
		if reason != "" {
			return &SignatureError{Operation: x.op, StatusCode: code, Reason: reason, cause: err}
		}
		pe := problemOf(x.op, code, signed, true)
		if pe.Type == "" {
			return fmt.Errorf("dict %s: %w: http %d answer is not a problem", x.op, ErrUnknownOutcome, code)
		}
		return pe
	}
	return fmt.Errorf("dict %s: %w: unexpected http %d", x.op, ErrUnknownOutcome, code)
}

// exchangeError classifies a request that got no (complete) answer:
// whether the DICT received it is unknown. A caller that cancelled its
// context gets its own context.Canceled back: that says nothing about the
// DICT.
func exchangeError(ctx context.Context, op string, err error) error {
	if errors.Is(ctx.Err(), context.Canceled) {
		return fmt.Errorf("dict %s: %w", op, err)
	}
	return fmt.Errorf("dict %s: %w: %w", op, ErrUnknownOutcome, err)
}

// problemXML is an RFC 7807 problem in XML, as the DICT sends it.
type problemXML struct {
	XMLName       xml.Name `xml:"urn:ietf:rfc:7807 problem"`
	Type          string   `xml:"type"`
	Title         string   `xml:"title"`
	Status        int      `xml:"status"`
	Detail        string   `xml:"detail"`
	CorrelationID string   `xml:"correlationId"`
}

// problemOf reads a problem from body: a *ProblemError of code, with the
// problem's type when body is one, and its declared problem only when
// body is what the DICT's signature covers (signed): an unsigned type is
// kept for the log, never taken for the DICT's word.
func problemOf(op string, code int, body []byte, signed bool) *ProblemError {
	pe := &ProblemError{Operation: op, StatusCode: code, Signed: signed}
	var p problemXML
	if xml.Unmarshal(body, &p) == nil && p.Type != "" {
		pe.Type = bounded(p.Type)
		if signed {
			pe.Problem = problems[p.Type]
		}
		pe.Title, pe.Detail = bounded(strings.TrimSpace(p.Title)), bounded(strings.TrimSpace(p.Detail))
		pe.CorrelationID = bounded(p.CorrelationID)
	}
	return pe
}

// timely says why the verified answer el is not the answer to a call sent
// at sent and received at received ("" when it is): its ResponseTime, which
// the signature covers, must lie between them, give or take the clocks'
// skew. An answer of the DICT's replayed from another call (a page, a
// read of a report since changed) is otherwise indistinguishable from a
// fresh one: nothing else in it names its request.
func (c *HTTPClient) timely(el *etree.Element, sent, received time.Time, optional bool) string {
	rt := el.SelectElement("ResponseTime")
	if rt == nil {
		if optional {
			return ""
		}
		return "no ResponseTime"
	}
	t, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(rt.Text()))
	if err != nil {
		return fmt.Sprintf("ResponseTime %q unreadable", bounded(rt.Text()))
	}
	if t.Before(sent.Add(-c.skew)) || t.After(received.Add(c.skew)) {
		return fmt.Sprintf("ResponseTime %s outside the call (sent %s, received %s, skew %s): a replayed or delayed answer",
			dateTime(t), dateTime(sent), dateTime(received), c.skew)
	}
	return ""
}

// retryAfter reads a Retry-After header (RFC 9110 §10.2.3: seconds, or an
// HTTP date), cut to [0, MaxRetryAfter]; 0 when there is none, it is not
// ahead, or it says nothing usable (then a 429 waits for its bucket).
func retryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	// Compared before multiplied: seconds beyond int64 (ErrRange, s
	// then the bound) or beyond MaxRetryAfter never overflow.
	if s, err := strconv.ParseInt(v, 10, 64); err == nil || errors.Is(err, strconv.ErrRange) {
		switch {
		case s <= 0:
			return 0
		case s >= int64(MaxRetryAfter/time.Second):
			return MaxRetryAfter
		}
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		// Sub saturates; a date past is 0.
		return min(max(t.Sub(now), 0), MaxRetryAfter)
	}
	return 0
}

// bounded makes s fit for a log line: each control character (a line
// break, an escape sequence) a space, so that a peer's words can neither
// break a line nor forge one, and cut to maxErrorText bytes, on a rune
// boundary.
func bounded(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == '\u2028' || r == '\u2029' {
			return ' '
		}
		return r
	}, s)
	if len(s) <= maxErrorText {
		return s
	}
	cut := maxErrorText
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}
