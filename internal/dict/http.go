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
	"unicode/utf8"

	dsig "github.com/russellhaering/goxmldsig"
)

// maxResponseBytes bounds what a call reads of an answer: a page of 200
// reports with their details is well under it, and a broken or hostile
// peer must not make the worker buffer without limit.
const maxResponseBytes = 4 << 20

// maxErrorText bounds what an error keeps of the DICT's words: errors go
// to logs, spans and Temporal failures.
const maxErrorText = 200

// HTTPClient calls the DICT: mutual TLS, XML bodies, write requests signed
// by the bank's certificate, answers verified against the DICT's. It is
// safe for concurrent use.
type HTTPClient struct {
	base, policiesBase string
	participant        string
	timeout            time.Duration
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
	policies := cfg.PoliciesURL
	if policies == "" {
		policies = cfg.BaseURL
	}
	return &HTTPClient{
		base: cfg.BaseURL, policiesBase: policies,
		participant: cfg.Participant,
		timeout:     timeout,
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
		if err := xml.Unmarshal(signed, into); err != nil {
			return fmt.Errorf("dict %s: %w: decode %s: %w", x.op, ErrUnknownOutcome, x.answer, err)
		}
		return nil
	case later(code):
		// Nothing is accepted from it but "later": its signature, if any,
		// is not needed.
		pe := problemOf(x.op, code, b)
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
		pe := problemOf(x.op, code, signed)
		if pe.Type == "" {
			return fmt.Errorf("dict %s: %w: http %d answer is not a problem", x.op, ErrUnknownOutcome, code)
		}
		pe.Signed = true
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
// problem's type when body is one.
func problemOf(op string, code int, body []byte) *ProblemError {
	pe := &ProblemError{Operation: op, StatusCode: code}
	var p problemXML
	if xml.Unmarshal(body, &p) == nil && p.Type != "" {
		pe.Type = bounded(p.Type)
		pe.Problem = problems[p.Type]
		pe.Title, pe.Detail = bounded(strings.TrimSpace(p.Title)), bounded(strings.TrimSpace(p.Detail))
		pe.CorrelationID = bounded(p.CorrelationID)
	}
	return pe
}

// retryAfter reads a Retry-After header (RFC 9110 §10.2.3: seconds, or an
// HTTP date); 0 when there is none or it says nothing usable.
func retryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(v); err == nil {
		if s <= 0 {
			return 0
		}
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// bounded cuts s to maxErrorText bytes, on a rune boundary.
func bounded(s string) string {
	if len(s) <= maxErrorText {
		return s
	}
	cut := maxErrorText
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}
