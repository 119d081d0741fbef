package config

import (
	"cmp"
	"errors"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/contrib/envconfig"

	"github.com/pixbank/pix/internal/auth"
	"github.com/pixbank/pix/internal/codec"
	"github.com/pixbank/pix/internal/payload"
	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/internal/psp"
	"github.com/pixbank/pix/internal/runconf"
	"github.com/pixbank/pix/internal/tracing"
	"github.com/pixbank/pix/internal/webhooksig"
)

// Config is the whole configuration. FromLookup names the variable of each field;
// docs/configuration.md lists them with their defaults.
type Config struct {
	DatabaseURL      string
	DatabaseMaxConns int32
	// MigrateDatabaseURL is where pixd migrate (and dev) applies the
	// migrations: the migrator's role, which owns the schema. "": the
	// service's DatabaseURL, one role for both (logged at WARN).
	MigrateDatabaseURL string
	// DatabaseServiceRole is the role the migrations grant the service's
	// privileges to; "": the user DatabaseURL names.
	DatabaseServiceRole string

	TemporalAddress   string
	TemporalNamespace string
	// TemporalConnection is how the client reaches the server beyond its
	// address and namespace: TLS (mutual TLS with a client certificate), an
	// API key (Temporal Cloud), gRPC headers. It is read with Temporal's own
	// client configuration (go.temporal.io/sdk/contrib/envconfig: the
	// TEMPORAL_* variables every SDK and the temporal CLI read, and a
	// profile of TEMPORAL_CONFIG_FILE); its Address and Namespace are left
	// empty, TemporalAddress and TemporalNamespace hold them. The zero value
	// is a plain connection, as to a development server.
	// TemporalClientOptions puts them together.
	TemporalConnection envconfig.ClientConfigProfile
	// TemporalTaskQueue (TEMPORAL_TASK_QUEUE) is the base of the workflow
	// families' task queues: the credits' queue itself, the others derived
	// from it (TaskQueues).
	TemporalTaskQueue string
	TemporalUIURL     string

	// Temporal payload encryption.
	// TemporalCodecKeys encrypt the workflows' payloads, memos and failure
	// messages (TEMPORAL_CODEC_KEYS or TEMPORAL_CODEC_KEYS_FILE); nil
	// leaves them in plain text, development only. CodecCORSOrigins are the
	// browser origins (the Temporal UI's) that may call the codec server.
	TemporalCodecKeys *codec.KeyRing
	// TemporalCodecWriteFormat (TEMPORAL_CODEC_WRITE_FORMAT) is the format
	// the payloads are written in: v2 (a key derived per payload), or v1
	// while workers of a release before v2 may read them (PayloadCodec).
	TemporalCodecWriteFormat codec.Format
	CodecCORSOrigins         []string
	// CodecAuthRequired: the codec server decodes for operators only (admin
	// authentication). false serves it to anyone who reaches it: for the
	// dev server's UI of make run, which has no login to send.
	CodecAuthRequired bool

	HTTPAddr         string
	HTTPReadTimeout  time.Duration
	HTTPWriteTimeout time.Duration
	HTTPIdleTimeout  time.Duration
	// HTTPMaxConnections and HTTPMaxInFlight bound the API's memory
	// whatever its callers open: the connections of the API and webhook
	// listeners together, and the requests their handlers hold (the
	// operations routes apart). Past either, the answer is 503 with
	// Retry-After at once; 0: no cap.
	HTTPMaxConnections int
	HTTPMaxInFlight    int
	RequestTimeout     time.Duration
	// WebhookGroup* shape the group commit of the webhooks' inserts
	// (docs/architecture.md, "Group commit"): Writers transactions at once,
	// each of at most MaxRows deliveries, a writer that found company
	// waiting Window for more (0: none); beyond QueueMaxRows deliveries
	// waiting, a webhook is answered 503 with Retry-After at once.
	WebhookGroupWriters   int
	WebhookGroupMaxRows   int
	WebhookGroupWindow    time.Duration
	WebhookQueueMaxRows   int
	ShutdownTimeout       time.Duration
	ShutdownReadyzDelay   time.Duration
	WorkerStopTimeout     time.Duration
	WorkerMaxActivities   int
	WorkerMetricsAddr     string
	LogLevel              string
	DispatcherEnabled     bool
	DispatchPollInterval  time.Duration
	DispatchBatchSize     int
	DispatchConcurrency   int
	DispatchRecheckAfter  time.Duration
	DispatchRecheckMax    time.Duration
	DispatchRetryMaxDelay time.Duration

	// WorkerWorkflowTaskPollers is each family's worker's workflow task
	// polls (worker.Options.WorkflowTaskPollers): two for each of its task
	// queue's partitions, half of them on the worker's sticky queue.
	WorkerWorkflowTaskPollers int

	// PSP-facing authenticity (see docs/webhooks.md, "Webhook security").
	WebhookSecrets            []webhooksig.Secret
	WebhookSignaturesRequired bool
	WebhookSignatureTolerance time.Duration
	TLSCertFile               string
	TLSKeyFile                string
	TLSClientCAFile           string
	// WebhookMTLSPSPs names the PSPs whose client certificate (its CN or a
	// DNS SAN) authenticates their webhooks without a signature, as the
	// API Pix sends them (WEBHOOK_MTLS_PSPS).
	WebhookMTLSPSPs webhooksig.CertPSPs
	// TLSWebhooksOnly serves TLS on the webhook listener alone
	// (TLS_LISTENERS=webhooks): the main listener stays plain HTTP, for a
	// customer API whose TLS an ingress terminates (and make run's).
	TLSWebhooksOnly bool
	AdminToken      string

	// Who may call the customer and admin routes (see docs/security.md):
	// bearer JWTs of AuthIssuer for AuthAudience, keys from a JWKS file or
	// URL. AuthRequired=false serves the customer routes to anyone
	// (development only).
	AuthRequired  bool
	AuthIssuer    string
	AuthAudience  string
	AuthJWKSFile  string
	AuthJWKSURL   string
	AuthDevKeyDir string
	// Listeners beyond HTTPAddr: the PSP webhooks, and /metrics, /healthz,
	// /readyz; "" serves them on HTTPAddr.
	WebhookHTTPAddr string
	OpsHTTPAddr     string
	// TrustedProxies may set X-Forwarded-For; none by default.
	TrustedProxies []string

	// Outgoing transfers.
	PSPURL     string
	PSPTimeout time.Duration
	// PSPName is the name of the PSP at PSPURL in WEBHOOK_SECRETS or
	// WEBHOOK_MTLS_PSPS (PSP_NAME): the PSP that delivered a PIX the
	// catch-up found in its record, whose MED notices may hold it; "":
	// not known, such a PIX's notices are not taken (docs/med.md).
	PSPName string
	// PSPNames are the PSPs' names as WEBHOOK_SECRETS and WEBHOOK_MTLS_PSPS
	// name them (PSP_NAMES), for a process that has neither: the worker,
	// which records PSP_NAME on the catch-up's credits, checks it against
	// them; the API, which has them, checks they are the same.
	PSPNames []string
	// The PSP client's authentication (PSP puts the client's settings
	// together): OAuth 2.0 client credentials at PSPOAuthTokenURL ("":
	// none), the secret inline or in a file read again at each token
	// request; our client certificate and the PSP's CA for mutual TLS.
	PSPOAuthTokenURL       string
	PSPClientID            string
	PSPClientSecret        string
	PSPClientSecretFile    string
	PSPOAuthScopes         []string
	PSPTLSCertFile         string
	PSPTLSKeyFile          string
	PSPCAFile              string
	BankISPB               string
	IdempotencyLockTimeout time.Duration
	IdempotencyKeyTTL      time.Duration
	PSPRetryInitial        time.Duration
	PSPRetryMax            time.Duration

	// The outbox and its broker.
	// NATSURL names the broker (NATS with JetStream) the outbox relay
	// publishes to: the service is only ever its client (CheckWorker).
	NATSURL            string
	OutboxRelayEnabled bool
	OutboxBatchSize    int
	OutboxPollInterval time.Duration
	// OutboxGatherWindow: outbox.Options.GatherWindow.
	OutboxGatherWindow time.Duration
	OutboxRetention    time.Duration
	// The event stream's limits (NATS_STREAM_MAX_AGE, at least
	// OutboxRetention, by default twice it; NATS_STREAM_MAX_BYTES): see
	// broker.StreamLimits and docs/events.md.
	NATSStreamMaxAge   time.Duration
	NATSStreamMaxBytes int64

	// CreditListingInInput is CREDIT_LISTING_IN_INPUT: the dispatcher names
	// the credit's listing version in its input (no version marker: the
	// cheaper credit). Off, the input names none and the run asks
	// workflow.GetVersion, which workers of the releases before it read
	// too: the setting of an upgrade from them, or of a rollback to them,
	// which predate Worker Versioning (every versioned build reads the
	// field: between them it stays on; docs/operations.md, "Upgrading the
	// workers").
	CreditListingInInput bool

	// DurationWriteFormat is TEMPORAL_DURATION_WRITE_FORMAT: how the
	// durations in the workflows' payloads are written (payload.Duration),
	// nanoseconds (the default: what the releases before this one read) or
	// text ("1s", once none of them may read what this one writes); both
	// are read. Process-wide: pixd applies it at start
	// (payload.WriteDurations).
	DurationWriteFormat payload.DurationFormat

	// WorkerVersioning (TEMPORAL_WORKER_VERSIONING) makes the workers a
	// version of a Temporal Worker Deployment: the deployment named by
	// TEMPORAL_TASK_QUEUE, the build id the binary's version
	// (internal/buildinfo); WorkerPromote (TEMPORAL_WORKER_PROMOTE) says
	// when a starting worker makes its build the current version
	// (worker.Promote). docs/operations.md, "Upgrading the workers".
	WorkerVersioning bool
	WorkerPromote    string

	InboxAttemptsMax      int32
	InboxRetryInitial     time.Duration
	InboxRetryBackoff     float64
	InboxRetryMaxInterval time.Duration
	InboxActivityTimeout  time.Duration

	// Tracing is what the standard OTEL_* variables say (off unless they
	// name an exporter or an OTLP endpoint; see docs/tracing.md).
	Tracing tracing.Settings
}

