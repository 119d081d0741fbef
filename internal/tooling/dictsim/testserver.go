package dictsim

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/pixbank/pix/internal/dict"
)

// The ISPBs of a TestServer's two participants.
const (
	// TestBank is the bank: the credited participant of the reports.
	TestBank = "12345678"
	// TestPayer is the payer's participant, which reports.
	TestPayer = "99999010"
)

// TestServer is a simulator served over mutual TLS, as the DICT is: a TLS
// server that requires a client certificate of its CA, with certificates
// made for it (in a directory of files) for the server, the DICT's
// signature, the bank and the payer (each participant's TLS certificate
// signs its requests too), and a foreign certificate nobody trusts.
// NewTestServer serves one for a test; NewServer for a program (the fault
// suite), which closes it.
type TestServer struct {
	*Simulator
	Server *httptest.Server
	// Config is the bank's client of the DICT (dict.New); PayerConfig the
	// payer's.
	Config, PayerConfig dict.Config
	// ForeignCertFile and ForeignKeyFile are a certificate of a CA nobody
	// trusts, and its key (PEM): a stranger's TLS certificate, a signing
	// key the simulator knows for no participant (Options.Foreign signs
	// with it too).
	ForeignCertFile, ForeignKeyFile string
}

// NewTestServer serves a new simulator for t, closed when t ends, its
// certificates in t.TempDir(). opts are NewServer's; OnViolation, when
// nil, fails t: every request the client sends and every answer the
// simulator gives is checked against dict-api.yaml.
func NewTestServer(t testing.TB, opts Options) *TestServer {
	t.Helper()
	if opts.OnViolation == nil {
		opts.OnViolation = func(err error) { t.Errorf("%v", err) }
	}
	srv, err := NewServer(t.TempDir(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Server.Close)
	return srv
}

// NewServer serves a new simulator (NewServed) on a loopback port until
// its Server is closed, with its certificates and keys written into dir. opts are the
// simulator's; its Signer, Foreign and the two participants' certificates
// are made here (Participants given are kept as well).
func NewServer(dir string, opts Options) (*TestServer, error) {
	ca, err := newTestCA("rsfn-ca")
	if err != nil {
		return nil, err
	}
	foreignCA, err := newTestCA("foreign-ca")
	if err != nil {
		return nil, err
	}
	pairs := map[string]testKeyPair{}
	for _, name := range []string{"dict-tls", "dict-signer", "bank", "payer"} {
		if pairs[name], err = ca.issue(dir, name); err != nil {
			return nil, err
		}
	}
	foreign, err := foreignCA.issue(dir, "foreign")
	if err != nil {
		return nil, err
	}
	caFile, err := writePEM(dir, "rsfn-ca.crt", "CERTIFICATE", ca.cert.Raw)
	if err != nil {
		return nil, err
	}
	serverTLS, signer, bank, payer := pairs["dict-tls"], pairs["dict-signer"], pairs["bank"], pairs["payer"]

	opts.Foreign = &Signer{Key: foreign.key, Certificate: foreign.cert}
	pool := x509.NewCertPool()
	pool.AddCert(ca.cert)
	sim, tlsConfig, err := NewServed(opts, Credentials{
		Server:       tls.Certificate{Certificate: [][]byte{serverTLS.cert.Raw}, PrivateKey: serverTLS.key, Leaf: serverTLS.cert},
		ClientCAs:    pool,
		Signer:       Signer{Key: signer.key, Certificate: signer.cert},
		Participants: []Participant{ParticipantOf(TestBank, bank.cert), ParticipantOf(TestPayer, payer.cert)},
	})
	if err != nil {
		return nil, err
	}
	srv := httptest.NewUnstartedServer(sim.Handler())
	srv.TLS = tlsConfig
	// A refused handshake (a stranger's certificate) is a test's point,
	// not news.
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	config := func(ispb string, kp testKeyPair) dict.Config {
		return dict.Config{
			BaseURL: srv.URL + sim.basePath, Participant: ispb, Timeout: 5 * time.Second,
			CertFile: kp.certFile, KeyFile: kp.keyFile, CAFile: caFile, DICTCertFile: signer.certFile,
		}
	}
	return &TestServer{
		Simulator: sim, Server: srv,
		Config: config(TestBank, bank), PayerConfig: config(TestPayer, payer),
		ForeignCertFile: foreign.certFile, ForeignKeyFile: foreign.keyFile,
	}, nil
}

// testKeyPair is a certificate and its key, in PEM files too.
type testKeyPair struct {
	cert              *x509.Certificate
	key               crypto.Signer
	certFile, keyFile string
}

// testKeys are the tests' RSA keys by name: a 2048-bit key takes long
// enough to make that every test reuses them (its certificates are its
// own).
var testKeys sync.Map

// testKey is the key named name: RSA, as the Pix's certificates are.
func testKey(name string) (crypto.Signer, error) {
	if k, ok := testKeys.Load(name); ok {
		return k.(crypto.Signer), nil
	}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, fmt.Errorf("the key of %s: %w", name, err)
	}
	k, _ := testKeys.LoadOrStore(name, key)
	return k.(crypto.Signer), nil
}

// testCA is a test's certificate authority (ECDSA: fast to make).
type testCA struct {
	cert *x509.Certificate
	key  crypto.Signer
}

func newTestCA(name string) (testCA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return testCA{}, fmt.Errorf("the key of %s: %w", name, err)
	}
	tmpl := certificateTemplate(name)
	tmpl.IsCA, tmpl.BasicConstraintsValid = true, true
	tmpl.KeyUsage |= x509.KeyUsageCertSign
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return testCA{}, fmt.Errorf("the certificate of %s: %w", name, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return testCA{}, fmt.Errorf("the certificate of %s: %w", name, err)
	}
	return testCA{cert, key}, nil
}

// certificateTemplate is a certificate for name, valid for a day from an
// hour ago (real time: the simulated clock never checks certificates),
// for 127.0.0.1, as a server's and a client's.
func certificateTemplate(name string) *x509.Certificate {
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62)) // never fails (crypto/rand)
	return &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: name},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
	}
}

// issue makes name's certificate, signed by ca, on name's RSA key, and
// writes both into dir.
func (ca testCA) issue(dir, name string) (testKeyPair, error) {
	key, err := testKey(name)
	if err != nil {
		return testKeyPair{}, err
	}
	der, err := x509.CreateCertificate(rand.Reader, certificateTemplate(name), ca.cert, key.Public(), ca.key)
	if err != nil {
		return testKeyPair{}, fmt.Errorf("the certificate of %s: %w", name, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return testKeyPair{}, fmt.Errorf("the certificate of %s: %w", name, err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return testKeyPair{}, fmt.Errorf("the key of %s: %w", name, err)
	}
	kp := testKeyPair{cert: cert, key: key}
	if kp.certFile, err = writePEM(dir, name+".crt", "CERTIFICATE", der); err != nil {
		return testKeyPair{}, err
	}
	if kp.keyFile, err = writePEM(dir, name+".key", "PRIVATE KEY", keyDER); err != nil {
		return testKeyPair{}, err
	}
	return kp, nil
}

// writePEM writes one PEM block into dir/name, readable by its owner
// only, and returns its path.
func writePEM(dir, name, typ string, der []byte) (string, error) {
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		return "", fmt.Errorf("write %s: %w", name, err)
	}
	return path, nil
}
