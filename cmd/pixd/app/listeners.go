package app

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime/debug"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/pixbank/pix/api"
	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/internal/auth"
	"github.com/pixbank/pix/internal/codec"
	"github.com/pixbank/pix/internal/groupcommit"
	"github.com/pixbank/pix/internal/metrics"
	"github.com/pixbank/pix/internal/webhooksig"
)

// CodecHandler is the codec server through which the Temporal UI (from
// TEMPORAL_CODEC_CORS_ORIGINS) and CLI decode the encrypted payloads: POST
// .../encode and .../decode, meant to be mounted at /codec/ (the UI's
// "codec server endpoint" is then <api>/codec). Decoded payloads are
// personal data: authorize must admit operators only; it is not asked
// about CORS preflights, which browsers send without credentials, so pass
// the admin check here instead of wrapping the handler in it. Nil when
// payloads are not encrypted: there is nothing to decode.
func (a *App) CodecHandler(authorize func(*http.Request) bool) http.Handler {
	if a.payloadCodec == nil {
		return nil
	}
	return codec.NewServer(a.payloadCodec, codec.ServerOptions{AllowedOrigins: a.Cfg.CodecCORSOrigins, Authorize: authorize})
}

// apiDeps are the handlers' dependencies; draining and tokens may be nil.
func (a *App) apiDeps(draining func() bool, tokens api.TokenVerifier) api.Deps {
	var verifier *webhooksig.Verifier
	if len(a.Cfg.WebhookSecrets) > 0 {
		verifier = webhooksig.NewVerifier(a.Cfg.WebhookSecrets, a.Cfg.WebhookSignatureTolerance, nil)
	}
	return api.Deps{
		Stores:             api.StoresOf(a.Store),
		Sagas:              a.sagas,
		Temporal:           a.Temporal,
		TemporalNamespace:  a.Cfg.TemporalNamespace,
		TemporalUIURL:      a.Cfg.TemporalUIURL,
		RequestTimeout:     a.Cfg.RequestTimeout,
		Logger:             a.Log,
		Signatures:         verifier,
		RequireSignatures:  a.Cfg.WebhookSignaturesRequired,
		RequireClientCert:  a.Cfg.TLSClientCAFile != "",
		CertPSPs:           a.Cfg.WebhookMTLSPSPs,
		AdminToken:         a.Cfg.AdminToken,
		Tokens:             tokens,
		OpenCustomerRoutes: !a.Cfg.AuthRequired,
		TrustedProxies:     a.Cfg.TrustedProxies,
		Keys:               db.KeyPolicy{LockFor: a.Cfg.IdempotencyLockTimeout, KeepFor: a.Cfg.IdempotencyKeyTTL},
		Metrics:            metrics.Handler(a.Metrics),
		Webhooks:           a.webhooks,
		Draining:           draining,
		Tracing:            a.tracing,
	}
}

// tokenVerifier verifies bearer tokens against AUTH_ISSUER's keys; nil
// when no issuer is configured (CheckAPI allows that only with
// AUTH_REQUIRED=false). The keys are read now: an API that can't read its
// issuer's keys refuses to start.
func (a *App) tokenVerifier(ctx context.Context) (api.TokenVerifier, error) {
	var source auth.KeySource
	switch {
	case a.Cfg.AuthIssuer == "" || a.Cfg.AuthAudience == "":
		return nil, nil
	case a.Cfg.AuthJWKSFile != "":
		source = auth.FileKeys(a.Cfg.AuthJWKSFile)
	case a.Cfg.AuthJWKSURL != "":
		source = auth.URLKeys(a.Cfg.AuthJWKSURL, nil)
	default:
		return nil, nil
	}
	keys, err := auth.NewKeyCache(ctx, source, auth.KeyCacheOptions{})
	if err != nil {
		return nil, fmt.Errorf("AUTH_JWKS_FILE/AUTH_JWKS_URL: %w", err)
	}
	return auth.NewVerifier(a.Cfg.AuthIssuer, a.Cfg.AuthAudience, keys, nil), nil
}

