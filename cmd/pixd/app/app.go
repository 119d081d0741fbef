package app

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/cenkalti/backoff/v5"
	"github.com/prometheus/client_golang/prometheus"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/workflow"
	"golang.org/x/sync/errgroup"

	"github.com/pixbank/pix/api"
	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/internal/auth"
	"github.com/pixbank/pix/internal/broker"
	"github.com/pixbank/pix/internal/buildinfo"
	"github.com/pixbank/pix/internal/codec"
	"github.com/pixbank/pix/internal/config"
	"github.com/pixbank/pix/internal/connlimit"
	"github.com/pixbank/pix/internal/durable"
	"github.com/pixbank/pix/internal/groupcommit"
	"github.com/pixbank/pix/internal/logging"
	"github.com/pixbank/pix/internal/memlimit"
	"github.com/pixbank/pix/internal/metrics"
	"github.com/pixbank/pix/internal/outbox"
	"github.com/pixbank/pix/internal/psp"
	"github.com/pixbank/pix/internal/tracing"
	"github.com/pixbank/pix/internal/tracing/setup"
	"github.com/pixbank/pix/internal/webhooksig"
	"github.com/pixbank/pix/saga"
	"github.com/pixbank/pix/saga/registry"
	"github.com/pixbank/pix/worker"
	"github.com/pixbank/pix/workflows"
)

// App holds a process's shared dependencies.
type App struct {
	Cfg      config.Config
	Log      *slog.Logger
	Store    *db.Store
	Temporal client.Client
	// Metrics is the process's Prometheus registry.
	Metrics       *prometheus.Registry
	webhooks      *metrics.Webhooks
	groupCommit   *metrics.GroupCommit
	workerMetrics *metrics.Worker
	catchUp       *metrics.CatchUp
	// conns and inFlight are the API's caps (HTTP_MAX_CONNECTIONS,
	// HTTP_MAX_IN_FLIGHT), shared by its listeners; shedding counts what
	// they refused.
	conns    *connlimit.Limiter
	inFlight *api.InFlight
	shedding *metrics.Shedding
	// psp is the PSP client (psp.New from config.PSP: OAuth 2.0 and mutual
	// TLS as configured), one for every activity that calls the PSP.
	psp *psp.HTTPClient
	// sagas are every saga's HTTP side (registry.HTTP).
	sagas []api.SagaHTTP
	// closeSDKMetrics stops the Temporal SDK metrics' reporting loop.
	closeSDKMetrics io.Closer
	// payloadCodec encrypts the Temporal client's payloads; nil without
	// TEMPORAL_CODEC_KEYS.
	payloadCodec *codec.Codec
	// tracing traces the process (nil: off); ownTracing: New built it from
	// the OTEL_* settings, and Close flushes and stops it.
	tracing    *tracing.Provider
	ownTracing bool
	// WrapHTTP, when set before the API serves, wraps each listener's
	// handler: the e2e tests record every exchange there, to check it
	// against the OpenAPI documents. Nil in pixd.
	WrapHTTP func(http.Handler) http.Handler
	// dataConverter is the Temporal client's: what reads back the
	// arguments the client wrote (the Schedules' among them).
	dataConverter converter.DataConverter
}

// Option changes how New builds an App.
type Option func(*options)

type options struct {
	tracing     *tracing.Provider
	serviceName string
}

// WithTracing traces into p, which the caller owns, instead of the
// provider the OTEL_* settings describe: a test's in-memory recorder.
func WithTracing(p *tracing.Provider) Option { return func(o *options) { o.tracing = p } }

// WithServiceName is the service.name the process's spans are recorded
// under when OTEL_SERVICE_NAME is unset (pixd-api, pixd-worker, ...).
func WithServiceName(name string) Option { return func(o *options) { o.serviceName = name } }