// Default returns the configuration with every default.
func Default() Config {
	r := runconf.DefaultRetrySettings()
	t := runconf.DefaultPSPCalls()
	return Config{
		TemporalCodecWriteFormat: codec.FormatV2,
		DatabaseURL:              "postgres://postgres@127.0.0.1:5432/pix?sslmode=disable",
		DatabaseMaxConns:         20,

		TemporalAddress:   "127.0.0.1:7233",
		TemporalNamespace: "default",
		TemporalTaskQueue: runconf.CreditTaskQueue,
		TemporalUIURL:     "http://127.0.0.1:8233",

		HTTPAddr:              "127.0.0.1:8080",
		HTTPReadTimeout:       5 * time.Second,
		HTTPWriteTimeout:      10 * time.Second,
		HTTPIdleTimeout:       120 * time.Second,
		HTTPMaxConnections:    512,
		HTTPMaxInFlight:       256,
		RequestTimeout:        5 * time.Second,
		WebhookGroupWriters:   4,
		WebhookGroupMaxRows:   64,
		WebhookGroupWindow:    0,
		WebhookQueueMaxRows:   4096,
		ShutdownTimeout:       20 * time.Second,
		ShutdownReadyzDelay:   5 * time.Second,
		WorkerStopTimeout:     15 * time.Second,
		WorkerMaxActivities:   0,
		LogLevel:              "info",
		DispatcherEnabled:     true,
		WorkerVersioning:      true,
		WorkerPromote:         "first",
		CreditListingInInput:  true,
		DurationWriteFormat:   payload.DurationsNanoseconds,
		DispatchPollInterval:  500 * time.Millisecond,
		DispatchBatchSize:     200,
		DispatchConcurrency:   16,
		DispatchRecheckAfter:  2 * time.Minute,
		DispatchRecheckMax:    16 * time.Minute,
		DispatchRetryMaxDelay: 10 * time.Second,

		// Two for each partition of a task queue's default 4.
		WorkerWorkflowTaskPollers: 8,

		WebhookSignaturesRequired: true,
		AuthRequired:              true,
		CodecAuthRequired:         true,
		AuthDevKeyDir:             auth.DevKeyDir,
		WebhookSignatureTolerance: webhooksig.DefaultTolerance,

		PSPURL:                 "http://127.0.0.1:8090",
		PSPTimeout:             10 * time.Second,
		BankISPB:               "12345678",
		IdempotencyLockTimeout: 30 * time.Second,
		IdempotencyKeyTTL:      24 * time.Hour,
		PSPRetryInitial:        time.Duration(t.PSPRetryInitial),
		PSPRetryMax:            time.Duration(t.PSPRetryMax),

		OutboxRelayEnabled: true,
		OutboxBatchSize:    500,
		OutboxPollInterval: 500 * time.Millisecond,
		OutboxGatherWindow: 50 * time.Millisecond,
		OutboxRetention:    7 * 24 * time.Hour,
		NATSStreamMaxAge:   2 * 7 * 24 * time.Hour,
		NATSStreamMaxBytes: 1 << 30,

		InboxAttemptsMax:      r.MaxAttempts,
		InboxRetryInitial:     time.Duration(r.InitialInterval),
		InboxRetryBackoff:     r.BackoffCoefficient,
		InboxRetryMaxInterval: time.Duration(r.MaxInterval),
		InboxActivityTimeout:  time.Duration(r.ActivityTimeout),
	}
}

