package webhooksig

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"strings"
	"testing"
)

func TestParseCertPSPs(t *testing.T) {
	c, err := ParseCertPSPs(" psp-a = webhooks.psp-a.example , PSP A Webhooks ; psp-b=cn3")
	if err != nil {
		t.Fatal(err)
	}
	if got := c.PSPs(); len(got) != 2 || got[0] != "psp-a" || got[1] != "psp-b" || !c.Listed() {
		t.Fatalf("PSPs() = %v", got)
	}
	none, err := ParseCertPSPs("  ")
	if err != nil || none.Listed() {
		t.Fatalf("the empty string: %v, %v", none, err)
	}
	if (CertPSPs{}).Listed() {
		t.Fatal("the zero value lists a PSP")
	}

	for _, bad := range []struct{ in, says string }{
		{"psp-a=cn1;", "entry 2 is empty"},
		{";psp-a=cn1", "entry 1 is empty"},
		{"psp-a=cn1;;psp-b=cn2", "entry 2 is empty"},
		{"psp-a", "found no '='"},
		{"=cn1", "psp name"},
		{"psp a=cn1", "psp name"},
		{"psp-a=", "identity 1: must be 1-253"},
		{"psp-a=cn1,", "identity 2: must be 1-253"},
		{"psp-a=cn1,,cn2", "identity 2: must be 1-253"},
		{"psp-a=cn1;psp-a=cn2", `psp "psp-a" is listed twice`},
		{"psp-a=cn1,CN1", `identity "CN1" is listed twice`},
		{"psp-a=cn1;psp-b=cn1", `identity "cn1" is listed twice (also for psp "psp-a")`},
		{"psp-a=cn=1", "without '='"},
		{"psp-a=caf\u00e9", "printable ASCII"},
		{"psp-a=" + strings.Repeat("a", 254), "must be 1-253"},
	} {
		if _, err := ParseCertPSPs(bad.in); err == nil || !strings.Contains(err.Error(), bad.says) {
			t.Errorf("ParseCertPSPs(%q) = %v, want an error saying %q", bad.in, err, bad.says)
		}
	}
}

func TestCertPSPsPSPOf(t *testing.T) {
	c, err := ParseCertPSPs("psp-a=webhooks.psp-a.example,PSP A;psp-b=psp-b.example")
	if err != nil {
		t.Fatal(err)
	}
	cert := func(cn string, dns ...string) *x509.Certificate {
		return &x509.Certificate{Subject: pkix.Name{CommonName: cn}, DNSNames: dns}
	}
	for _, tc := range []struct {
		name string
		cert *x509.Certificate
		psp  string // "": not listed
	}{
		{"by its common name", cert("PSP A"), "psp-a"},
		{"by its common name, in another case", cert("psp a"), "psp-a"},
		{"by a DNS SAN", cert("someone", "other.example", "webhooks.psp-a.example"), "psp-a"},
		{"by a DNS SAN in another case", cert("", "PSP-B.Example"), "psp-b"},
		{"by both, the same PSP", cert("PSP A", "webhooks.psp-a.example"), "psp-a"},
		{"unlisted", cert("psp-c.example", "psp-c.example"), ""},
		{"no identity", cert(""), ""},
		{"a wildcard is no pattern", cert("", "*.psp-a.example"), ""},
		{"a part of an identity", cert("webhooks.psp-a.example.evil"), ""},
		{"two PSPs", cert("PSP A", "psp-b.example"), ""},
		{"the Kelvin sign is no k", cert("PSP A", "psp-b.e\u212Aample"), "psp-a"},
		{"the Kelvin sign alone", cert("", "psp-b.e\u212Aample"), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			psp, err := c.PSPOf(tc.cert)
			switch {
			case tc.psp == "" && !errors.Is(err, ErrCertNotListed):
				t.Fatalf("PSPOf = %q, %v; want ErrCertNotListed", psp, err)
			case tc.psp != "" && (err != nil || psp != tc.psp):
				t.Fatalf("PSPOf = %q, %v; want %q", psp, err, tc.psp)
			}
		})
	}
	if _, err := (CertPSPs{}).PSPOf(cert("PSP A")); !errors.Is(err, ErrCertNotListed) {
		t.Fatalf("the zero value: %v", err)
	}
}

func TestVerifierSigns(t *testing.T) {
	v := NewVerifier([]Secret{{PSP: "psp-a", Key: []byte("k")}, {PSP: "psp-empty", Key: nil}}, 0, nil)
	if !v.Signs("psp-a") || v.Signs("psp-b") || v.Signs("psp-empty") || (*Verifier)(nil).Signs("psp-a") {
		t.Fatal("Signs: psp-a only")
	}
}
