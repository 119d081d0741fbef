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

// TestServer is a simulator served for a test over mutual TLS, as the
// DICT is: an httptest TLS server that requires a client certificate of
// its CA, with certificates made for the test (in t.TempDir()) for the
// server, the DICT's signature, the bank and the payer (each participant's
// TLS certificate signs its requests too), and a foreign certificate
// nobody trusts.
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

// NewTestServer serves a new simulator for t, closed when t ends. opts
// are the simulator's; its Signer, Foreign and the two participants'
// certificates are the test's (Participants given are kept as well), and
// OnViolation, when nil, fails t: every request the client sends and
// every answer the simulator gives is checked against dict-api.yaml.
func NewTestServer(t testing.TB, opts Options) *TestServer {
	t.Helper()
	dir := t.TempDir()
	ca := newTestCA(t, "rsfn-ca")
	foreignCA := newTestCA(t, "foreign-ca")
	serverTLS := ca.issue(t, dir, "dict-tls")
	signer := ca.issue(t, dir, "dict-signer")
	bank := ca.issue(t, dir, "bank")
	payer := ca.issue(t, dir, "payer")
	foreign := foreignCA.issue(t, dir, "foreign")
	caFile := writePEM(t, dir, "rsfn-ca.crt", "CERTIFICATE", ca.cert.Raw)

	opts.Signer = Signer{Key: signer.key, Certificate: signer.cert}
	opts.Foreign = &Signer{Key: foreign.key, Certificate: foreign.cert}
	opts.Participants = append(opts.Participants,
		Participant{ISPB: TestBank, TLSCertificates: []*x509.Certificate{bank.cert}, SigningCertificates: []*x509.Certificate{bank.cert}},
		Participant{ISPB: TestPayer, TLSCertificates: []*x509.Certificate{payer.cert}, SigningCertificates: []*x509.Certificate{payer.cert}})
	if opts.OnViolation == nil {
		opts.OnViolation = func(err error) { t.Errorf("%v", err) }
	}
	sim, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(sim.Handler())
	pool := x509.NewCertPool()
	pool.AddCert(ca.cert)
	srv.TLS = &tls.Config{
		Certificates: []tls.Certificate{{Certificate: [][]byte{serverTLS.cert.Raw}, PrivateKey: serverTLS.key, Leaf: serverTLS.cert}},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    pool,
		MinVersion:   tls.VersionTLS12,
	}
	// A refused handshake (a stranger's certificate) is a test's point,
	// not news.
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	t.Cleanup(srv.Close)
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
	}
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
func testKey(t testing.TB, name string) crypto.Signer {
	t.Helper()
	if k, ok := testKeys.Load(name); ok {
		return k.(crypto.Signer)
	}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	k, _ := testKeys.LoadOrStore(name, key)
	return k.(crypto.Signer)
}

// testCA is a test's certificate authority (ECDSA: fast to make).
type testCA struct {
	cert *x509.Certificate
	key  crypto.Signer
}

func newTestCA(t testing.TB, name string) testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := certificateTemplate(name)
	tmpl.IsCA, tmpl.BasicConstraintsValid = true, true
	tmpl.KeyUsage |= x509.KeyUsageCertSign
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return testCA{cert, key}
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
func (ca testCA) issue(t testing.TB, dir, name string) testKeyPair {
	t.Helper()
	key := testKey(t, name)
	der, err := x509.CreateCertificate(rand.Reader, certificateTemplate(name), ca.cert, key.Public(), ca.key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return testKeyPair{
		cert: cert, key: key,
		certFile: writePEM(t, dir, name+".crt", "CERTIFICATE", der),
		keyFile:  writePEM(t, dir, name+".key", "PRIVATE KEY", keyDER),
	}
}

// writePEM writes one PEM block into dir/name, readable by its owner
// only, and returns its path.
func writePEM(t testing.TB, dir, name, typ string, der []byte) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