// TaskQueues is each workflow family's task queue, derived from
// TEMPORAL_TASK_QUEUE (runconf.TaskQueuesFor): by default pix-credit,
// pix-transfer and pix-maintenance.
func (c Config) TaskQueues() runconf.TaskQueues {
	return runconf.TaskQueuesFor(c.TemporalTaskQueue)
}

// Retry is the credit retry policy the configuration describes.
func (c Config) Retry() runconf.RetrySettings {
	return runconf.RetrySettings{
		MaxAttempts:        c.InboxAttemptsMax,
		InitialInterval:    payload.Duration(c.InboxRetryInitial),
		BackoffCoefficient: c.InboxRetryBackoff,
		MaxInterval:        payload.Duration(c.InboxRetryMaxInterval),
		ActivityTimeout:    payload.Duration(c.InboxActivityTimeout),
	}
}

// PSPCalls are the pace of the sagas' calls to the PSP the configuration
// describes (PSP_TIMEOUT, PSP_RETRY_*): every saga that calls the PSP
// paces its calls by them (the transfer's, the devolução's).
func (c Config) PSPCalls() runconf.PSPCalls {
	return runconf.PSPCalls{
		// An attempt may take the PSP client's whole timeout, and then some.
		PSPCallTimeout:  payload.Duration(c.PSPTimeout + 5*time.Second),
		PSPRetryInitial: payload.Duration(c.PSPRetryInitial),
		PSPRetryMax:     payload.Duration(c.PSPRetryMax),
	}
}

// Load reads the configuration from the environment over the defaults.
func Load() (Config, error) { return load(os.LookupEnv, os.Environ) }

// FromLookup reads the configuration through lookup (a map in tests). Only
// Load reads TEMPORAL_GRPC_META_* (a lookup can't list the names it holds).
func FromLookup(lookup func(string) (string, bool)) (Config, error) {
	return load(lookup, func() []string { return nil })
}

// load reads the configuration through lookup; environ lists the
// environment, for the variables known by a prefix only. The variables
// are read by concern, then checked together (crossChecks): every mistake
// is told at once.
func load(lookup func(string) (string, bool), environ func() []string) (Config, error) {
	c := Default()
	r := &reader{lookup: lookup}
	r.readStores(&c, environ)
	r.readHTTP(&c)
	r.readWorker(&c)
	r.readAccess(&c)
	r.readPSP(&c)
	r.readEvents(&c)
	r.readRuns(&c)
	if err := errors.Join(append(r.errs, c.crossChecks()...)...); err != nil {
		return Config{}, fmt.Errorf("configuration: %w", err)
	}
	return c, nil
}

// reader reads settings through lookup, keeping what is wrong with each
// (errs) so that one start names every mistake.
type reader struct {
	lookup func(string) (string, bool)
	errs   []error
}

// fail records what is wrong with a setting.
func (r *reader) fail(err error) { r.errs = append(r.errs, err) }

// str reads a string that may not be empty.
func (r *reader) str(name string, dst *string) {
	if v, ok := r.lookup(name); ok {
		if v == "" {
			r.fail(fmt.Errorf("%s: must not be empty", name))
			return
		}
		*dst = v
	}
}

// dur reads a positive duration.
func (r *reader) dur(name string, dst *time.Duration) {
	if v, ok := r.lookup(name); ok {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			r.fail(fmt.Errorf("%s: %q is not a positive duration such as 500ms or 2m", name, v))
			return
		}
		*dst = d
	}
}

// waitDur reads a wait that may be 0 (none), up to limit (0: no limit).
// It reports whether the value was set and taken.
func (r *reader) waitDur(name, example string, limit time.Duration, dst *time.Duration) (taken bool) {
	v, ok := r.lookup(name)
	if !ok {
		return false
	}
	d, err := time.ParseDuration(v)
	switch {
	case err != nil || d < 0:
		r.fail(fmt.Errorf("%s: %q is not a duration of 0 or more, such as %s (0: no wait)", name, v, example))
	case limit > 0 && d > limit:
		r.fail(fmt.Errorf("%s: %q is longer than %s", name, v, limit))
	default:
		*dst = d
		return true
	}
	return false
}

// integer reads a whole number from min to max.
func (r *reader) integer(name string, min, max int64, set func(int64)) {
	if v, ok := r.lookup(name); ok {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < min || n > max {
			r.fail(fmt.Errorf("%s: %q is not a whole number from %d to %d", name, v, min, max))
			return
		}
		set(n)
	}
}

// boolean reads true or false.
func (r *reader) boolean(name string, dst *bool) {
	if v, ok := r.lookup(name); ok {
		b, err := strconv.ParseBool(v)
		if err != nil {
			r.fail(fmt.Errorf("%s: %q is not true or false", name, v))
			return
		}
		*dst = b
	}
}

// secret reads NAME, or the file NAME_FILE names (Docker and Kubernetes
// secrets), its trailing newline trimmed; never both.
func (r *reader) secret(name string) (string, bool) {
	v, inline := r.lookup(name)
	path, fromFile := r.lookup(name + "_FILE")
	switch {
	case inline && fromFile:
		r.fail(fmt.Errorf("%s and %s_FILE: set one, not both", name, name))
		return "", false
	case fromFile:
		b, err := os.ReadFile(path)
		if err != nil {
			r.fail(fmt.Errorf("%s_FILE: %w", name, err))
			return "", false
		}
		v = strings.TrimRight(string(b), "\r\n")
	case !inline:
		return "", false
	}
	if v == "" {
		r.fail(fmt.Errorf("%s: must not be empty", name))
		return "", false
	}
	return v, true
}

