package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/cenkalti/backoff/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/pixbank/pix/api"
	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/internal/codec"
	"github.com/pixbank/pix/internal/config"
	"github.com/pixbank/pix/internal/connlimit"
	"github.com/pixbank/pix/internal/logging"
	"github.com/pixbank/pix/internal/memlimit"
	"github.com/pixbank/pix/internal/metrics"
	"github.com/pixbank/pix/internal/payload"
	"github.com/pixbank/pix/internal/psp"
	"github.com/pixbank/pix/internal/tracing"
	"github.com/pixbank/pix/internal/tracing/setup"
	"github.com/pixbank/pix/saga"
	"github.com/pixbank/pix/saga/registry"
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
	// lookup reads the sagas' own settings (saga.Env.Lookup): the
	// process's environment, or a test's (WithSettings).
	lookup func(string) (string, bool)
	// conns and inFlight are the API's caps (HTTP_MAX_CONNECTIONS,
	// HTTP_MAX_IN_FLIGHT), shared by its listeners; shedding counts what
	// they refused.
	conns    *connlimit.Limiter
	inFlight *api.InFlight
	shedding *metrics.Shedding
	// psp is the PSP client (psp.New from config.PSP: OAuth 2.0 and mutual
	// TLS as configured), one for every activity that calls the PSP.
	psp *psp.HTTPClient
	// sagas are every saga's HTTP side (registry.HTTP); process is what
	// they keep per process (saga.Env.Process).
	sagas   []api.SagaHTTP
	process *saga.Process
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
	// settings are WithSettings'; nil: the process's environment.
	settings map[string]string
}

// lookup reads the sagas' own settings: WithSettings', or the process's
// environment.
func (o options) lookup() func(string) (string, bool) {
	if o.settings == nil {
		return os.LookupEnv
	}
	return config.LookupIn(o.settings)
}

// WithTracing traces into p, which the caller owns, instead of the
// provider the OTEL_* settings describe: a test's in-memory recorder.
func WithTracing(p *tracing.Provider) Option { return func(o *options) { o.tracing = p } }

// WithSettings gives the sagas' own settings (saga.Descriptor.Settings),
// variable by variable, over those of an earlier WithSettings, in place of
// the process's environment: a test's, which sets them as an operator
// would, without changing the environment of the other tests of its
// process. The variables it does not name are unset.
func WithSettings(vars map[string]string) Option {
	return func(o *options) {
		if o.settings == nil {
			o.settings = map[string]string{}
		}
		maps.Copy(o.settings, vars)
	}
}

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
	traces, ownTracing, err := processTracing(ctx, cfg, log, o)
	if err != nil {
		return nil, err
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
	sdkMetrics, err := metrics.TemporalSDK(promRegistry, log)
	if err != nil {
		pool.Close()
		stopTracing()
		return nil, err
	}
	temporalOptions.Logger = logging.Temporal(log)
	temporalOptions.MetricsHandler = sdkMetrics
	if tls := temporalOptions.ConnectionOptions.TLS; tls != nil && tls.InsecureSkipVerify {
		log.Warn("TEMPORAL_TLS_DISABLE_HOST_VERIFICATION: the Temporal server's certificate is not checked; development only")
	}
	if temporalTracer != nil {
		temporalOptions.Interceptors = append(temporalOptions.Interceptors, temporalTracer)
	}
	// How the durations in what this process writes to Temporal read in
	// its UI (TEMPORAL_DURATION_WRITE_FORMAT): process-wide, set before the
	// client writes anything.
	payload.WriteDurations(cfg.DurationWriteFormat)
	payloadCodec, dataConverter := encryptPayloads(cfg, log, &temporalOptions)
	tc, err := client.NewLazyClient(temporalOptions)
	if err != nil {
		pool.Close()
		stopTracing()
		return nil, fmt.Errorf("temporal client: %w", err)
	}
	store := db.NewStore(pool)
	store.SetCatchUpPSP(cfg.CatchUpPSP())
	a := &App{Cfg: cfg, Log: log, Store: store, Temporal: tc, Metrics: promRegistry, lookup: o.lookup(), process: saga.NewProcess(),
		payloadCodec: payloadCodec, dataConverter: dataConverter, tracing: traces, ownTracing: ownTracing, psp: pspClient}
	if err := a.wire(); err != nil {
		a.Close()
		return nil, err
	}
	return a, nil
}

