package connlimit_test

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/internal/connlimit"
	"github.com/pixbank/pix/internal/tooling/devpki"
)

const answer = "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nContent-Type: application/json\r\nContent-Length: 57\r\nConnection: close\r\n\r\n" +
	`{"error":{"code":"service_unavailable","message":"busy"}}`

// serve serves "ok" on a listener of l's, with TLS when tlsCfg is set,
// until the test ends.
func serve(t *testing.T, l *connlimit.Limiter, tlsCfg *tls.Config) string {
	t.Helper()
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") }),
		ReadHeaderTimeout: time.Second, TLSConfig: tlsCfg}
	ln := l.Listen(raw, tlsCfg)
	t.Cleanup(func() { _ = srv.Close() })
	if tlsCfg != nil {
		go func() { _ = srv.ServeTLS(ln, "", "") }()
		return "https://" + raw.Addr().String()
	}
	go func() { _ = srv.Serve(ln) }()
	return "http://" + raw.Addr().String()
}

func TestOverTheCapAConnectionIsAnswered503WithRetryAfterAndClosed(t *testing.T) {
	var shed atomic.Int64
	l := connlimit.New(1, []byte(answer), func() { shed.Add(1) })
	url := serve(t, l, nil)

	// One client holds the only place: a keep-alive connection, idle.
	holder := &http.Client{Transport: &http.Transport{}}
	res, err := holder.Get(url)
	require.NoError(t, err)
	_, _ = io.ReadAll(res.Body)
	res.Body.Close()
	require.EqualValues(t, 1, l.Open())

	// Another is refused at once, with the prepared answer.
	other := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 5 * time.Second}
	res, err = other.Post(url, "application/json", strings.NewReader(`{"x":1}`))
	require.NoError(t, err, "the refusal is an HTTP answer, not a reset")
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	require.Equal(t, http.StatusServiceUnavailable, res.StatusCode)
	require.Equal(t, "1", res.Header.Get("Retry-After"))
	require.Contains(t, string(body), `"code":"service_unavailable"`)
	require.EqualValues(t, 1, shed.Load())

	// Closing the held connection frees its place.
	holder.CloseIdleConnections()
	require.Eventually(t, func() bool { return l.Open() == 0 }, 5*time.Second, 10*time.Millisecond)
	res, err = other.Get(url)
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode)
}

// Over TLS (HTTP/2 on offer), the refusal is the same answer, after a
// handshake of its own that offers HTTP/1.1 only.
func TestOverTheCapATLSConnectionIsAnswered503(t *testing.T) {
	ca, err := devpki.NewAuthority("test-ca", time.Hour)
	require.NoError(t, err)
	certPEM, keyPEM, err := ca.Issue("127.0.0.1", x509.ExtKeyUsageServerAuth, time.Hour)
	require.NoError(t, err)
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	require.NoError(t, err)
	l := connlimit.New(1, []byte(answer), nil)
	url := serve(t, l, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca.PEM)
	client := func() *http.Client {
		return &http.Client{Timeout: 5 * time.Second,
			Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}, ForceAttemptHTTP2: true}}
	}

	holder := client()
	res, err := holder.Get(url)
	require.NoError(t, err)
	_, _ = io.ReadAll(res.Body)
	res.Body.Close()
	require.Equal(t, "HTTP/2.0", res.Proto, "the server itself speaks HTTP/2")

	res, err = client().Get(url)
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusServiceUnavailable, res.StatusCode)
	require.Equal(t, "HTTP/1.1", res.Proto)
	require.Equal(t, "1", res.Header.Get("Retry-After"))
	holder.CloseIdleConnections()
}

func TestNoCapLeavesTheListenerAsItIs(t *testing.T) {
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer raw.Close()
	require.Same(t, raw, connlimit.New(0, nil, nil).Listen(raw, nil))
}