// readStores reads where the service keeps its state and runs its
// sagas: PostgreSQL and Temporal (its connection, task queue, UI and the
// payloads' encryption).
func (r *reader) readStores(c *Config, environ func() []string) {
	// The URL holds the database password: a secret, from a file too
	// (docker-compose.yml passes it so).
	if v, ok := r.secret("DATABASE_URL"); ok {
		c.DatabaseURL = v
	}
	r.integer("DATABASE_MAX_CONNS", 1, 1000, func(n int64) { c.DatabaseMaxConns = int32(n) })
	// The migrator's URL carries its password: a secret too.
	if v, ok := r.secret("MIGRATE_DATABASE_URL"); ok {
		c.MigrateDatabaseURL = v
	}
	r.str("DATABASE_SERVICE_ROLE", &c.DatabaseServiceRole)
	if conn, err := temporalConnection(r.lookup, environ); err != nil {
		r.fail(err)
	} else {
		// A profile's address and namespace, under the variables' (which
		// envconfig applied, and str checks below).
		c.TemporalAddress = cmp.Or(conn.Address, c.TemporalAddress)
		c.TemporalNamespace = cmp.Or(conn.Namespace, c.TemporalNamespace)
		conn.Address, conn.Namespace = "", ""
		c.TemporalConnection = conn
	}
	r.str("TEMPORAL_ADDRESS", &c.TemporalAddress)
	r.str("TEMPORAL_NAMESPACE", &c.TemporalNamespace)
	// An API key from a file (Docker and Kubernetes secrets), like the
	// service's own secrets; TEMPORAL_API_KEY itself envconfig read.
	if v, ok := r.secret("TEMPORAL_API_KEY"); ok {
		c.TemporalConnection.APIKey = v
	}
	r.str("TEMPORAL_TASK_QUEUE", &c.TemporalTaskQueue)
	if err := runconf.CheckTaskQueueBase(c.TemporalTaskQueue); err != nil {
		r.fail(fmt.Errorf("TEMPORAL_TASK_QUEUE: %w", err))
	}
	r.str("TEMPORAL_UI_URL", &c.TemporalUIURL)
	// Temporal payload encryption.
	if v, ok := r.secret("TEMPORAL_CODEC_KEYS"); ok {
		keys, err := codec.ParseKeyRing(v)
		if err != nil {
			r.fail(fmt.Errorf("TEMPORAL_CODEC_KEYS: %w", err))
		}
		c.TemporalCodecKeys = keys
	}
	if v, ok := r.lookup("TEMPORAL_CODEC_WRITE_FORMAT"); ok {
		f, err := codec.ParseFormat(v)
		if err != nil {
			r.fail(fmt.Errorf("TEMPORAL_CODEC_WRITE_FORMAT: %w", err))
		}
		c.TemporalCodecWriteFormat = f
	}
	r.boolean("TEMPORAL_CODEC_AUTH_REQUIRED", &c.CodecAuthRequired)
	if v, ok := r.lookup("TEMPORAL_CODEC_CORS_ORIGINS"); ok {
		c.CodecCORSOrigins = list(v)
		for _, origin := range c.CodecCORSOrigins {
			if !isOrigin(origin) {
				r.fail(fmt.Errorf("TEMPORAL_CODEC_CORS_ORIGINS: %q is not an origin such as http://127.0.0.1:8233 (scheme and host, no path)", origin))
			}
		}
	}
}

// readHTTP reads the API's listener, its timeouts and caps, the
// webhooks' group commit, and the shutdown's waits.
func (r *reader) readHTTP(c *Config) {
	r.str("HTTP_ADDR", &c.HTTPAddr)
	r.dur("HTTP_READ_TIMEOUT", &c.HTTPReadTimeout)
	r.dur("HTTP_WRITE_TIMEOUT", &c.HTTPWriteTimeout)
	r.dur("HTTP_IDLE_TIMEOUT", &c.HTTPIdleTimeout)
	r.integer("HTTP_MAX_CONNECTIONS", 0, 1_000_000, func(n int64) { c.HTTPMaxConnections = int(n) })
	r.integer("HTTP_MAX_IN_FLIGHT", 0, 1_000_000, func(n int64) { c.HTTPMaxInFlight = int(n) })
	r.dur("HTTP_REQUEST_TIMEOUT", &c.RequestTimeout)
	r.integer("WEBHOOK_GROUP_WRITERS", 1, 256, func(n int64) { c.WebhookGroupWriters = int(n) })
	r.integer("WEBHOOK_GROUP_MAX_ROWS", 1, 10_000, func(n int64) { c.WebhookGroupMaxRows = int(n) })
	r.waitDur("WEBHOOK_GROUP_WINDOW", "1ms", time.Second, &c.WebhookGroupWindow)
	r.integer("WEBHOOK_QUEUE_MAX_ROWS", 1, 1_000_000, func(n int64) { c.WebhookQueueMaxRows = int(n) })
	r.dur("SHUTDOWN_TIMEOUT", &c.ShutdownTimeout)
	r.waitDur("SHUTDOWN_READYZ_DELAY", "5s", 0, &c.ShutdownReadyzDelay)
}

// readWorker reads the worker's settings, the log level and the
// dispatchers'.
func (r *reader) readWorker(c *Config) {
	r.dur("WORKER_STOP_TIMEOUT", &c.WorkerStopTimeout)
	if v, ok := r.lookup("WORKER_METRICS_ADDR"); ok {
		c.WorkerMetricsAddr = v // "" turns it off
	}
	r.integer("WORKER_MAX_CONCURRENT_ACTIVITIES", 0, 10000, func(n int64) { c.WorkerMaxActivities = int(n) })
	// The SDK refuses 1: a sticky and a normal poll at least.
	r.integer("WORKER_WORKFLOW_TASK_POLLERS", 2, 1000, func(n int64) { c.WorkerWorkflowTaskPollers = int(n) })
	r.boolean("TEMPORAL_WORKER_VERSIONING", &c.WorkerVersioning)
	r.str("TEMPORAL_WORKER_PROMOTE", &c.WorkerPromote)
	r.str("LOG_LEVEL", &c.LogLevel)
	r.boolean("DISPATCHER_ENABLED", &c.DispatcherEnabled)
	r.boolean("CREDIT_LISTING_IN_INPUT", &c.CreditListingInInput)
	if v, ok := r.lookup("TEMPORAL_DURATION_WRITE_FORMAT"); ok {
		f, err := payload.ParseDurationFormat(v)
		if err != nil {
			r.fail(fmt.Errorf("TEMPORAL_DURATION_WRITE_FORMAT: %w", err))
		}
		c.DurationWriteFormat = f
	}
	r.dur("DISPATCH_POLL_INTERVAL", &c.DispatchPollInterval)
	r.integer("DISPATCH_BATCH_SIZE", 1, 10000, func(n int64) { c.DispatchBatchSize = int(n) })
	r.integer("DISPATCH_CONCURRENCY", 1, 1000, func(n int64) { c.DispatchConcurrency = int(n) })
	r.dur("DISPATCH_RECHECK_AFTER", &c.DispatchRecheckAfter)
	r.dur("DISPATCH_RECHECK_MAX", &c.DispatchRecheckMax)
	if _, set := r.lookup("DISPATCH_RECHECK_MAX"); !set {
		// A DISPATCH_RECHECK_AFTER set above the default maximum (before the
		// maximum existed) keeps working: its rechecks just don't grow.
		c.DispatchRecheckMax = max(c.DispatchRecheckMax, c.DispatchRecheckAfter)
	}
	r.dur("DISPATCH_RETRY_MAX_DELAY", &c.DispatchRetryMaxDelay)
}

