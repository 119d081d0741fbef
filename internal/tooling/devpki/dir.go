package devpki

import (
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// The files of a development PKI directory (EnsureDir). One authority
// issues every certificate: each side trusts it for the other.
const (
	CAFile, CAKeyFile = "ca.pem", "ca-key.pem"
	// The PSP simulator's HTTPS server (its API and token endpoint).
	PSPServerCertFile, PSPServerKeyFile = "psp-server.pem", "psp-server-key.pem"
	// The bank's client certificate at the PSP (PSP_TLS_CERT_FILE).
	BankClientCertFile, BankClientKeyFile = "bank-client.pem", "bank-client-key.pem"
	// The bank's webhook listener (TLS_CERT_FILE).
	WebhookServerCertFile, WebhookServerKeyFile = "webhook-server.pem", "webhook-server-key.pem"
	// The PSP simulator's client certificate, presented with its webhooks;
	// its name is PSPClientName (WEBHOOK_MTLS_PSPS).
	PSPClientCertFile, PSPClientKeyFile = "psp-client.pem", "psp-client-key.pem"
	// The demo's client certificate (pixctl demo), presented with the
	// webhooks it posts as the PSP DemoClientName, which signs them too.
	DemoClientCertFile, DemoClientKeyFile = "demo-client.pem", "demo-client-key.pem"
	// The bank's OAuth 2.0 client secret at the PSP (PSP_CLIENT_SECRET_FILE).
	ClientSecretFile = "psp-client-secret"
	// The DICT simulator's HTTPS server (cmd/dictsim), and the certificate
	// its answers are signed by (MED_DICT_VERIFY_CERT_FILE). The bank's
	// certificate at the DICT is its client certificate at the PSP
	// (BankClientCertFile), which signs its requests too.
	DICTServerCertFile, DICTServerKeyFile = "dict-server.pem", "dict-server-key.pem"
	DICTSignerCertFile, DICTSignerKeyFile = "dict-signer.pem", "dict-signer-key.pem"
	// The payer's participant at the DICT simulator: the one that opens
	// the infraction reports and refund requests of make demo (through the
	// simulator's control routes, which need no certificate; the simulator
	// knows each participant by its certificate).
	DICTPayerCertFile, DICTPayerKeyFile = "dict-payer.pem", "dict-payer-key.pem"
)

// Names in the development certificates. The two client certificates
// that post webhooks are two PSPs to the webhook listener
// (WEBHOOK_MTLS_PSPS): the simulator, whose webhooks come unsigned as the
// API Pix sends them, and the demo's PSP, which also signs with its secret
// in WEBHOOK_SECRETS (dev-psp, its first key): a PSP in both lists must
// pass both.
const (
	PSPClientName  = "pspsim"
	DemoClientName = "dev-psp"
	BankClientName = "pix-bank"
)

// dirValidity is how long a development directory's certificates are
// valid: a year, then EnsureDir makes them anew.
const dirValidity = 365 * 24 * time.Hour

// EnsureDir makes, in dir, whatever of the development PKI is missing or
// expires within a day: the authority, the eight certificates (the PSP simulator's and the DICT simulator's) and the
// client secret, each file readable by its owner only. What is there and
// valid (issued by the authority to the name it must carry, its key
// beside it) is kept, so that a running simulator and service keep
// trusting each other across runs; a certificate of another name (one an
// older version made) is issued again.
func EnsureDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	ca, fresh, err := ensureAuthority(dir)
	if err != nil {
		return err
	}
	for _, c := range []struct {
		cert, key, name string
		usage           x509.ExtKeyUsage
	}{
		{PSPServerCertFile, PSPServerKeyFile, "pspsim", x509.ExtKeyUsageServerAuth},
		{BankClientCertFile, BankClientKeyFile, BankClientName, x509.ExtKeyUsageClientAuth},
		{WebhookServerCertFile, WebhookServerKeyFile, "pix-webhooks", x509.ExtKeyUsageServerAuth},
		{PSPClientCertFile, PSPClientKeyFile, PSPClientName, x509.ExtKeyUsageClientAuth},
		{DemoClientCertFile, DemoClientKeyFile, DemoClientName, x509.ExtKeyUsageClientAuth},
		{DICTServerCertFile, DICTServerKeyFile, "dictsim", x509.ExtKeyUsageServerAuth},
		// A signing certificate is used in no TLS handshake; its key signs XML.
		{DICTSignerCertFile, DICTSignerKeyFile, "dict-signer", x509.ExtKeyUsageAny},
		{DICTPayerCertFile, DICTPayerKeyFile, "dict-payer", x509.ExtKeyUsageClientAuth},
	} {
		if !fresh && issued(ca, filepath.Join(dir, c.cert), filepath.Join(dir, c.key), c.name) {
			continue
		}
		certPEM, keyPEM, err := ca.Issue(c.name, c.usage, dirValidity)
		if err != nil {
			return err
		}
		if err := writeFiles(dir, map[string][]byte{c.cert: certPEM, c.key: keyPEM}); err != nil {
			return err
		}
	}
	if _, err := os.Stat(filepath.Join(dir, ClientSecretFile)); errors.Is(err, fs.ErrNotExist) {
		b := make([]byte, 32)
		if _, err := rand.Read(b); err != nil {
			return err
		}
		return writeFiles(dir, map[string][]byte{ClientSecretFile: []byte(base64.RawURLEncoding.EncodeToString(b) + "\n")})
	} else if err != nil {
		return err
	}
	return nil
}

// ensureAuthority loads dir's authority, or makes a new one (fresh: every
// certificate must be issued again).
func ensureAuthority(dir string) (a Authority, fresh bool, err error) {
	certPEM, certErr := os.ReadFile(filepath.Join(dir, CAFile))
	keyPEM, keyErr := os.ReadFile(filepath.Join(dir, CAKeyFile))
	if certErr == nil && keyErr == nil {
		if certs, err := parsePEMCertificates(certPEM); err == nil && len(certs) == 1 && lastsADay(certs[0]) {
			a, err := LoadAuthority(certPEM, keyPEM)
			return a, false, err
		}
	}
	if a, err = NewAuthority("pix development CA", dirValidity); err != nil {
		return Authority{}, false, err
	}
	keyPEM, err = a.KeyPEM()
	if err != nil {
		return Authority{}, false, err
	}
	return a, true, writeFiles(dir, map[string][]byte{CAFile: a.PEM, CAKeyFile: keyPEM})
}

// issued reports whether certPath holds a certificate for name that ca
// signed, valid for at least another day, whose key is in keyPath.
func issued(ca Authority, certPath, keyPath, name string) bool {
	pair, err := tls.LoadX509KeyPair(certPath, keyPath)
	if err != nil || len(pair.Certificate) != 1 || !lastsADay(pair.Leaf) {
		return false
	}
	return pair.Leaf.Subject.CommonName == name && pair.Leaf.CheckSignatureFrom(ca.cert) == nil
}

// lastsADay reports whether c is valid for at least another day.
func lastsADay(c *x509.Certificate) bool {
	return time.Now().Add(24 * time.Hour).Before(c.NotAfter)
}

func writeFiles(dir string, files map[string][]byte) error {
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return fmt.Errorf("development pki: %w", err)
		}
	}
	return nil
}