// serverTLS is the TLS set-up of the API's listeners, nil to serve plain
// HTTP. With a client CA (mutual TLS), a listener of its own for the
// webhooks requires a client certificate at the handshake; when the
// webhooks share the main listener, every client is asked for one and any
// given must chain to the CA, and the webhook routes refuse a request that
// came without one (other clients of that listener need none).
func (a *App) serverTLS(requireClientCert bool) (*tls.Config, error) {
	if a.Cfg.TLSCertFile == "" {
		return nil, nil
	}
	cert, err := tls.LoadX509KeyPair(a.Cfg.TLSCertFile, a.Cfg.TLSKeyFile)
	if err != nil {
		return nil, fmt.Errorf("TLS_CERT_FILE/TLS_KEY_FILE: %w", err)
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}}
	if a.Cfg.TLSClientCAFile != "" {
		pem, err := os.ReadFile(a.Cfg.TLSClientCAFile)
		if err != nil {
			return nil, fmt.Errorf("TLS_CLIENT_CA_FILE: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("TLS_CLIENT_CA_FILE: %s holds no PEM certificate", a.Cfg.TLSClientCAFile)
		}
		cfg.ClientCAs = pool
		cfg.ClientAuth = tls.VerifyClientCertIfGiven
		if requireClientCert {
			cfg.ClientAuth = tls.RequireAndVerifyClientCert
		}
	}
	return cfg, nil
}

// maxHeaderBytes bounds a request's headers.
const maxHeaderBytes = 64 << 10

// h2StreamWindow is the HTTP/2 flow-control window of a stream: a native
// webhook's largest body (api.MaxWebhookBytes) in one window.
const h2StreamWindow = api.MaxWebhookBytes

// Listeners are where the API serves: Main always; Webhooks and Ops, when
// set, take the PSP webhooks and /metrics, /healthz, /readyz off Main.
type Listeners struct {
	Main, Webhooks, Ops net.Listener
}

// ServeAPI serves HTTP on ln, and on WEBHOOK_HTTP_ADDR and OPS_HTTP_ADDR
// when they are set, until ctx ends (see ServeListeners).
func (a *App) ServeAPI(ctx context.Context, ln net.Listener) error {
	l := Listeners{Main: ln}
	for _, extra := range []struct {
		addr string
		ln   *net.Listener
	}{{a.Cfg.WebhookHTTPAddr, &l.Webhooks}, {a.Cfg.OpsHTTPAddr, &l.Ops}} {
		if extra.addr == "" {
			continue
		}
		var err error
		if *extra.ln, err = net.Listen("tcp", extra.addr); err != nil {
			for _, open := range []net.Listener{l.Webhooks, l.Ops} {
				if open != nil {
					_ = open.Close() //nolint:errcheck // failing anyway
				}
			}
			return fmt.Errorf("listen on %s: %w", extra.addr, err)
		}
	}
	defer func() {
		// Shutdown closed them unless serving never began.
		for _, open := range []net.Listener{l.Webhooks, l.Ops} {
			if open != nil {
				_ = open.Close() //nolint:errcheck // closed already, or failing anyway
			}
		}
	}()
	return a.ServeListeners(ctx, l)
}

// ServeListeners serves the API's route classes on l until ctx ends; then
// it stops taking connections and lets in-flight requests finish within
// the shutdown timeout. Commits that make rows due notify the dispatchers.
func (a *App) ServeListeners(ctx context.Context, l Listeners) error {
	if err := a.Cfg.CheckAPI(); err != nil {
		return err
	}
	a.logAPISettings()
	tokens, err := a.tokenVerifier(ctx)
	if err != nil {
		return err
	}
	var draining atomic.Bool
	receiver, err := a.webhookReceiver()
	if err != nil {
		return err
	}
	deps := a.serverDeps(draining.Load, tokens, receiver)
	servers := a.listenersOf(l)
	// Every server is built before any runs: a bad setting fails the start
	// with nothing left running.
	httpServers := make([]*http.Server, len(servers))
	for i, sv := range servers {
		// With the webhooks on a listener of their own, the main one
		// asks no client for a certificate.
		if httpServers[i], err = a.httpServer(deps, sv, l.Webhooks == nil); err != nil {
			return err
		}
	}
	return a.withWaker(ctx, func(ctx context.Context) error {
		// The group commit's writers outlive the servers' drain: the
		// requests in flight are answered from their commits.
		receiverCtx, stopReceiver := context.WithCancel(context.WithoutCancel(ctx))
		received := make(chan error, 1)
		go func() { received <- receiver.Run(receiverCtx) }()
		err := a.serve(ctx, servers, httpServers, &draining)
		stopReceiver()
		return errors.Join(err, <-received)
	})
}