// readAccess reads who may call the API: the PSPs' signatures and
// certificates, TLS, the admin token, the token issuer, the listeners of
// their own and the proxies trusted.
func (r *reader) readAccess(c *Config) {
	r.boolean("WEBHOOK_SIGNATURES_REQUIRED", &c.WebhookSignaturesRequired)
	if v, ok := r.secret("WEBHOOK_SECRETS"); ok {
		secrets, err := webhooksig.ParseSecrets(v)
		if err != nil {
			r.fail(fmt.Errorf("WEBHOOK_SECRETS: %w", err))
		}
		c.WebhookSecrets = secrets
	}
	r.dur("WEBHOOK_SIGNATURE_TOLERANCE", &c.WebhookSignatureTolerance)
	r.str("TLS_CERT_FILE", &c.TLSCertFile)
	r.str("TLS_KEY_FILE", &c.TLSKeyFile)
	r.str("TLS_CLIENT_CA_FILE", &c.TLSClientCAFile)
	if v, ok := r.lookup("WEBHOOK_MTLS_PSPS"); ok {
		psps, err := webhooksig.ParseCertPSPs(v)
		if err != nil {
			r.fail(fmt.Errorf("WEBHOOK_MTLS_PSPS: %w", err))
		}
		c.WebhookMTLSPSPs = psps
	}
	switch v, _ := r.lookup("TLS_LISTENERS"); v {
	case "", "all":
	case "webhooks":
		c.TLSWebhooksOnly = true
	default:
		r.fail(fmt.Errorf("TLS_LISTENERS: %q: want all (the default) or webhooks", v))
	}
	if v, ok := r.secret("ADMIN_TOKEN"); ok {
		c.AdminToken = v
	}
	r.boolean("AUTH_REQUIRED", &c.AuthRequired)
	r.str("AUTH_ISSUER", &c.AuthIssuer)
	r.str("AUTH_AUDIENCE", &c.AuthAudience)
	r.str("AUTH_JWKS_FILE", &c.AuthJWKSFile)
	r.str("AUTH_JWKS_URL", &c.AuthJWKSURL)
	r.str("AUTH_DEV_KEY_DIR", &c.AuthDevKeyDir)
	r.str("WEBHOOK_HTTP_ADDR", &c.WebhookHTTPAddr)
	r.str("OPS_HTTP_ADDR", &c.OpsHTTPAddr)
	if v, ok := r.lookup("TRUSTED_PROXIES"); ok {
		c.TrustedProxies = list(v)
	}
}

// readPSP reads how the PSP is called, the bank's ISPB and the
// Idempotency-Key layer's times.
func (r *reader) readPSP(c *Config) {
	r.str("PSP_URL", &c.PSPURL)
	r.str("PSP_NAME", &c.PSPName)
	if c.PSPName != "" {
		if err := webhooksig.CheckPSPName(c.PSPName); err != nil {
			r.fail(fmt.Errorf("PSP_NAME: %w", err))
		}
	}
	if v, ok := r.lookup("PSP_NAMES"); ok {
		c.PSPNames = list(v)
		for _, name := range c.PSPNames {
			if err := webhooksig.CheckPSPName(name); err != nil {
				r.fail(fmt.Errorf("PSP_NAMES: %q: %w", name, err))
			}
		}
	}
	r.dur("PSP_TIMEOUT", &c.PSPTimeout)
	r.str("PSP_OAUTH_TOKEN_URL", &c.PSPOAuthTokenURL)
	r.str("PSP_CLIENT_ID", &c.PSPClientID)
	if v, ok := r.secret("PSP_CLIENT_SECRET"); ok {
		if path, fromFile := r.lookup("PSP_CLIENT_SECRET_FILE"); fromFile {
			// The client reads the file again at each token request, so
			// that a secret fixed there needs no restart; read here too,
			// so that one that can't be read fails the start.
			c.PSPClientSecretFile = path
		} else {
			c.PSPClientSecret = v
		}
	}
	if v, ok := r.lookup("PSP_OAUTH_SCOPES"); ok {
		if c.PSPOAuthScopes = strings.Fields(v); len(c.PSPOAuthScopes) == 0 {
			r.fail(errors.New("PSP_OAUTH_SCOPES: must not be empty (unset: pix.read pix.write webhook.read webhook.write)"))
		}
	}
	r.str("PSP_TLS_CERT_FILE", &c.PSPTLSCertFile)
	r.str("PSP_TLS_KEY_FILE", &c.PSPTLSKeyFile)
	r.str("PSP_CA_FILE", &c.PSPCAFile)
	r.str("BANK_ISPB", &c.BankISPB)
	r.dur("IDEMPOTENCY_LOCK_TIMEOUT", &c.IdempotencyLockTimeout)
	r.dur("IDEMPOTENCY_KEY_TTL", &c.IdempotencyKeyTTL)
}

// readEvents reads the broker and the outbox relay's settings.
func (r *reader) readEvents(c *Config) {
	r.str("NATS_URL", &c.NATSURL)
	r.boolean("OUTBOX_RELAY_ENABLED", &c.OutboxRelayEnabled)
	r.integer("OUTBOX_BATCH_SIZE", 1, 10000, func(n int64) { c.OutboxBatchSize = int(n) })
	r.dur("OUTBOX_POLL_INTERVAL", &c.OutboxPollInterval)
	if r.waitDur("OUTBOX_GATHER_WINDOW", "50ms", time.Second, &c.OutboxGatherWindow) {
		if c.OutboxGatherWindow >= c.OutboxPollInterval {
			r.fail(fmt.Errorf("OUTBOX_GATHER_WINDOW: %s must be shorter than OUTBOX_POLL_INTERVAL (%s)", c.OutboxGatherWindow, c.OutboxPollInterval))
		}
	} else if _, set := r.lookup("OUTBOX_GATHER_WINDOW"); !set {
		// Unset, it stays shorter than a short OUTBOX_POLL_INTERVAL: a
		// deployment that set only that one keeps starting.
		c.OutboxGatherWindow = min(c.OutboxGatherWindow, c.OutboxPollInterval/2)
	}
	r.dur("OUTBOX_RETENTION", &c.OutboxRetention)
	streamMaxAge(r.lookup, c, &r.errs)
	if v, ok := r.lookup("NATS_STREAM_MAX_BYTES"); ok {
		n, err := parseBytes(v)
		if err != nil || n < minStreamMaxBytes {
			r.fail(fmt.Errorf("NATS_STREAM_MAX_BYTES: %q is not a size of at least 1MiB, such as 1073741824, 512MiB or 8GiB", v))
		} else {
			c.NATSStreamMaxBytes = n
		}
	}
}

// readRuns reads the sagas' times (the credits' retries, the PSP calls'
// pace) and the tracing settings. (The reconciliation's, the retention's,
// the PSP catch-up's, the transfer's and the devolução's are their own:
// saga/reconcile, saga/retention, saga/catchup, saga/transfer,
// saga/refund.)
func (r *reader) readRuns(c *Config) {
	r.dur("PSP_RETRY_INITIAL_INTERVAL", &c.PSPRetryInitial)
	r.dur("PSP_RETRY_MAX_INTERVAL", &c.PSPRetryMax)
	r.integer("INBOX_ATTEMPTS_MAX", 1, 1000, func(n int64) { c.InboxAttemptsMax = int32(n) })
	r.dur("INBOX_RETRY_INITIAL_INTERVAL", &c.InboxRetryInitial)
	if v, ok := r.lookup("INBOX_RETRY_BACKOFF_COEFFICIENT"); ok {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			r.fail(fmt.Errorf("INBOX_RETRY_BACKOFF_COEFFICIENT: %q is not a number", v))
		}
		c.InboxRetryBackoff = f
	}
	r.dur("INBOX_RETRY_MAX_INTERVAL", &c.InboxRetryMaxInterval)
	r.dur("INBOX_ACTIVITY_TIMEOUT", &c.InboxActivityTimeout)
	if t, err := tracing.SettingsFrom(r.lookup); err != nil {
		r.fail(err)
	} else {
		c.Tracing = t
	}
}