// processTracing is the process's tracing provider: o's, or the one the
// OTEL_* settings describe, which the App then owns (own).
func processTracing(ctx context.Context, cfg config.Config, log *slog.Logger, o options) (traces *tracing.Provider, own bool, err error) {
	if o.tracing != nil {
		return o.tracing, false, nil
	}
	if traces, err = setup.New(ctx, cfg.Tracing, o.serviceName); err != nil {
		return nil, false, err
	}
	if traces.Enabled() {
		log.Info("tracing on", "exporter", cfg.Tracing.Exporter, "propagators", cfg.Tracing.Propagators, "service_name", traces.ServiceName())
	}
	return traces, true, nil
}

// encryptPayloads sets the Temporal client's codec: payloads hold the
// payer's name and document, so with keys everything the client writes
// to Temporal is encrypted, failures included. It returns the codec (nil
// without TEMPORAL_CODEC_KEYS) and the data converter that reads back
// what the client wrote.
func encryptPayloads(cfg config.Config, log *slog.Logger, temporalOptions *client.Options) (*codec.Codec, converter.DataConverter) {
	if cfg.TemporalCodecKeys == nil {
		log.Warn("Temporal payloads are not encrypted (TEMPORAL_CODEC_KEYS unset): development only")
		return nil, converter.GetDefaultDataConverter()
	}
	payloadCodec := cfg.PayloadCodec()
	converters := codec.NewConverters(payloadCodec)
	converters.ApplyTo(temporalOptions)
	log.Info("Temporal payloads are encrypted", "key_ids", cfg.TemporalCodecKeys.IDs(), "newest_key_id", cfg.TemporalCodecKeys.NewestID())
	return payloadCodec, converters.DataConverter
}

// wire builds what the App's processes share on top of its clients: the
// metrics, the API's caps, and the sagas' own metrics and HTTP sides,
// whose settings are checked here (a wrong one stops the start).
func (a *App) wire() error {
	if err := registry.CheckSettings(a.lookup); err != nil {
		return err
	}
	metrics.RegisterDatabaseGauges(a.Metrics, metrics.Database{
		OutboxLag: func(ctx context.Context) (int64, float64, error) {
			lag, err := a.Store.OutboxLag(ctx)
			return lag.Unpublished, lag.OldestAge, err
		},
		OldestPendingAge: a.Store.OldestPendingAge,
	}, a.Log)
	a.webhooks = metrics.NewWebhooks(a.Metrics)
	a.groupCommit = metrics.NewGroupCommit(a.Metrics)
	a.workerMetrics = metrics.NewWorker(a.Metrics)
	a.shedding = metrics.NewShedding(a.Metrics, func() float64 { return float64(a.conns.Open()) })
	a.conns = connlimit.New(a.Cfg.HTTPMaxConnections, api.OverloadResponse(), a.shedding.ConnectionShed)
	a.inFlight = api.NewInFlight(a.Cfg.HTTPMaxInFlight, a.shedding.RequestShed)
	env := a.sagaEnv()
	if err := registry.RegisterMetrics(a.Metrics, env); err != nil {
		return err
	}
	registry.WatchFills(env)
	var err error
	a.sagas, err = registry.HTTP(env)
	return err
}