// New connects to PostgreSQL and prepares a Temporal client. Neither needs
// to be reachable yet: the pool and the client connect on first use, so an
// API process starts (and answers 503) while a dependency is down. Nor does
// the trace collector.
func New(ctx context.Context, cfg config.Config, log *slog.Logger, opts ...Option) (*App, error) {
	o := options{serviceName: "pixd"}
	for _, opt := range opts {
		opt(&o)
	}
	// Before anything allocates much: the heap's soft limit from the
	// container's, unless GOMEMLIMIT says otherwise.
	memlimit.Apply(log)
	// Address, namespace, TLS and API key, from the TEMPORAL_* variables.
	temporalOptions, err := cfg.TemporalClientOptions()
	if err != nil {
		return nil, err
	}
	traces, ownTracing := o.tracing, false
	if traces == nil {
		if traces, err = setup.New(ctx, cfg.Tracing, o.serviceName); err != nil {
			return nil, err
		}
		ownTracing = true
		if traces.Enabled() {
			log.Info("tracing on", "exporter", cfg.Tracing.Exporter, "propagators", cfg.Tracing.Propagators, "service_name", traces.ServiceName())
		}
	}
	stopTracing := func() {
		if ownTracing {
			_ = traces.Shutdown(ctx) //nolint:errcheck // failing anyway; nothing was traced yet
		}
	}
	// The workers inherit the client's interceptors: starts, runs,
	// activities and local activities are traced alike.
	temporalTracer, err := setup.TemporalInterceptor(traces)
	if err != nil {
		stopTracing()
		return nil, err
	}
	pspConfig := cfg.PSP()
	pspClient, err := psp.New(pspConfig, psp.WithTracing(traces))
	if err != nil {
		stopTracing()
		return nil, fmt.Errorf("psp client: %w", err)
	}
	if !pspConfig.Authenticated() {
		log.Warn("PSP_OAUTH_TOKEN_URL unset: the PSP client sends no OAuth 2.0 token (a simulator without authentication); a real PSP answers none of its calls: never run production like this")
	}
	pool, err := db.Open(ctx, cfg.DatabaseURL, cfg.DatabaseMaxConns, db.WithTracing(traces))
	if err != nil {
		stopTracing()
		return nil, err
	}
	promRegistry := metrics.New()
	sdkMetrics, closeSDKMetrics := metrics.TemporalSDK(promRegistry, log)
	temporalOptions.Logger = logging.Temporal(log)
	temporalOptions.MetricsHandler = sdkMetrics
	if tls := temporalOptions.ConnectionOptions.TLS; tls != nil && tls.InsecureSkipVerify {
		log.Warn("TEMPORAL_TLS_DISABLE_HOST_VERIFICATION: the Temporal server's certificate is not checked; development only")
	}
	if temporalTracer != nil {
		temporalOptions.Interceptors = append(temporalOptions.Interceptors, temporalTracer)
	}
	// Payloads hold the payer's name and document: with keys, everything
	// the client writes to Temporal is encrypted, failures included.
	var payloadCodec *codec.Codec
	dataConverter := converter.GetDefaultDataConverter()
	if cfg.TemporalCodecKeys != nil {
		payloadCodec = cfg.PayloadCodec()
		converters := codec.NewConverters(payloadCodec)
		converters.ApplyTo(&temporalOptions)
		dataConverter = converters.DataConverter
		log.Info("Temporal payloads are encrypted", "key_ids", cfg.TemporalCodecKeys.IDs(), "newest_key_id", cfg.TemporalCodecKeys.NewestID())
	} else {
		log.Warn("Temporal payloads are not encrypted (TEMPORAL_CODEC_KEYS unset): development only")
	}
	tc, err := client.NewLazyClient(temporalOptions)
	if err != nil {
		_ = closeSDKMetrics.Close() //nolint:errcheck // nothing was reported yet
		pool.Close()
		stopTracing()
		return nil, fmt.Errorf("temporal client: %w", err)
	}
	a := &App{Cfg: cfg, Log: log, Store: db.NewStore(pool), Temporal: tc, Metrics: promRegistry, closeSDKMetrics: closeSDKMetrics,
		payloadCodec: payloadCodec, dataConverter: dataConverter, tracing: traces, ownTracing: ownTracing, psp: pspClient}
	metrics.RegisterDatabaseGauges(a.Metrics, a.Store, log)
	a.webhooks = metrics.NewWebhooks(a.Metrics)
	a.groupCommit = metrics.NewGroupCommit(a.Metrics)
	a.workerMetrics = metrics.NewWorker(a.Metrics)
	a.catchUp = metrics.NewCatchUp(a.Metrics, cfg.PSPCatchUpInterval > 0)
	a.shedding = metrics.NewShedding(a.Metrics, func() float64 { return float64(a.conns.Open()) })
	a.conns = connlimit.New(cfg.HTTPMaxConnections, api.OverloadResponse(), a.shedding.ConnectionShed)
	a.inFlight = api.NewInFlight(cfg.HTTPMaxInFlight, a.shedding.RequestShed)
	// The sagas' own metrics, and their HTTP sides, whose settings are
	// checked here (a wrong one stops the start).
	env := a.sagaEnv()
	if err = registry.RegisterMetrics(a.Metrics, env); err == nil {
		a.sagas, err = registry.HTTP(env)
	}
	if err != nil {
		a.Close()
		return nil, err
	}
	return a, nil
}

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

