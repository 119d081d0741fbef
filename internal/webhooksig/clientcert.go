package webhooksig

import (
	"crypto/x509"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// ErrCertNotListed: a client certificate the CA issued whose identities
// name no PSP of WEBHOOK_MTLS_PSPS (or name two).
var ErrCertNotListed = errors.New("the client certificate names no PSP of WEBHOOK_MTLS_PSPS")

// maxIdentityLen bounds an identity: a DNS name's 253 characters.
const maxIdentityLen = 253

// CertPSPs says which PSP a client certificate belongs to: the API Pix
// authenticates its webhooks by mutual TLS alone, so the certificate is the
// PSP's credential. An identity is a certificate's subject common name or
// one of its DNS SANs, compared without regard to ASCII case (DNS names
// are; a wildcard is a name like any other, never a pattern). The zero
// value lists none.
type CertPSPs struct {
	byIdentity map[string]string // lower-cased identity → PSP
	psps       []string          // in the order listed
}

// ParseCertPSPs reads the WEBHOOK_MTLS_PSPS configuration format:
//
//	psp-a=cn1,cn2;psp-b=cn3
//
// A PSP name (as in WEBHOOK_SECRETS: 1-64 characters of [A-Za-z0-9_.-])
// '=' one or more comma-separated identities; PSPs are separated by ';'.
// Spaces around names and identities are trimmed. It is strict: an empty
// entry, name or identity, a PSP or an identity listed twice (even under
// two PSPs: a certificate must name one PSP), and an identity of other
// than 1-253 printable ASCII characters (spaces inside allowed) are
// errors. The empty string lists none.
func ParseCertPSPs(s string) (CertPSPs, error) {
	if strings.TrimSpace(s) == "" {
		return CertPSPs{}, nil
	}
	c := CertPSPs{byIdentity: map[string]string{}}
	for i, entry := range strings.Split(s, ";") {
		pos := i + 1
		name, list, ok := strings.Cut(entry, "=")
		if strings.TrimSpace(entry) == "" {
			return CertPSPs{}, fmt.Errorf("entry %d is empty (a ';' too many?)", pos)
		}
		if !ok {
			return CertPSPs{}, fmt.Errorf("entry %d: want psp=identity[,identity...], found no '='", pos)
		}
		name = strings.TrimSpace(name)
		if err := CheckPSPName(name); err != nil {
			return CertPSPs{}, fmt.Errorf("entry %d: %w", pos, err)
		}
		if slices.Contains(c.psps, name) {
			return CertPSPs{}, fmt.Errorf("entry %d: psp %q is listed twice", pos, name)
		}
		c.psps = append(c.psps, name)
		for j, identity := range strings.Split(list, ",") {
			identity = strings.TrimSpace(identity)
			if err := checkIdentity(identity); err != nil {
				return CertPSPs{}, fmt.Errorf("entry %d (psp %q) identity %d: %w", pos, name, j+1, err)
			}
			key := strings.ToLower(identity)
			if other, dup := c.byIdentity[key]; dup {
				return CertPSPs{}, fmt.Errorf("entry %d (psp %q): identity %q is listed twice (also for psp %q)", pos, name, identity, other)
			}
			c.byIdentity[key] = name
		}
	}
	return c, nil
}

// checkIdentity accepts 1-maxIdentityLen printable ASCII characters, none
// of them a separator of the format.
func checkIdentity(identity string) error {
	if identity == "" || len(identity) > maxIdentityLen {
		return fmt.Errorf("must be 1-%d characters long", maxIdentityLen)
	}
	if !printableASCII(identity) || strings.Contains(identity, "=") {
		return errors.New("must be printable ASCII, without '='")
	}
	return nil
}

// Listed reports whether any PSP is listed.
func (c CertPSPs) Listed() bool { return len(c.psps) > 0 }

// PSPs are the PSPs listed, in the order listed.
func (c CertPSPs) PSPs() []string { return slices.Clone(c.psps) }

// PSPOf returns the PSP whose identity cert (a leaf that chained to the
// client CA) carries: its subject common name or a DNS SAN. A certificate
// that names none, or names two PSPs, is ErrCertNotListed.
func (c CertPSPs) PSPOf(cert *x509.Certificate) (string, error) {
	psp := ""
	for _, identity := range append([]string{cert.Subject.CommonName}, cert.DNSNames...) {
		if !printableASCII(identity) {
			// Listed identities are ASCII; folding another's case could
			// make one of them (the Kelvin sign folds to k).
			continue
		}
		p, ok := c.byIdentity[strings.ToLower(identity)]
		switch {
		case !ok:
		case psp == "":
			psp = p
		case p != psp:
			return "", fmt.Errorf("%w: it names both %q and %q", ErrCertNotListed, psp, p)
		}
	}
	if psp == "" {
		return "", ErrCertNotListed
	}
	return psp, nil
}