// logAPISettings says, at start, which of the API's settings are for
// development only, and what is off.
func (a *App) logAPISettings() {
	if !a.Cfg.WebhookSignaturesRequired {
		a.Log.Warn("webhook signatures are not required (WEBHOOK_SIGNATURES_REQUIRED=false): never run production like this")
	}
	if a.Cfg.WebhookMTLSPSPs.Listed() {
		a.Log.Info("webhooks are taken only with a listed client certificate, which authenticates its PSP (WEBHOOK_MTLS_PSPS)",
			"psps", a.Cfg.WebhookMTLSPSPs.PSPs())
	}
	if !a.Cfg.AuthRequired {
		a.Log.Warn("AUTH_REQUIRED=false: the customer routes answer anyone, without a token; anyone can move any account's money. Development only: never run production like this")
	}
	if a.Cfg.AdminToken == "" && a.Cfg.AuthIssuer == "" {
		a.Log.Info("admin routes are disabled: neither ADMIN_TOKEN nor AUTH_ISSUER is set")
	}
}

// webhookReceiver is the group commit the webhooks' deliveries go
// through (WEBHOOK_GROUP_*).
func (a *App) webhookReceiver() (*db.Receiver, error) {
	return db.NewReceiver(a.Store, groupcommit.Options{
		Writers: a.Cfg.WebhookGroupWriters, MaxRows: a.Cfg.WebhookGroupMaxRows, Window: a.Cfg.WebhookGroupWindow,
		QueueRows: a.Cfg.WebhookQueueMaxRows, WriteTimeout: a.Cfg.RequestTimeout, Observe: a.groupCommit.Observe,
		// A panicking write is a bug: its calls were answered 503 and the
		// writer goes on, so this line (with the stack) is how it is seen.
		OnPanic: func(recovered any) {
			a.Log.Error("webhook group write panicked; its requests were answered 503",
				"panic", fmt.Sprint(recovered), "stack", string(debug.Stack()))
		},
	})
}

// serverDeps are the dependencies of the API's routers: apiDeps, with the
// in-flight cap, the webhooks' group commit and the codec server.
func (a *App) serverDeps(draining func() bool, tokens api.TokenVerifier, receiver *db.Receiver) api.Deps {
	deps := a.apiDeps(draining, tokens)
	deps.InFlight = a.inFlight
	// The webhooks' deliveries go through the group commit, everything
	// else straight to the store.
	deps.Stores.Webhooks = receiver
	authorizeAdmin := api.AuthorizeAdmin(deps)
	codecAuthorize := func(r *http.Request) bool { return authorizeAdmin(r) == nil }
	if !a.Cfg.CodecAuthRequired {
		a.Log.Warn("TEMPORAL_CODEC_AUTH_REQUIRED=false: the codec server decrypts Temporal payloads (personal data) for anyone who reaches it. Development only: never run production like this")
		codecAuthorize = func(*http.Request) bool { return true }
	}
	deps.Codec = a.CodecHandler(codecAuthorize)
	return deps
}

// listenersOf are the listeners of l, each with the route classes it
// serves: the webhooks and the operations routes on their own when l has
// them, everything else on the main one.
func (a *App) listenersOf(l Listeners) []listener {
	mainRoutes := api.AllRoutes
	var servers []listener
	if l.Webhooks != nil {
		mainRoutes &^= api.WebhookRoutes
		servers = append(servers, listener{"webhooks", l.Webhooks, api.WebhookRoutes, true, true})
	}
	if l.Ops != nil {
		mainRoutes &^= api.OpsRoutes
		// The operations side is an internal network's: plain HTTP.
		servers = append(servers, listener{"ops", l.Ops, api.OpsRoutes, false, false})
	}
	// TLS_LISTENERS=webhooks: the main listener is plain HTTP (an ingress
	// terminates its TLS); the PSPs' mutual TLS stays end to end.
	return append(servers, listener{"api", l.Main, mainRoutes, !a.Cfg.TLSWebhooksOnly, false})
}