// crossChecks are what is wrong with settings that hold together (a
// maximum under its minimum, a file without its pair, a key sent in clear).
func (c Config) crossChecks() []error {
	var errs []error
	if err := c.Retry().Validate(); err != nil {
		errs = append(errs, fmt.Errorf("INBOX_* retry settings: %w", err))
	}
	switch c.WorkerPromote {
	case "first", "always", "never":
	default:
		errs = append(errs, fmt.Errorf("TEMPORAL_WORKER_PROMOTE: %q is not first, always or never", c.WorkerPromote))
	}
	switch strings.ToLower(c.LogLevel) {
	case "debug", "info", "warn", "error":
	default:
		errs = append(errs, fmt.Errorf("LOG_LEVEL: %q is not debug, info, warn or error", c.LogLevel))
	}
	if !pix.ValidISPB(c.BankISPB) {
		errs = append(errs, fmt.Errorf("BANK_ISPB: %q is not 8 digits", c.BankISPB))
	}
	if c.DispatchRecheckMax < c.DispatchRecheckAfter {
		errs = append(errs, errors.New("DISPATCH_RECHECK_MAX: must be at least DISPATCH_RECHECK_AFTER (equal: every recheck waits DISPATCH_RECHECK_AFTER)"))
	}
	if c.PSPRetryMax < c.PSPRetryInitial {
		errs = append(errs, errors.New("PSP_RETRY_MAX_INTERVAL: must be at least PSP_RETRY_INITIAL_INTERVAL"))
	}
	if c.WebhookQueueMaxRows < c.WebhookGroupMaxRows {
		errs = append(errs, errors.New("WEBHOOK_QUEUE_MAX_ROWS: must be at least WEBHOOK_GROUP_MAX_ROWS (the queue holds a group)"))
	}
	if int32(c.WebhookGroupWriters) >= c.DatabaseMaxConns {
		errs = append(errs, errors.New("WEBHOOK_GROUP_WRITERS: must be less than DATABASE_MAX_CONNS (each writer holds a connection; the other routes need some)"))
	}
	if c.IdempotencyKeyTTL <= c.IdempotencyLockTimeout {
		errs = append(errs, errors.New("IDEMPOTENCY_KEY_TTL: must be longer than IDEMPOTENCY_LOCK_TIMEOUT"))
	}
	if c.AdminToken != "" && len(c.AdminToken) < minAdminTokenLength {
		errs = append(errs, fmt.Errorf("ADMIN_TOKEN: must be at least %d characters (for example: openssl rand -hex 32)", minAdminTokenLength))
	}
	if (c.TLSCertFile == "") != (c.TLSKeyFile == "") {
		errs = append(errs, errors.New("TLS_CERT_FILE and TLS_KEY_FILE: set both or neither"))
	}
	if c.WebhookMTLSPSPs.Listed() && c.TLSClientCAFile == "" {
		errs = append(errs, errors.New("WEBHOOK_MTLS_PSPS: a client certificate is verified against TLS_CLIENT_CA_FILE: set it (and TLS_CERT_FILE, TLS_KEY_FILE)"))
	}
	if c.TLSClientCAFile != "" && c.TLSCertFile == "" {
		errs = append(errs, errors.New("TLS_CLIENT_CA_FILE: mutual TLS needs TLS_CERT_FILE and TLS_KEY_FILE too"))
	}
	if c.TLSWebhooksOnly && (c.TLSCertFile == "" || c.WebhookHTTPAddr == "") {
		errs = append(errs, errors.New("TLS_LISTENERS=webhooks: needs TLS_CERT_FILE and WEBHOOK_HTTP_ADDR (the webhooks' own listener)"))
	}
	if c.AuthJWKSFile != "" && c.AuthJWKSURL != "" {
		errs = append(errs, errors.New("AUTH_JWKS_FILE and AUTH_JWKS_URL: set one, not both"))
	}
	if c.AuthJWKSURL != "" {
		if err := auth.CheckJWKSURL(c.AuthJWKSURL); err != nil {
			errs = append(errs, fmt.Errorf("AUTH_JWKS_URL: %w", err))
		}
	}
	if tls := c.TemporalConnection.TLS; c.TemporalConnection.APIKey != "" && tls != nil && tls.Disabled {
		errs = append(errs, errors.New("TEMPORAL_API_KEY with TEMPORAL_TLS=false: the key would cross the network in clear"))
	}
	// Certificates that can't be read fail the start, not the first call.
	if _, err := c.TemporalClientOptions(); err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, c.checkPSP()...)
	return errs
}

// temporalConnection reads the Temporal client's settings as every
// Temporal SDK does (go.temporal.io/sdk/contrib/envconfig): TEMPORAL_ADDRESS,
// TEMPORAL_NAMESPACE, TEMPORAL_API_KEY, TEMPORAL_TLS, TEMPORAL_TLS_*,
// TEMPORAL_CLIENT_AUTHORITY, TEMPORAL_GRPC_META_*, over the profile
// TEMPORAL_PROFILE (default "default") of the TOML file TEMPORAL_CONFIG_FILE.
// Unlike the temporal CLI, a server reads no file unless one of those two
// variables asks: its settings stay explicit, whatever the home directory
// of the account it runs under holds.
func temporalConnection(lookup func(string) (string, bool), environ func() []string) (envconfig.ClientConfigProfile, error) {
	// envconfig ignores a boolean it can't read; here it is an error, like
	// every other setting's.
	for _, name := range []string{"TEMPORAL_TLS", "TEMPORAL_TLS_DISABLE_HOST_VERIFICATION"} {
		if v, ok := lookup(name); ok {
			switch strings.ToLower(v) {
			case "1", "0", "true", "false":
			default:
				return envconfig.ClientConfigProfile{}, fmt.Errorf("%s: %q is not true or false", name, v)
			}
		}
	}
	file, _ := lookup("TEMPORAL_CONFIG_FILE")
	profile, _ := lookup("TEMPORAL_PROFILE")
	conn, err := envconfig.LoadClientConfigProfile(envconfig.LoadClientConfigProfileOptions{
		ConfigFilePath:    file,
		ConfigFileProfile: profile,
		ConfigFileStrict:  true,
		DisableFile:       file == "" && profile == "",
		EnvLookup:         envLookup{lookup, environ},
	})
	if err != nil {
		return envconfig.ClientConfigProfile{}, fmt.Errorf("TEMPORAL_CONFIG_FILE/TEMPORAL_PROFILE/TEMPORAL_*: %w", err)
	}
	// The payloads' codec is this process's own (TEMPORAL_CODEC_KEYS); a
	// remote one (TEMPORAL_CODEC_ENDPOINT, for the UI and the CLI) is never
	// the client's.
	conn.Codec = nil
	return conn, nil
}