// Close releases the pool and the Temporal client, and exports the spans
// still buffered, within SHUTDOWN_TIMEOUT.
func (a *App) Close() {
	a.Temporal.Close()
	_ = a.closeSDKMetrics.Close() //nolint:errcheck // a last report on the way out
	if a.ownTracing {
		ctx, cancel := context.WithTimeout(context.Background(), a.Cfg.ShutdownTimeout)
		if err := a.tracing.Shutdown(ctx); err != nil {
			a.Log.Warn("spans not exported on the way out", "error", err)
		}
		cancel()
	}
	a.Store.Pool().Close()
}

// Migrate applies the embedded migrations, and logs which it applied.
func (a *App) Migrate(ctx context.Context) error {
	applied, err := db.Migrate(ctx, a.Store.Pool())
	if len(applied) > 0 || err == nil {
		a.Log.Info("migrations applied", "applied", applied)
	}
	return err
}

// MigrationStatus reports the embedded migrations against the database's.
func (a *App) MigrationStatus(ctx context.Context) (db.MigrationReport, error) {
	return db.MigrationStatus(ctx, a.Store.Pool())
}

// Dispatchers builds the dispatchers the configuration describes, one per
// saga with a durable start (registry.All), each starting its runs on its
// family's task queue.
func (a *App) Dispatchers() []*durable.Dispatcher {
	env := a.sagaEnv()
	var ds []*durable.Dispatcher
	for _, d := range registry.All {
		if d.Source == nil {
			continue
		}
		c := a.Temporal
		if a.Cfg.WorkerVersioning && d.Versioning == workflow.VersioningBehaviorPinned {
			// A draining build's dispatchers must not pin new runs to it.
			c = worker.StartsOnTheCurrentBuild(c)
		}
		ds = append(ds, a.dispatcher(d.Source(env, env.Queues.Of(d.Family)), c))
	}
	return ds
}

