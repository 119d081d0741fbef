package app_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/pixbank/pix/cmd/pixd/app"
	"github.com/pixbank/pix/internal/config"
	"github.com/pixbank/pix/internal/logging"
	"github.com/pixbank/pix/internal/tooling/testpki"
)

// seenCall is what a fake Temporal frontend saw of a client's call.
type seenCall struct {
	method        string
	authorization []string
	clientCert    string // the common name of the certificate the client presented
}

// fakeFrontend is a gRPC server with mutual TLS on a loopback port that
// answers every call Unavailable and reports what it saw of each.
func fakeFrontend(t *testing.T, serverCert, serverKey, clientCA []byte) (string, <-chan seenCall) {
	t.Helper()
	pair, err := tls.X509KeyPair(serverCert, serverKey)
	require.NoError(t, err)
	cas := x509.NewCertPool()
	require.True(t, cas.AppendCertsFromPEM(clientCA))
	creds := credentials.NewTLS(&tls.Config{
		Certificates: []tls.Certificate{pair},
		ClientCAs:    cas,
		ClientAuth:   tls.RequireAndVerifyClientCert,
		MinVersion:   tls.VersionTLS12,
	})
	seen := make(chan seenCall, 16)
	srv := grpc.NewServer(grpc.Creds(creds), grpc.UnknownServiceHandler(func(_ any, stream grpc.ServerStream) error {
		call := seenCall{}
		call.method, _ = grpc.MethodFromServerStream(stream)
		md, _ := metadata.FromIncomingContext(stream.Context())
		call.authorization = md.Get("authorization")
		if p, ok := peer.FromContext(stream.Context()); ok {
			if info, ok := p.AuthInfo.(credentials.TLSInfo); ok && len(info.State.PeerCertificates) > 0 {
				call.clientCert = info.State.PeerCertificates[0].Subject.CommonName
			}
		}
		select {
		case seen <- call:
		default:
		}
		return status.Error(codes.Unavailable, "fake frontend")
	}))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = srv.Serve(ln) }() // stopped by the cleanup below
	t.Cleanup(srv.Stop)
	return ln.Addr().String(), seen
}

// The client app.New builds from the TEMPORAL_* variables reaches a
// cluster with mutual TLS: it checks the server against the cluster's CA
// under the name TEMPORAL_TLS_SERVER_NAME gives, presents its certificate,
// and sends the API key.
func TestTemporalClientSpeaksMutualTLSWithAnAPIKey(t *testing.T) {
	dir := t.TempDir()
	serverCA, clientCA := testpki.NewAuthority(t, "temporal server CA"), testpki.NewAuthority(t, "temporal client CA")
	serverCert, serverKey := serverCA.Issue(t, "frontend.temporal.test", x509.ExtKeyUsageServerAuth)
	clientCert, clientKey := clientCA.Issue(t, "pix-worker", x509.ExtKeyUsageClientAuth)
	addr, seen := fakeFrontend(t, serverCert, serverKey, clientCA.PEM)

	cfg, err := config.FromLookup(func(k string) (string, bool) {
		v, ok := map[string]string{
			"DATABASE_URL":                     "postgres://nobody@127.0.0.1:1/none", // never reached here
			"TEMPORAL_ADDRESS":                 addr,
			"TEMPORAL_NAMESPACE":               "pix-prod",
			"TEMPORAL_API_KEY":                 "test-api-key",
			"TEMPORAL_TLS_CLIENT_CERT_PATH":    testpki.WriteFile(t, dir, "client.pem", clientCert),
			"TEMPORAL_TLS_CLIENT_KEY_PATH":     testpki.WriteFile(t, dir, "client-key.pem", clientKey),
			"TEMPORAL_TLS_SERVER_CA_CERT_PATH": testpki.WriteFile(t, dir, "server-ca.pem", serverCA.PEM),
			"TEMPORAL_TLS_SERVER_NAME":         "frontend.temporal.test",
		}[k]
		return v, ok
	})
	require.NoError(t, err)
	a, err := app.New(context.Background(), cfg, logging.New(io.Discard, "error"))
	require.NoError(t, err)
	t.Cleanup(a.Close)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = a.Temporal.CheckHealth(ctx, &client.CheckHealthRequest{})
	require.Error(t, err, "the fake frontend answers Unavailable")
	var call seenCall
	select {
	case call = <-seen:
	case <-ctx.Done():
		t.Fatalf("no call reached the frontend over TLS: %v", err)
	}
	require.Equal(t, "pix-worker", call.clientCert, "the client certificate, verified by the server")
	require.Equal(t, []string{"Bearer test-api-key"}, call.authorization, "on %s", call.method)
}

// A server whose certificate the configured CA did not issue is refused:
// the client never talks to an impostor, whatever the name it shows.
func TestTemporalClientRefusesAServerOfAnotherCA(t *testing.T) {
	dir := t.TempDir()
	serverCA, impostorCA, clientCA := testpki.NewAuthority(t, "temporal server CA"), testpki.NewAuthority(t, "impostor CA"),
		testpki.NewAuthority(t, "temporal client CA")
	impostorCert, impostorKey := impostorCA.Issue(t, "frontend.temporal.test", x509.ExtKeyUsageServerAuth)
	clientCert, clientKey := clientCA.Issue(t, "pix-worker", x509.ExtKeyUsageClientAuth)
	addr, seen := fakeFrontend(t, impostorCert, impostorKey, clientCA.PEM)

	cfg := config.Default()
	cfg.DatabaseURL = "postgres://nobody@127.0.0.1:1/none"
	c, err := config.FromLookup(func(k string) (string, bool) {
		v, ok := map[string]string{
			"TEMPORAL_API_KEY":                 "test-api-key",
			"TEMPORAL_TLS_CLIENT_CERT_PATH":    testpki.WriteFile(t, dir, "client.pem", clientCert),
			"TEMPORAL_TLS_CLIENT_KEY_PATH":     testpki.WriteFile(t, dir, "client-key.pem", clientKey),
			"TEMPORAL_TLS_SERVER_CA_CERT_PATH": testpki.WriteFile(t, dir, "server-ca.pem", serverCA.PEM),
			"TEMPORAL_TLS_SERVER_NAME":         "frontend.temporal.test",
		}[k]
		return v, ok
	})
	require.NoError(t, err)
	cfg.TemporalConnection = c.TemporalConnection
	cfg.TemporalAddress = addr // as the tests set it
	a, err := app.New(context.Background(), cfg, logging.New(io.Discard, "error"))
	require.NoError(t, err)
	t.Cleanup(a.Close)

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	_, err = a.Temporal.CheckHealth(ctx, &client.CheckHealthRequest{})
	require.Error(t, err)
	select {
	case call := <-seen:
		t.Fatalf("a call reached a server of another CA: %+v", call)
	default:
	}
}
