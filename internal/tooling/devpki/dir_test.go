package devpki_test

import (
	"crypto/tls"
	"crypto/x509"
	"os"
	"path/filepath"
	"testing"

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
		cert, key string
		usage     x509.ExtKeyUsage
	}{
		{devpki.PSPServerCertFile, devpki.PSPServerKeyFile, x509.ExtKeyUsageServerAuth},
		{devpki.BankClientCertFile, devpki.BankClientKeyFile, x509.ExtKeyUsageClientAuth},
		{devpki.WebhookServerCertFile, devpki.WebhookServerKeyFile, x509.ExtKeyUsageServerAuth},
		{devpki.PSPClientCertFile, devpki.PSPClientKeyFile, x509.ExtKeyUsageClientAuth},
	} {
		pair, err := tls.X509KeyPair(read(c.cert), read(c.key))
		require.NoError(t, err, c.cert)
		_, err = pair.Leaf.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{c.usage}})
		require.NoError(t, err, c.cert)
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