// httpServer is the server of one listener, its router serving the
// listener's route classes; mainAsksForCerts: the main listener asks
// clients for a certificate (the webhooks share it).
func (a *App) httpServer(deps api.Deps, sv listener, mainAsksForCerts bool) (*http.Server, error) {
	handler, err := api.NewRouter(deps, sv.routes)
	if err != nil {
		return nil, err
	}
	if a.WrapHTTP != nil {
		handler = a.WrapHTTP(handler)
	}
	var tlsCfg *tls.Config
	if sv.tls {
		if tlsCfg, err = a.serverTLS(sv.mtls); err != nil {
			return nil, err
		}
		if tlsCfg != nil && sv.name == "api" && !mainAsksForCerts {
			tlsCfg.ClientCAs, tlsCfg.ClientAuth = nil, tls.NoClientCert
		}
	}
	srv := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: a.Cfg.HTTPReadTimeout,
		ReadTimeout:       a.Cfg.HTTPReadTimeout,
		WriteTimeout:      a.Cfg.HTTPWriteTimeout,
		IdleTimeout:       a.Cfg.HTTPIdleTimeout,
		// Tells the connection cap which connections are idle: at
		// the cap, one of them makes room for a newcomer.
		ConnState: a.conns.ConnState,
		// A bearer token or a signature needs a few KiB; 1 MiB (the
		// default) of headers is work for an attacker, not for us.
		MaxHeaderBytes: maxHeaderBytes,
		ErrorLog:       slog.NewLogLogger(a.Log.Handler(), slog.LevelWarn),
		TLSConfig:      tlsCfg,
		// With TLS, HTTP/2: a connection's streams are requests of
		// HTTP_MAX_IN_FLIGHT like any, and what a client may push
		// ahead of the handlers is bounded per stream (a native
		// webhook's whole body) and per connection.
		HTTP2: &http.HTTP2Config{MaxConcurrentStreams: 100, MaxReceiveBufferPerStream: h2StreamWindow, MaxReceiveBufferPerConnection: 4 * h2StreamWindow},
	}
	return srv, nil
}

// listener is one of the API's listeners and the route classes it serves.
type listener struct {
	name   string
	ln     net.Listener
	routes api.Routes
	tls    bool
	mtls   bool
}

// serve serves each listener until ctx ends, then drains: /readyz first,
// then the servers stop taking connections and finish what they hold.
func (a *App) serve(ctx context.Context, servers []listener, httpServers []*http.Server, draining *atomic.Bool) error {
	g, ctx := errgroup.WithContext(ctx)
	for i, sv := range servers {
		srv := httpServers[i]
		g.Go(func() error {
			a.Log.Info("api listening", "listener", sv.name, "addr", sv.ln.Addr().String(), "tls", srv.TLSConfig != nil,
				"mutual_tls", srv.TLSConfig != nil && srv.TLSConfig.ClientCAs != nil, "auth_required", a.Cfg.AuthRequired)
			serve := srv.Serve
			if srv.TLSConfig != nil {
				// The certificate is in TLSConfig already.
				serve = func(ln net.Listener) error { return srv.ServeTLS(ln, "", "") }
			}
			ln := sv.ln
			if sv.name != "ops" {
				// Under the connection cap, which the probes and
				// scrapes of a listener of their own stay out of.
				ln = a.conns.Listen(ln, srv.TLSConfig)
			}
			if err := serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				return fmt.Errorf("serve http (%s): %w", sv.name, err)
			}
			return nil
		})
	}
	g.Go(func() error {
		<-ctx.Done()
		// First /readyz turns 503 while everything still works, so that
		// the load balancer stops sending; then the servers stop taking
		// connections and let in-flight requests finish.
		draining.Store(true)
		a.Log.Info("api draining: /readyz answers 503", "for", a.Cfg.ShutdownReadyzDelay.String())
		time.Sleep(a.Cfg.ShutdownReadyzDelay)
		shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), a.Cfg.ShutdownTimeout)
		defer cancel()
		a.Log.Info("api shutting down")
		var errs []error
		for _, srv := range httpServers {
			if err := srv.Shutdown(shutdownCtx); err != nil {
				errs = append(errs, fmt.Errorf("shutdown http: %w", err))
			}
		}
		return errors.Join(errs...)
	})
	return g.Wait()
}

// RunAPI listens on HTTP_ADDR (and WEBHOOK_HTTP_ADDR, OPS_HTTP_ADDR) and
// serves until ctx ends.
func (a *App) RunAPI(ctx context.Context) error {
	ln, err := net.Listen("tcp", a.Cfg.HTTPAddr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", a.Cfg.HTTPAddr, err)
	}
	return a.ServeAPI(ctx, ln)
}
