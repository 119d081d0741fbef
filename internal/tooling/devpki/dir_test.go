package devpki_test

import (
	"crypto/tls"
	"crypto/x509"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/internal/tooling/devpki"
)

// EnsureDir makes a PKI whose certificates chain to its authority and
// keeps what is there on the next call (a running simulator and service go
// on trusting each other), making again only what is missing.
func TestEnsureDirMakesThenKeeps(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, devpki.EnsureDir(dir))
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join(dir, name))
		require.NoError(t, err)
		return b
	}
	roots := x509.NewCertPool()
	require.True(t, roots.AppendCertsFromPEM(read(devpki.CAFile)))
	for _, c := range []struct {
		cert, key, name string
		usage           x509.ExtKeyUsage
	}{
		{devpki.PSPServerCertFile, devpki.PSPServerKeyFile, "pspsim", x509.ExtKeyUsageServerAuth},
		{devpki.BankClientCertFile, devpki.BankClientKeyFile, devpki.BankClientName, x509.ExtKeyUsageClientAuth},
		{devpki.WebhookServerCertFile, devpki.WebhookServerKeyFile, "pix-webhooks", x509.ExtKeyUsageServerAuth},
		{devpki.PSPClientCertFile, devpki.PSPClientKeyFile, devpki.PSPClientName, x509.ExtKeyUsageClientAuth},
		{devpki.DemoClientCertFile, devpki.DemoClientKeyFile, devpki.DemoClientName, x509.ExtKeyUsageClientAuth},
		{devpki.DICTServerCertFile, devpki.DICTServerKeyFile, "dictsim", x509.ExtKeyUsageServerAuth},
		{devpki.DICTSignerCertFile, devpki.DICTSignerKeyFile, "dict-signer", x509.ExtKeyUsageAny},
		{devpki.DICTPayerCertFile, devpki.DICTPayerKeyFile, "dict-payer", x509.ExtKeyUsageClientAuth},
	} {
		pair, err := tls.X509KeyPair(read(c.cert), read(c.key))
		require.NoError(t, err, c.cert)
		_, err = pair.Leaf.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{c.usage}})
		require.NoError(t, err, c.cert)
		require.Equal(t, c.name, pair.Leaf.Subject.CommonName, c.cert)
		info, err := os.Stat(filepath.Join(dir, c.key))
		require.NoError(t, err)
		require.Equal(t, os.FileMode(0o600), info.Mode().Perm(), "a key is its owner's alone")
	}
	secret := read(devpki.ClientSecretFile)
	require.GreaterOrEqual(t, len(secret), 40)

	ca := read(devpki.CAFile)
	require.NoError(t, os.Remove(filepath.Join(dir, devpki.BankClientCertFile)))
	require.NoError(t, devpki.EnsureDir(dir))
	require.Equal(t, ca, read(devpki.CAFile), "the authority is kept")
	require.Equal(t, secret, read(devpki.ClientSecretFile), "the client secret is kept")
	pair, err := tls.X509KeyPair(read(devpki.BankClientCertFile), read(devpki.BankClientKeyFile))
	require.NoError(t, err, "the missing certificate is issued again, with a key of its own")
	_, err = pair.Leaf.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	require.NoError(t, err)
}

// A certificate EnsureDir finds under another name than the one it must
// carry (the simulator's client certificate was dev-psp once, the name the
// demo's now has: both listed in WEBHOOK_MTLS_PSPS, an old one kept would
// be taken for the demo's PSP), or that its authority did not sign, is
// issued again; the others are kept.
func TestEnsureDirIssuesAgainWhatIsNotItsAuthoritysUnderItsName(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, devpki.EnsureDir(dir))
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join(dir, name))
		require.NoError(t, err)
		return b
	}
	write := func(name string, b []byte) { require.NoError(t, os.WriteFile(filepath.Join(dir, name), b, 0o600)) }
	caPEM, caKey := read(devpki.CAFile), read(devpki.CAKeyFile)
	ca, err := devpki.LoadAuthority(caPEM, caKey)
	require.NoError(t, err)
	misnamed, misnamedKey, err := ca.Issue("dev-psp", x509.ExtKeyUsageClientAuth, 24*365*time.Hour)
	require.NoError(t, err)
	write(devpki.PSPClientCertFile, misnamed)
	write(devpki.PSPClientKeyFile, misnamedKey)
	other, err := devpki.NewAuthority("another CA", 24*365*time.Hour)
	require.NoError(t, err)
	foreign, foreignKey, err := other.Issue(devpki.BankClientName, x509.ExtKeyUsageClientAuth, 24*365*time.Hour)
	require.NoError(t, err)
	write(devpki.BankClientCertFile, foreign)
	write(devpki.BankClientKeyFile, foreignKey)
	kept := read(devpki.DemoClientCertFile)

	require.NoError(t, devpki.EnsureDir(dir))
	require.Equal(t, caPEM, read(devpki.CAFile), "the authority is kept")
	require.Equal(t, kept, read(devpki.DemoClientCertFile), "a valid certificate is kept")
	roots := x509.NewCertPool()
	require.True(t, roots.AppendCertsFromPEM(caPEM))
	for cert, c := range map[string]struct{ key, name string }{
		devpki.PSPClientCertFile:  {devpki.PSPClientKeyFile, devpki.PSPClientName},
		devpki.BankClientCertFile: {devpki.BankClientKeyFile, devpki.BankClientName},
	} {
		pair, err := tls.X509KeyPair(read(cert), read(c.key))
		require.NoError(t, err, cert)
		require.Equal(t, c.name, pair.Leaf.Subject.CommonName, cert)
		_, err = pair.Leaf.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
		require.NoError(t, err, cert)
	}
}