// envLookup is envconfig's view of the environment.
type envLookup struct {
	lookup  func(string) (string, bool)
	environ func() []string
}

func (e envLookup) LookupEnv(name string) (string, bool) { return e.lookup(name) }
func (e envLookup) Environ() []string                    { return e.environ() }

// TemporalClientOptions are the Temporal client's connection options:
// TemporalAddress, TemporalNamespace and TemporalConnection (TLS, API key,
// headers). The caller adds the logger, metrics, codec and interceptors.
func (c Config) TemporalClientOptions() (client.Options, error) {
	conn := c.TemporalConnection
	conn.Address, conn.Namespace = c.TemporalAddress, c.TemporalNamespace
	opts, err := conn.ToClientOptions(envconfig.ToClientOptionsRequest{})
	if err != nil {
		return client.Options{}, fmt.Errorf("temporal client (TEMPORAL_TLS_*): %w", err)
	}
	return opts, nil
}

// list splits a comma-separated value, dropping blanks.
func list(v string) []string {
	var out []string
	for _, item := range strings.Split(v, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

const minAdminTokenLength = 16

// minStreamMaxAge is the shortest the event stream may keep an event: the
// broker's duplicate window (broker.DuplicateWindow, which a test holds it
// to), within which a re-published event is dropped.
const minStreamMaxAge = 10 * time.Minute

// minStreamMaxBytes keeps a mistyped size (512 for 512MiB) from stopping
// the events at once.
const minStreamMaxBytes = 1 << 20

// streamMaxAge reads NATS_STREAM_MAX_AGE, which must be at least
// OUTBOX_RETENTION: a consumer can catch up from the stream for as long as
// the outbox keeps what it published. Unset, it is twice the retention.
func streamMaxAge(lookup func(string) (string, bool), c *Config, errs *[]error) {
	v, ok := lookup("NATS_STREAM_MAX_AGE")
	if !ok {
		c.NATSStreamMaxAge = max(2*c.OutboxRetention, minStreamMaxAge)
		return
	}
	d, err := time.ParseDuration(v)
	switch {
	case err != nil || d <= 0:
		*errs = append(*errs, fmt.Errorf("NATS_STREAM_MAX_AGE: %q is not a positive duration such as 336h", v))
	case d < c.OutboxRetention:
		*errs = append(*errs, fmt.Errorf("NATS_STREAM_MAX_AGE: %s is shorter than OUTBOX_RETENTION (%s): the stream must keep an event at least as long as the outbox keeps it (unset, it is twice OUTBOX_RETENTION)", d, c.OutboxRetention))
	case d < minStreamMaxAge:
		*errs = append(*errs, fmt.Errorf("NATS_STREAM_MAX_AGE: %s is shorter than the broker's duplicate window (%s)", d, minStreamMaxAge))
	default:
		c.NATSStreamMaxAge = d
	}
}

// parseBytes reads a size in bytes: a whole number, or one with a binary
// unit (KiB, MiB, GiB, TiB).
func parseBytes(v string) (int64, error) {
	unit := int64(1)
	for i, suffix := range []string{"KiB", "MiB", "GiB", "TiB"} {
		if n, ok := strings.CutSuffix(v, suffix); ok {
			v, unit = n, int64(1)<<(10*(i+1))
			break
		}
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 || n > (1<<62)/unit {
		return 0, fmt.Errorf("size %q: not a whole number of bytes", v)
	}
	return n * unit, nil
}

// isOrigin reports whether v is a browser origin, as a browser sends it in
// its Origin header: a CORS origin with a path or a trailing slash never
// matches one.
func isOrigin(v string) bool {
	u, err := url.Parse(v)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" &&
		u.Path == "" && u.RawQuery == "" && u.Fragment == "" && u.User == nil
}

// PSP is the PSP client's configuration (psp.New builds the client from
// it), the same for pixd and pixctl.
func (c Config) PSP() psp.Config {
	return psp.Config{
		BaseURL: c.PSPURL, Timeout: c.PSPTimeout,
		TokenURL: c.PSPOAuthTokenURL, ClientID: c.PSPClientID,
		ClientSecret: c.PSPClientSecret, ClientSecretFile: c.PSPClientSecretFile, Scopes: c.PSPOAuthScopes,
		CertFile: c.PSPTLSCertFile, KeyFile: c.PSPTLSKeyFile, CAFile: c.PSPCAFile,
	}
}

// checkPSP reports what is wrong with the PSP_* settings: combinations by
// their variables' names, then what building the client finds (a URL, a
// certificate that can't be read), so that it fails the start, not the
// first call.
func (c Config) checkPSP() []error {
	oauthSet := c.PSPClientID != "" || c.PSPClientSecret != "" || c.PSPClientSecretFile != "" || c.PSPOAuthScopes != nil
	switch {
	case (c.PSPTLSCertFile == "") != (c.PSPTLSKeyFile == ""):
		return []error{errors.New("PSP_TLS_CERT_FILE and PSP_TLS_KEY_FILE: set both or neither")}
	case c.PSPOAuthTokenURL != "" && (c.PSPClientID == "" || (c.PSPClientSecret == "" && c.PSPClientSecretFile == "")):
		return []error{errors.New("PSP_OAUTH_TOKEN_URL: needs PSP_CLIENT_ID and PSP_CLIENT_SECRET (or PSP_CLIENT_SECRET_FILE)")}
	case c.PSPOAuthTokenURL == "" && oauthSet:
		return []error{errors.New("PSP_CLIENT_ID, PSP_CLIENT_SECRET(_FILE), PSP_OAUTH_SCOPES: never sent without PSP_OAUTH_TOKEN_URL; set it too")}
	}
	if _, err := psp.New(c.PSP()); err != nil {
		return []error{fmt.Errorf("PSP client (PSP_URL, PSP_OAUTH_TOKEN_URL, PSP_CLIENT_*, PSP_TLS_CERT_FILE, PSP_TLS_KEY_FILE, PSP_CA_FILE): %w", err)}
	}
	return nil
}

// WebhookPSPs are the PSPs whose webhooks are authenticated here: the
// names of WEBHOOK_SECRETS, then those of WEBHOOK_MTLS_PSPS not among them,
// each once, in the order listed.
func (c Config) WebhookPSPs() []string {
	var out []string
	for _, s := range c.WebhookSecrets {
		if !slices.Contains(out, s.PSP) {
			out = append(out, s.PSP)
		}
	}
	for _, p := range c.WebhookMTLSPSPs.PSPs() {
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// psps are the PSPs the bank takes webhooks from as this process knows
// them: those it authenticates (WebhookPSPs), or, in a process that
// authenticates none (the worker), PSP_NAMES.
func (c Config) psps() []string {
	if psps := c.WebhookPSPs(); len(psps) > 0 {
		return psps
	}
	return c.PSPNames
}

// SolePSP is the one PSP whose webhooks are taken, when exactly one is
// (WebhookPSPs, or PSP_NAMES where there are none); "": several, or none.
func (c Config) SolePSP() string {
	if psps := c.psps(); len(psps) == 1 {
		return psps[0]
	}
	return ""
}

// checkPSPName refuses a PSP_NAME the API and the worker would record or
// read wrongly. The catch-up (at PSP_URL) records PSP_NAME on every PIX it
// found first as the PSP that delivered it, and MED's fence takes a notice
// about a PIX only from that PSP (saga/med, CreditPSP): a PSP_NAME that is
// none of the PSPs the webhooks authenticate (WebhookPSPs: a typo) would
// have the true PSP's notices refused 403 for good. Unset, with one PSP,
// is that PSP (SolePSP; docs/med.md). Unset with several PSPs is refused
// too (issue 37): the catch-up's credits would record no PSP, and every
// MED notice about them would be answered 503 med_notice_psp_unknown for
// good, until an operator recorded each one's PSP by hand. Required even
// with PSP_CATCHUP_INTERVAL=0: an operator's window (pixctl psp catchup)
// runs the catch-up with its Schedule off. A process that authenticates
// no PSP (the worker) knows them by PSP_NAMES; one that does checks
// PSP_NAMES, when set, names the same PSPs, so that the list the worker
// checks against is the API's. PSP_NAME set where neither is known is
// refused (attack review B): the worker records it on the catch-up's
// credits, and a typo there went unchecked.
func (c Config) checkPSPName() error {
	psps := c.psps()
	if webhook := c.WebhookPSPs(); len(webhook) > 0 && len(c.PSPNames) > 0 && !samePSPs(webhook, c.PSPNames) {
		return fmt.Errorf("configuration: PSP_NAMES (%s) is not the PSPs of WEBHOOK_SECRETS and WEBHOOK_MTLS_PSPS (%s): "+
			"the worker checks PSP_NAME against PSP_NAMES; list the same PSPs in both",
			strings.Join(c.PSPNames, ", "), strings.Join(webhook, ", "))
	}
	switch {
	case c.PSPName != "" && len(psps) == 0:
		return fmt.Errorf("configuration: PSP_NAME %q is set and no PSP is known here to check it against: "+
			"set PSP_NAMES to the PSPs' names as the API's WEBHOOK_SECRETS and WEBHOOK_MTLS_PSPS name them "+
			"(the worker records PSP_NAME on the PIX the catch-up finds, and a name that is none of them has their MED notices refused for good)",
			c.PSPName)
	case c.PSPName == "" && len(psps) > 1:
		return fmt.Errorf("configuration: PSP_NAME is unset and WEBHOOK_SECRETS and WEBHOOK_MTLS_PSPS name several PSPs (%s): "+
			"set PSP_NAME to the name of the PSP at PSP_URL among them; the PIX the catch-up finds are recorded as delivered by it, "+
			"and without it their MED notices are refused (503 med_notice_psp_unknown) for good",
			strings.Join(psps, ", "))
	case c.PSPName != "" && len(psps) > 0 && !slices.Contains(psps, c.PSPName):
		return fmt.Errorf("configuration: PSP_NAME %q is none of the PSPs of WEBHOOK_SECRETS and WEBHOOK_MTLS_PSPS (%s): "+
			"name the PSP at PSP_URL as they name it; the PIX the catch-up finds are recorded as delivered by it, and its MED notices about them are taken",
			c.PSPName, strings.Join(psps, ", "))
	}
	return nil
}

// samePSPs says whether a and b name the same PSPs, in any order.
func samePSPs(a, b []string) bool {
	for _, name := range a {
		if !slices.Contains(b, name) {
			return false
		}
	}
	for _, name := range b {
		if !slices.Contains(a, name) {
			return false
		}
	}
	return true
}

// CatchUpPSP is the PSP a PIX the catch-up found first is recorded as
// delivered by (db.Store.SetCatchUpPSP): PSP_NAME, or unset, the one PSP
// configured (SolePSP), so that the credit names it even after a second
// PSP is added; "": neither (a process that sees no PSP configured).
func (c Config) CatchUpPSP() string {
	if c.PSPName != "" {
		return c.PSPName
	}
	return c.SolePSP()
}

// CheckWorker reports what the worker process needs beyond what Load
// checks: its outbox relay publishes the events to the broker at NATS_URL,
// and the service runs none of its own (make run starts one).
func (c Config) CheckWorker() error {
	if err := c.checkPSPName(); err != nil {
		return err
	}
	if c.OutboxRelayEnabled && c.NATSURL == "" {
		return errors.New("configuration: the outbox relay (OUTBOX_RELAY_ENABLED, on by default) publishes the events to NATS, " +
			"and NATS_URL is unset: set it to a NATS server with JetStream (nats://host:4222), or OUTBOX_RELAY_ENABLED=false for a worker without the relay")
	}
	return nil
}

// CheckAPI reports what the API process needs beyond what Load checks
// (a worker needs no webhook secret): webhooks authenticated with neither
// a secret nor a listed client certificate configured would all be refused.
func (c Config) CheckAPI() error {
	if err := c.checkPSPName(); err != nil {
		return err
	}
	if c.WebhookSignaturesRequired && len(c.WebhookSecrets) == 0 && !c.WebhookMTLSPSPs.Listed() {
		return errors.New("configuration: WEBHOOK_SIGNATURES_REQUIRED is true but WEBHOOK_SECRETS is empty and WEBHOOK_MTLS_PSPS lists no PSP: " +
			"set the PSPs' secrets (psp=whsec_...) or their client certificates' names (psp=cn), or WEBHOOK_SIGNATURES_REQUIRED=false outside production")
	}
	if c.AuthRequired && (c.AuthIssuer == "" || c.AuthAudience == "" || (c.AuthJWKSFile == "" && c.AuthJWKSURL == "")) {
		return errors.New("configuration: the customer routes need bearer token verification: set AUTH_ISSUER, AUTH_AUDIENCE " +
			"and AUTH_JWKS_FILE or AUTH_JWKS_URL, or AUTH_REQUIRED=false outside production")
	}
	return nil
}

// PayloadCodec is the codec of the Temporal payloads every process that
// writes or reads the workflows uses: TEMPORAL_CODEC_KEYS, writing
// TEMPORAL_CODEC_WRITE_FORMAT; nil without keys (plain payloads).
func (c Config) PayloadCodec() *codec.Codec {
	if c.TemporalCodecKeys == nil {
		return nil
	}
	return codec.New(c.TemporalCodecKeys, codec.Writing(c.TemporalCodecWriteFormat))
}
