package dict

import (
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"strings"
	"time"
)

// Config is how the bank reaches the DICT: its address, the bank's ISPB,
// the certificates of the mutual TLS and of the XML signatures.
type Config struct {
	// BaseURL is the API's base, with its path: the specification's
	// production server is https://dict.pi.rsfn.net.br:16422/api/v1
	// (homologation https://dict-h.pi.rsfn.net.br:16522/api/v1).
	BaseURL string
	// PoliciesURL is the base of the rate-limit policies, which the
	// specification serves from a host of its own
	// (https://dict-ratelimit.pi.rsfn.net.br:16422/api/v1); "" is BaseURL.
	PoliciesURL string
	// Participant is the bank's ISPB (8 digits): the Participant of the
	// lists and the signed requests, the PI-RequestingParticipant header of
	// the reads.
	Participant string
	// Timeout bounds each call; <= 0 is DefaultTimeout. A call may end
	// sooner by its context.
	Timeout time.Duration
	// ResponseTimeSkew is how far an answer's ResponseTime may lie before
	// the call's sending or after its receipt (the clocks' difference);
	// <= 0 is DefaultResponseTimeSkew. An answer outside is not accepted
	// (doc.go, "Transport and signatures").
	ResponseTimeSkew time.Duration

	// CertFile and KeyFile are the bank's client certificate and key
	// (PEM) of the mutual TLS the DICT requires.
	CertFile, KeyFile string
	// CAFile holds the CA certificates (PEM) of the DICT's TLS server
	// certificate; "" trusts the system roots.
	CAFile string

	// SigningCertFile and SigningKeyFile are the bank's certificate and
	// key (PEM) that sign the write requests; "" for both is CertFile and
	// KeyFile.
	SigningCertFile, SigningKeyFile string
	// DICTCertFile holds the DICT's signing certificates (PEM; more than
	// one while the DICT rolls its certificate over): an answer is
	// accepted only when its signature is by one of them.
	DICTCertFile string
}

// DefaultTimeout bounds a call when Config.Timeout does not: the DICT's
// operations answer in well under a second, and a call that hangs holds a
// worker's activity slot.
const DefaultTimeout = 10 * time.Second

var ispbPattern = regexp.MustCompile(`^[0-9]{8}$`)

// check reports what is wrong with cfg's combination of settings.
func (cfg Config) check() error {
	var errs []error
	for _, b := range []struct{ name, raw string }{{"dict base url", cfg.BaseURL}, {"dict policies url", cfg.PoliciesURL}} {
		if b.raw == "" && b.name == "dict policies url" {
			continue
		}
		u, err := url.Parse(b.raw)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("%s: %w", b.name, errors.Unwrap(err)))
		case u.Scheme != "https" || u.Host == "" || u.User != nil || strings.ContainsAny(b.raw, "?#"):
			// The DICT is reached over mutual TLS only.
			errs = append(errs, fmt.Errorf("%s %q: want https://host[:port][/path], without credentials, query or fragment", b.name, u.Redacted()))
		}
	}
	if !ispbPattern.MatchString(cfg.Participant) {
		errs = append(errs, fmt.Errorf("dict participant %q: want the bank's ISPB, 8 digits", cfg.Participant))
	}
	if cfg.CertFile == "" || cfg.KeyFile == "" {
		errs = append(errs, errors.New("dict client certificate: the DICT requires mutual TLS: set the certificate and its key"))
	}
	if (cfg.SigningCertFile == "") != (cfg.SigningKeyFile == "") {
		errs = append(errs, errors.New("dict signing certificate: set both the certificate and its key, or neither"))
	}
	if cfg.DICTCertFile == "" {
		errs = append(errs, errors.New("dict certificate: the DICT's signing certificate is required to verify its answers"))
	}
	return errors.Join(errs...)
}

// tlsConfig is the TLS of every connection to the DICT: the bank's client
// certificate, the DICT's CA (or the system roots).
func (cfg Config) tlsConfig() (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(cfg.CertFile, cfg.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("dict client certificate: %w", err)
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}}
	if cfg.CAFile != "" {
		certs, err := readCertificates(cfg.CAFile)
		if err != nil {
			return nil, fmt.Errorf("dict ca file: %w", err)
		}
		pool := x509.NewCertPool()
		for _, c := range certs {
			pool.AddCert(c)
		}
		tc.RootCAs = pool
	}
	return tc, nil
}

// signingKey is the bank's key and certificate that sign the requests.
func (cfg Config) signingKey() (crypto.Signer, *x509.Certificate, error) {
	certFile, keyFile := cfg.SigningCertFile, cfg.SigningKeyFile
	if certFile == "" {
		certFile, keyFile = cfg.CertFile, cfg.KeyFile
	}
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, nil, fmt.Errorf("dict signing certificate: %w", err)
	}
	signer, ok := pair.PrivateKey.(crypto.Signer)
	if !ok {
		return nil, nil, fmt.Errorf("dict signing key %s: %T cannot sign", keyFile, pair.PrivateKey)
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return nil, nil, fmt.Errorf("dict signing certificate %s: %w", certFile, err)
	}
	return signer, leaf, nil
}

// readCertificates reads every PEM certificate of file: at least one.
func readCertificates(file string) ([]*x509.Certificate, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var certs []*x509.Certificate
	for {
		var block *pem.Block
		block, b = pem.Decode(b)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		certs = append(certs, c)
	}
	if len(certs) == 0 {
		return nil, fmt.Errorf("%s: no PEM certificate in it", file)
	}
	return certs, nil
}