// Close releases the pool and the Temporal client, and exports the spans
// still buffered, within SHUTDOWN_TIMEOUT.
func (a *App) Close() {
	a.Temporal.Close()
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
//
// It migrates as MIGRATE_DATABASE_URL's role (the migrator, which owns the
// schema), else as the service's, and grants the service role
// (DATABASE_SERVICE_ROLE, else DATABASE_URL's user) what it needs
// (docs/operations.md, "The database's roles"). One role for both is
// said at WARN: the fences of the books are no lock against the owner.
func (a *App) Migrate(ctx context.Context) error {
	pool, done, err := a.migratorPool(ctx)
	if err != nil {
		return err
	}
	defer done()
	migrator, err := db.NewStore(pool).ServiceRole(ctx)
	if err != nil {
		return err
	}
	service, err := serviceRole(a.Cfg)
	if err != nil {
		return err
	}
	if service == migrator.User {
		a.Log.Warn(oneRole+": the migrations grant no service role", "db_role", migrator.User)
		service = ""
	} else {
		// Two roles: a service role that can take the fences down is a
		// mistake of the deployment, refused before anything is granted.
		roles, err := db.NewStore(pool).RoleOf(ctx, service)
		if err != nil {
			return err
		}
		if err := unfenced(roles); err != nil {
			return err
		}
	}
	applied, err := db.Migrate(ctx, pool, db.GrantTo(service))
	if len(applied) > 0 || err == nil {
		a.Log.Info("migrations applied", "applied", applied, "migrator", migrator.User, "service_role", service)
	}
	return err
}

// oneRole is what pixd says at WARN when the service and the migrations
// run as one role.
const oneRole = "the service and the migrations run as one database role, the tables' owner: it can ALTER a table, " +
	"turn a fence of the books off, replace its function, and write what the reconciliation keeps " +
	"(docs/operations.md, \"The database's roles\": set MIGRATE_DATABASE_URL to a migrator's role, DATABASE_URL to a service role)"

// migratorPool is a pool on MIGRATE_DATABASE_URL, closed by done, or the
// service's when it is unset.
func (a *App) migratorPool(ctx context.Context) (pool *pgxpool.Pool, done func(), err error) {
	if a.Cfg.MigrateDatabaseURL == "" {
		return a.Store.Pool(), func() {}, nil
	}
	// goose's migration and the lock's session: two connections at most.
	pool, err = db.Open(ctx, a.Cfg.MigrateDatabaseURL, 4)
	if err != nil {
		return nil, nil, fmt.Errorf("MIGRATE_DATABASE_URL: %w", err)
	}
	return pool, pool.Close, nil
}

// serviceRole is the role the migrations grant to: DATABASE_SERVICE_ROLE,
// else the user DATABASE_URL connects as (as libpq reads it: PGUSER, else
// the OS user, when the URL names none).
func serviceRole(cfg config.Config) (string, error) {
	if cfg.DatabaseServiceRole != "" {
		return cfg.DatabaseServiceRole, nil
	}
	pc, err := pgconn.ParseConfig(cfg.DatabaseURL)
	if err != nil {
		return "", fmt.Errorf("DATABASE_URL: %w", err)
	}
	return pc.User, nil
}

// errUnfenced is what refuses a service role, apart from the migrator,
// that the fences of the books are no lock against.
var errUnfenced = errors.New("the fences of the books are no lock against the service's database role " +
	"(docs/operations.md, \"The database's roles\": it must own nothing, nor the schema or the database, " +
	"without CREATEROLE nor CREATE in the schema)")

// unfenced is errUnfenced, saying what r holds, unless r is fenced.
func unfenced(r db.Roles) error {
	if r.Fenced() {
		return nil
	}
	why := r.Powers
	if r.Owner {
		why = append([]string{"is a superuser or a member of the tables' owner"}, why...)
	}
	return fmt.Errorf("%w: %s %s", errUnfenced, r.User, strings.Join(why, ", "))
}

// checkServiceRole says at WARN, once the database answers, that the
// service connects as the tables' owner (or a superuser): one role for the
// migrations and the service, the fences of the books are not a lock
// against it. A role that owns nothing of the books (two roles) but holds
// what else takes the fences down (the schema's or the database's owner,
// CREATEROLE, CREATE in the schema: db.Roles.Powers) is errUnfenced: the
// service must not run so. It asks again every few seconds while the
// database can't be reached or is not migrated yet, until ctx ends.
func (a *App) checkServiceRole(ctx context.Context) error {
	for {
		askCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
		roles, err := a.Store.ServiceRole(askCtx)
		cancel()
		switch {
		case err == nil && roles.Owner:
			a.Log.Warn(oneRole, "db_role", roles.User)
			return nil
		case err == nil && roles.Migrated && !roles.Fenced():
			return unfenced(roles)
		case err == nil && roles.Migrated:
			a.Log.Info("the service's database role owns nothing of the books", "db_role", roles.User)
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(5 * time.Second):
		}
	}
}

// MigrationStatus reports the embedded migrations against the database's
// (as the migrator, when MIGRATE_DATABASE_URL is set).
func (a *App) MigrationStatus(ctx context.Context) (db.MigrationReport, error) {
	pool, done, err := a.migratorPool(ctx)
	if err != nil {
		return db.MigrationReport{}, err
	}
	defer done()
	return db.MigrationStatus(ctx, pool)
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

// sagaEnv is what every saga's activities, durable start and Schedule are
// built from.
func (a *App) sagaEnv() saga.Env {
	return saga.Env{Store: a.Store, PSP: a.psp, Cfg: a.Cfg, Queues: a.Cfg.TaskQueues(), Log: a.Log,
		Metrics: a.workerMetrics, Temporal: a.Temporal, Lookup: a.lookup, Process: a.process,
		Schedules: workflows.ScheduleSync{DataConverter: a.dataConverter, Log: a.Log}}
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
