package testpki

import (
	"crypto/x509"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/internal/tooling/devpki"
)

// validity is how long a test's certificates are valid.
const validity = time.Hour

// Authority is a certificate authority made for one test.
type Authority struct {
	devpki.Authority
}

// NewAuthority makes a certificate authority named name.
func NewAuthority(t testing.TB, name string) Authority {
	t.Helper()
	a, err := devpki.NewAuthority(name, validity)
	require.NoError(t, err)
	return Authority{a}
}

// Issue returns a certificate for name (its common name; valid for
// 127.0.0.1 too) and its key, PEM, signed by the authority.
func (a Authority) Issue(t testing.TB, name string, usage x509.ExtKeyUsage) (certPEM, keyPEM []byte) {
	t.Helper()
	certPEM, keyPEM, err := a.Authority.Issue(name, usage, validity)
	require.NoError(t, err)
	return certPEM, keyPEM
}

// WriteFile writes data to dir/name, readable by its owner only, and
// returns the path.
func WriteFile(t testing.TB, dir, name string, data []byte) string {
	t.Helper()
	path := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(path, data, 0o600))
	return path
}