func (a *App) dispatcher(src durable.Source, c client.Client) *durable.Dispatcher {
	var observer durable.Observer
	if a.workerMetrics != nil {
		observer = a.workerMetrics
	}
	return durable.New(a.Store, src, c, durable.Options{
		PollInterval:  a.Cfg.DispatchPollInterval,
		BatchSize:     a.Cfg.DispatchBatchSize,
		Concurrency:   a.Cfg.DispatchConcurrency,
		RecheckAfter:  a.Cfg.DispatchRecheckAfter,
		RecheckMax:    a.Cfg.DispatchRecheckMax,
		RetryMaxDelay: a.Cfg.DispatchRetryMaxDelay,
		Metrics:       observer,
	}, a.Log)
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
		BankISPB:           a.Cfg.BankISPB,
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
	tokens, err := a.tokenVerifier(ctx)
	if err != nil {
		return err
	}
	var draining atomic.Bool
	receiver, err := db.NewReceiver(a.Store, groupcommit.Options{
		Writers: a.Cfg.WebhookGroupWriters, MaxRows: a.Cfg.WebhookGroupMaxRows, Window: a.Cfg.WebhookGroupWindow,
		QueueRows: a.Cfg.WebhookQueueMaxRows, WriteTimeout: a.Cfg.RequestTimeout, Observe: a.groupCommit.Observe,
		// A panicking write is a bug: its calls were answered 503 and the
		// writer goes on, so this line (with the stack) is how it is seen.
		OnPanic: func(recovered any) {
			a.Log.Error("webhook group write panicked; its requests were answered 503",
				"panic", fmt.Sprint(recovered), "stack", string(debug.Stack()))
		},
	})
	if err != nil {
		return err
	}
	deps := a.apiDeps(draining.Load, tokens)
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
	servers = append(servers, listener{"api", l.Main, mainRoutes, !a.Cfg.TLSWebhooksOnly, false})
	// With the webhooks on a listener of their own, the main one asks no
	// client for a certificate.
	mainAsksForCerts := l.Webhooks == nil

	// Every server is built before any runs: a bad setting fails the start
	// with nothing left running.
	httpServers := make([]*http.Server, len(servers))
	for i, sv := range servers {
		handler, err := api.NewRouter(deps, sv.routes)
		if err != nil {
			return err
		}
		if a.WrapHTTP != nil {
			handler = a.WrapHTTP(handler)
		}
		var tlsCfg *tls.Config
		if sv.tls {
			if tlsCfg, err = a.serverTLS(sv.mtls); err != nil {
				return err
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
		httpServers[i] = srv
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

// RunWorker runs the Temporal workers (one per workflow family, on the
// family's task queue), the dispatchers (when enabled) and the outbox relay
// (when enabled) and the store's waker until ctx ends. The dispatchers share the workers' client,
// so that their starts are eager: a new run's first task goes straight to
// this process's worker of its family. The relay needs no Temporal: it runs while
// the worker waits for it.
func (a *App) RunWorker(ctx context.Context) error {
	g, ctx := errgroup.WithContext(ctx)
	if a.Cfg.OutboxRelayEnabled {
		relay, stop, err := a.OutboxRelay()
		if err != nil {
			return err
		}
		defer stop()
		g.Go(func() error { return relay.Run(ctx) })
	}
	g.Go(func() error { return a.runTemporalWorker(ctx) })
	if a.Cfg.WorkerMetricsAddr != "" {
		g.Go(func() error { return a.serveWorkerMetrics(ctx) })
	}
	// The activities' commits (credits, events) wake the relays and the
	// dispatchers through the store's waker, until the last activity ended.
	return a.withWaker(ctx, func(context.Context) error { return g.Wait() })
}

// withWaker runs the store's waker while run runs, and until it returned:
// what run's last commits asked to wake (a request finished while
// draining, an activity while the worker stops) is notified on the way
// out, not dropped with the process.
func (a *App) withWaker(ctx context.Context, run func(context.Context) error) error {
	wakerCtx, stopWaker := context.WithCancel(context.WithoutCancel(ctx))
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		_ = a.Store.RunWaker(wakerCtx, a.Log) // it only ever stops with its context
	}()
	err := run(ctx)
	stopWaker()
	<-stopped
	return err
}

// serveWorkerMetrics serves the process's /metrics on WORKER_METRICS_ADDR
// (a worker has no API to serve them) until ctx ends.
func (a *App) serveWorkerMetrics(ctx context.Context) error {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", metrics.Handler(a.Metrics))
	srv := &http.Server{Addr: a.Cfg.WorkerMetricsAddr, Handler: mux, ReadHeaderTimeout: 5 * time.Second, WriteTimeout: 10 * time.Second}
	ln, err := net.Listen("tcp", a.Cfg.WorkerMetricsAddr)
	if err != nil {
		return fmt.Errorf("WORKER_METRICS_ADDR %s: %w", a.Cfg.WorkerMetricsAddr, err)
	}
	a.Log.Info("worker metrics listening", "addr", ln.Addr().String())
	go func() {
		<-ctx.Done()
		shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdownCtx) //nolint:errcheck // best effort on the way out
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve worker metrics: %w", err)
	}
	return nil
}

// sagaEnv is what every saga's activities, durable start and Schedule are
// built from.
func (a *App) sagaEnv() saga.Env {
	return saga.Env{Store: a.Store, PSP: a.psp, Cfg: a.Cfg, Queues: a.Cfg.TaskQueues(), Log: a.Log,
		Metrics: a.workerMetrics, CatchUpFound: a.catchUp, Temporal: a.Temporal, Lookup: os.LookupEnv,
		Schedules: workflows.ScheduleSync{DataConverter: a.dataConverter, Log: a.Log}}
}

// scheduleKeepInterval is how often a versioned worker asks whether its
// build is current (a build an operator promotes writes its settings this
// soon) and, while it is, compares the Schedules with its configuration
// (reads: it writes them only at its start and its build's promotion).
const scheduleKeepInterval = 15 * time.Second

func (a *App) runTemporalWorker(ctx context.Context) error {
	env := a.sagaEnv()
	queues := env.Queues
	opts := worker.Options{
		StopTimeout:             a.Cfg.WorkerStopTimeout,
		MaxConcurrentActivities: a.Cfg.WorkerMaxActivities,
	}
	if a.Cfg.WorkerVersioning {
		opts.Version = worker.ThisBuild(queues)
		if buildinfo.Read().Revision == "unknown" {
			// Every build without a VCS stamp nor a link-time revision
			// (an image built without its build args) has the build id
			// "devel": two such releases would be one version, and a new
			// one's workers would take the old one's pinned runs.
			a.Log.Error("worker build id names no revision: builds made this way share it; build with make image or make compose-build (docs/cli.md#build-identity)",
				"build_id", opts.Version.BuildID)
		}
	}
	workers := worker.New(a.Temporal, registry.All, env, opts)
	schedules := worker.Schedules{Client: a.Temporal, Sagas: registry.All, Env: env}
	ready, err := setUpWhileReachable(ctx, a.Log, a.waitForTemporal, func(ctx context.Context) error {
		if err := workflows.CheckSearchAttributes(ctx, a.Temporal, a.Cfg.TemporalNamespace); err != nil {
			return err
		}
		if a.Cfg.WorkerVersioning {
			return nil // the current build's worker keeps them (below)
		}
		return schedules.Sync(ctx)
	})
	if !ready {
		return err // nil: stopped while starting
	}
	a.Log.Info("worker running", "task_queues", queues.All(), "temporal_address", a.Cfg.TemporalAddress,
		"dispatcher", a.Cfg.DispatcherEnabled, "psp_url", a.Cfg.PSPURL,
		"deployment", opts.Version.DeploymentName, "build_id", opts.Version.BuildID)
	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error { return worker.Run(ctx, workers...) })
	if a.Cfg.WorkerVersioning {
		g.Go(func() error { return worker.Promote(ctx, a.Temporal, opts.Version, a.Cfg.WorkerPromote, a.Log) })
		g.Go(func() error {
			return worker.KeepSchedules(ctx, schedules, opts.Version, scheduleKeepInterval)
		})
	}
	if a.Cfg.DispatcherEnabled {
		for _, d := range a.Dispatchers() {
			g.Go(func() error { return d.Run(ctx) })
		}
	}
	return g.Wait()
}

// OutboxRelay builds the outbox relay on the broker at NATS_URL (required:
// config.CheckWorker). stop closes the connection.
func (a *App) OutboxRelay() (relay *outbox.Relay, stop func(), err error) {
	if err := a.Cfg.CheckWorker(); err != nil {
		return nil, nil, err
	}
	nc, err := broker.Connect(a.Cfg.NATSURL, "pixd outbox relay")
	if err != nil {
		return nil, nil, err
	}
	pub, err := broker.NewPublisher(nc, 5*time.Second, broker.StreamLimits{MaxAge: a.Cfg.NATSStreamMaxAge, MaxBytes: a.Cfg.NATSStreamMaxBytes},
		broker.WithTracing(a.tracing))
	if err != nil {
		nc.Close()
		return nil, nil, err
	}
	relay = outbox.New(a.Store, pub.Publish, outbox.Options{BatchSize: a.Cfg.OutboxBatchSize, PollInterval: a.Cfg.OutboxPollInterval, GatherWindow: a.Cfg.OutboxGatherWindow}, a.Log)
	return relay, nc.Close, nil
}

// RegisterSearchAttributes registers the PIX search attributes the
// namespace lacks (the dev command, and `pixd temporal-setup`).
func (a *App) RegisterSearchAttributes(ctx context.Context) error {
	// A namespace created a moment ago is known to the server's namespace
	// registry only at its next refresh (about 10 s): set-up scripts run
	// this right after creating it, so "not found" is waited out, briefly.
	added, err := backoff.Retry(ctx, func() ([]string, error) {
		added, err := workflows.RegisterSearchAttributes(ctx, a.Temporal, a.Cfg.TemporalNamespace)
		var notFound *serviceerror.NamespaceNotFound
		if err != nil && !errors.As(err, &notFound) {
			return nil, backoff.Permanent(err)
		}
		return added, err
	}, backoff.WithBackOff(backoff.NewConstantBackOff(time.Second)), backoff.WithMaxElapsedTime(namespaceRegistryWait),
		backoff.WithNotify(func(err error, _ time.Duration) {
			a.Log.Warn("namespace not known yet; retrying", "namespace", a.Cfg.TemporalNamespace, "error", err)
		}))
	if err != nil {
		return err
	}
	a.Log.Info("pix search attributes registered", "namespace", a.Cfg.TemporalNamespace, "added", added)
	return nil
}

// namespaceRegistryWait bounds RegisterSearchAttributes' wait for a new
// namespace: a few of the server's registry refreshes.
const namespaceRegistryWait = 30 * time.Second

// waitForTemporal returns true once Temporal answers, false when ctx ends
// first. A worker started while Temporal is down waits for it instead of
// exiting (the SDK's worker start fails outright when it can't reach the
// server).
func (a *App) waitForTemporal(ctx context.Context) bool {
	// Asked again after 1 s, doubling up to 30 s.
	wait := &backoff.ExponentialBackOff{InitialInterval: time.Second, Multiplier: 2, MaxInterval: 30 * time.Second}
	_, err := backoff.Retry(ctx, func() (struct{}, error) {
		// GetSearchAttributes rather than CheckHealth: any workflow-service
		// call loads the server's capabilities into the client, and it must
		// happen once before the dispatcher's concurrent starts (the SDK
		// reads them unsynchronized for eager start; found by -race).
		checkCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		_, err := a.Temporal.GetSearchAttributes(checkCtx)
		return struct{}{}, err
	}, backoff.WithBackOff(wait), backoff.WithMaxElapsedTime(0), backoff.WithNotify(func(err error, next time.Duration) {
		a.Log.Warn("Temporal unreachable; the worker waits for it", "temporal_address", a.Cfg.TemporalAddress,
			"error", err, "retry_in", next.String())
	}))
	return err == nil
}

// setUpWhileReachable runs the worker's set-up against Temporal once
// waitForTemporal found it up, again from the wait if Temporal went away
// meanwhile (unreachable or timing out: a restart, a deploy), until it is
// done (ready) or fails for good (a search attribute missing: err). A stop
// while starting is no failure: not ready, and no error.
func setUpWhileReachable(ctx context.Context, log *slog.Logger, waitForTemporal func(context.Context) bool, setUp func(context.Context) error) (ready bool, err error) {
	for {
		if !waitForTemporal(ctx) {
			return false, nil // stopped while waiting
		}
		err := setUp(ctx)
		switch {
		case err == nil:
			return true, nil
		case ctx.Err() != nil:
			return false, nil // stopped while setting up
		case !temporalUnreachable(err):
			return false, err
		}
		log.Warn("Temporal went away while the worker was setting up; it waits for it again", "error", err)
	}
}

// temporalUnreachable reports whether err is Temporal not answering (down,
// restarting, too slow), not Temporal refusing.
func temporalUnreachable(err error) bool {
	var unavailable *serviceerror.Unavailable
	var deadline *serviceerror.DeadlineExceeded
	return errors.As(err, &unavailable) || errors.As(err, &deadline) || errors.Is(err, context.DeadlineExceeded)
}

// DemoAccounts are the accounts the dev command opens.
var DemoAccounts = []db.NewAccount{
	{ID: "acc-0001", OwnerName: "Maria Silva", OpeningBalanceCents: 100_000},
	{ID: "acc-0002", OwnerName: "João Souza", OpeningBalanceCents: 50_000},
	{ID: "acc-0003", OwnerName: "Ana Pereira", OpeningBalanceCents: 0},
	{ID: "acc-0004", OwnerName: "Carlos Lima", OpeningBalanceCents: 250_000},
}

// DemoPixKeys and DemoCharges let API Pix notifications reach the demo
// accounts: Maria's e-mail key, and the charge whose txid the Central Bank's
// example notification pixWebhook2 pays.
var (
	DemoPixKeys = []db.NewPixKey{{Key: "maria@example.com", KeyType: "email", AccountID: "acc-0001"}}
	DemoCharges = []db.NewCharge{{TxID: "971122d8f37211eaadc10242ac120002", AccountID: "acc-0002", AmountExpectedCents: 11_000}}
)

// SeedDemoAccounts opens the demo accounts, keys and charges that don't
// exist yet.
func (a *App) SeedDemoAccounts(ctx context.Context) error {
	for _, acc := range DemoAccounts {
		if _, err := a.Store.CreateAccount(ctx, acc); err != nil {
			return fmt.Errorf("seed %s: %w", acc.ID, err)
		}
	}
	for _, k := range DemoPixKeys {
		if _, err := a.Store.CreatePixKey(ctx, k); err != nil {
			return fmt.Errorf("seed pix key %s: %w", k.Key, err)
		}
	}
	for _, c := range DemoCharges {
		if _, err := a.Store.CreateCharge(ctx, c); err != nil {
			return fmt.Errorf("seed charge %s: %w", c.TxID, err)
		}
	}
	return nil
}
