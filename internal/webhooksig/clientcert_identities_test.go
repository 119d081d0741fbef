package webhooksig

// Found by the attack review of issue 27 item 2: identities a client certificate
// carries that must not name a listed PSP, and the TLS server's own checks
// the design relies on (chain to the CA, ExtKeyUsageClientAuth).

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"math/big"
	"net"
	"net/url"
	"testing"
	"time"
)

func TestIdentitiesThatMustNotCount(t *testing.T) {
	c, err := ParseCertPSPs("psp-a=a.psp.example,PSP A Webhooks")
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse("spiffe://a.psp.example")
	for name, cert := range map[string]*x509.Certificate{
		"email SAN":          {EmailAddresses: []string{"a.psp.example"}},
		"URI SAN":            {URIs: []*url.URL{u}},
		"OU":                 {Subject: pkix.Name{OrganizationalUnit: []string{"a.psp.example"}}},
		"O":                  {Subject: pkix.Name{Organization: []string{"PSP A Webhooks"}}},
		"IP SAN":             {IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}},
		"wildcard SAN":       {DNSNames: []string{"*.psp.example"}},
		"trailing dot":       {DNSNames: []string{"a.psp.example."}},
		"NUL in CN":          {Subject: pkix.Name{CommonName: "a.psp.example\x00.evil.example"}},
		"Kelvin sign in CN":  {Subject: pkix.Name{CommonName: "PSP A Webhoo\u212As"}},
		"Cyrillic a in CN":   {Subject: pkix.Name{CommonName: "\u0430.psp.example"}},
		"CN with a space":    {Subject: pkix.Name{CommonName: " a.psp.example"}},
		"suffix":             {DNSNames: []string{"xa.psp.example", "a.psp.example.evil"}},
		"serialNumber attr":  {Subject: pkix.Name{SerialNumber: "a.psp.example"}},
		"extra names CN-ish": {Subject: pkix.Name{ExtraNames: []pkix.AttributeTypeAndValue{{Type: []int{2, 5, 4, 41}, Value: "a.psp.example"}}}},
	} {
		if psp, err := c.PSPOf(cert); !errors.Is(err, ErrCertNotListed) {
			t.Errorf("%s: named %q (%v)", name, psp, err)
		}
	}
	// As designed (documented): ASCII case is not significant.
	if psp, _ := c.PSPOf(&x509.Certificate{Subject: pkix.Name{CommonName: "A.PSP.EXAMPLE"}}); psp != "psp-a" {
		t.Errorf("case: %q", psp)
	}
}

func review27Cert(t *testing.T, tmpl *x509.Certificate, parent *x509.Certificate, parentKey *ecdsa.PrivateKey) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl.SerialNumber = big.NewInt(time.Now().UnixNano())
	tmpl.NotBefore, tmpl.NotAfter = time.Now().Add(-time.Hour), time.Now().Add(time.Hour)
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert, key
}

// The TLS server (serverTLS's settings) refuses a certificate of the CA
// that is not for client authentication, and one whose intermediate CA is
// restricted to server authentication.
func TestServerRefusesCertificatesNotForClientAuth(t *testing.T) {
	ca, caKey := review27Cert(t, &x509.Certificate{Subject: pkix.Name{CommonName: "CA"}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}, nil, nil)
	inter, interKey := review27Cert(t, &x509.Certificate{Subject: pkix.Name{CommonName: "server-only intermediate"}, IsCA: true,
		BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}, ca, caKey)
	server, serverKey := review27Cert(t, &x509.Certificate{DNSNames: []string{"localhost"}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}, ca, caKey)
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	for name, clientCert := range map[string]func() tls.Certificate{
		"server auth only": func() tls.Certificate {
			c, k := review27Cert(t, &x509.Certificate{Subject: pkix.Name{CommonName: "a.psp.example"}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}, ca, caKey)
			return tls.Certificate{Certificate: [][]byte{c.Raw}, PrivateKey: k}
		},
		"under a server-only intermediate": func() tls.Certificate {
			c, k := review27Cert(t, &x509.Certificate{Subject: pkix.Name{CommonName: "a.psp.example"}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}, inter, interKey)
			return tls.Certificate{Certificate: [][]byte{c.Raw, inter.Raw}, PrivateKey: k}
		},
	} {
		for _, auth := range []tls.ClientAuthType{tls.VerifyClientCertIfGiven, tls.RequireAndVerifyClientCert} {
			ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{MinVersion: tls.VersionTLS12, ClientCAs: pool, ClientAuth: auth,
				Certificates: []tls.Certificate{{Certificate: [][]byte{server.Raw}, PrivateKey: serverKey}}})
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() {
				conn, err := ln.Accept()
				if err == nil {
					err = conn.(*tls.Conn).Handshake()
					conn.Close()
				}
				done <- err
			}()
			roots := x509.NewCertPool()
			roots.AddCert(ca)
			if conn, err := tls.Dial("tcp", ln.Addr().String(), &tls.Config{RootCAs: roots, ServerName: "localhost",
				Certificates: []tls.Certificate{clientCert()}}); err == nil {
				_ = conn.Handshake()
				conn.Close()
			}
			if err := <-done; err == nil {
				t.Errorf("%s, %v: the server took the certificate", name, auth)
			}
			ln.Close()
		}
	}
}
