package config_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/internal/broker"
	"github.com/pixbank/pix/internal/config"
	"github.com/pixbank/pix/internal/payload"
	"github.com/pixbank/pix/internal/runconf"
	"github.com/pixbank/pix/internal/webhooksig"
	"github.com/pixbank/pix/workflows"
)

func TestDefaults(t *testing.T) {
	c, err := config.FromLookup(config.LookupIn(nil))
	require.NoError(t, err)
	require.Equal(t, config.Default(), c)
	require.EqualValues(t, 5, c.InboxAttemptsMax)
	require.Equal(t, "pix-credit", c.TemporalTaskQueue)
	require.Equal(t, runconf.TaskQueues{Base: "pix-credit", Credits: "pix-credit", Transfers: "pix-transfer", Maintenance: "pix-maintenance"}, c.TaskQueues())
	require.Equal(t, "default", c.TemporalNamespace)
}

func TestOverrides(t *testing.T) {
	c, err := config.FromLookup(config.LookupIn(map[string]string{
		"DATABASE_URL":                    "postgres://x@db:5432/pix",
		"TEMPORAL_ADDRESS":                "temporal:7233",
		"INBOX_ATTEMPTS_MAX":              "7",
		"INBOX_RETRY_INITIAL_INTERVAL":    "250ms",
		"INBOX_RETRY_BACKOFF_COEFFICIENT": "1.5",
		"INBOX_RETRY_MAX_INTERVAL":        "1m",
		"DISPATCHER_ENABLED":              "false",
	}))
	require.NoError(t, err)
	require.Equal(t, "postgres://x@db:5432/pix", c.DatabaseURL)
	require.Equal(t, "temporal:7233", c.TemporalAddress)
	r := c.Retry()
	require.EqualValues(t, 7, r.MaxAttempts)
	require.Equal(t, payload.Duration(250*time.Millisecond), r.InitialInterval)
	require.Equal(t, 1.5, r.BackoffCoefficient)
	require.Equal(t, payload.Duration(time.Minute), r.MaxInterval)
	require.False(t, c.DispatcherEnabled)
}

// A value that is set but wrong is an error naming the variable, never a
// silent fallback to the default.
func TestInvalidValuesAreErrors(t *testing.T) {
	for name, value := range map[string]string{
		"INBOX_ATTEMPTS_MAX":              "0",
		"INBOX_RETRY_INITIAL_INTERVAL":    "soon",
		"INBOX_RETRY_BACKOFF_COEFFICIENT": "fast",
		"DISPATCH_BATCH_SIZE":             "-1",
		"DISPATCHER_ENABLED":              "maybe",
		"DATABASE_URL":                    "",
		"LOG_LEVEL":                       "loud",
		"HTTP_READ_TIMEOUT":               "0s",
		"WEBHOOK_SIGNATURES_REQUIRED":     "yes please",
		"WEBHOOK_SECRETS":                 "psp-a=not base64!",
		"WEBHOOK_SIGNATURE_TOLERANCE":     "-1m",
		"ADMIN_TOKEN":                     "short",
		"TLS_CERT_FILE":                   "/only/the/cert.pem",
		"TLS_CLIENT_CA_FILE":              "/ca.pem",
	} {
		_, err := config.FromLookup(config.LookupIn(map[string]string{name: value}))
		require.ErrorContains(t, err, name, "%s=%q", name, value)
	}
	_, err := config.FromLookup(config.LookupIn(map[string]string{"INBOX_RETRY_MAX_INTERVAL": "100ms"}))
	require.ErrorContains(t, err, "max interval", "a max interval below the initial one")
	_, err = config.FromLookup(config.LookupIn(map[string]string{"DISPATCH_RECHECK_AFTER": "20m", "DISPATCH_RECHECK_MAX": "10m"}))
	require.ErrorContains(t, err, "DISPATCH_RECHECK_MAX", "a longest wait below the first")
	c, err := config.FromLookup(config.LookupIn(map[string]string{"DISPATCH_RECHECK_AFTER": "15s", "DISPATCH_RECHECK_MAX": "15s"}))
	require.NoError(t, err, "equal: every recheck waits DISPATCH_RECHECK_AFTER")
	require.Equal(t, 15*time.Second, c.DispatchRecheckMax)
	c, err = config.FromLookup(config.LookupIn(map[string]string{"DISPATCH_RECHECK_AFTER": "20m"}))
	require.NoError(t, err, "an AFTER above the default maximum, set before the maximum existed, still starts")
	require.Equal(t, 20*time.Minute, c.DispatchRecheckMax)
}

func TestOutboxGatherWindow(t *testing.T) {
	c, err := config.FromLookup(config.LookupIn(nil))
	require.NoError(t, err)
	require.Equal(t, 50*time.Millisecond, c.OutboxGatherWindow)
	c, err = config.FromLookup(config.LookupIn(map[string]string{"OUTBOX_GATHER_WINDOW": "0"}))
	require.NoError(t, err, "0: every notification relayed at once")
	require.Zero(t, c.OutboxGatherWindow)
	c, err = config.FromLookup(config.LookupIn(map[string]string{"OUTBOX_POLL_INTERVAL": "40ms"}))
	require.NoError(t, err, "a short poll interval set before the window existed still starts")
	require.Equal(t, 20*time.Millisecond, c.OutboxGatherWindow)
	for _, bad := range []map[string]string{
		{"OUTBOX_GATHER_WINDOW": "-1ms"},
		{"OUTBOX_GATHER_WINDOW": "soon"},
		{"OUTBOX_GATHER_WINDOW": "2s", "OUTBOX_POLL_INTERVAL": "5s"},
		{"OUTBOX_GATHER_WINDOW": "500ms"},
	} {
		_, err := config.FromLookup(config.LookupIn(bad))
		require.ErrorContains(t, err, "OUTBOX_GATHER_WINDOW", "%v", bad)
	}
	_, err = config.FromLookup(config.LookupIn(map[string]string{"OUTBOX_GATHER_WINDOW": "soon", "OUTBOX_POLL_INTERVAL": "40ms"}))
	require.NotContains(t, err.Error(), "shorter than", "a window that did not parse is not compared")
}

// The waits that may be 0: their accepted values and their limits.
func TestWaitsThatMayBeZero(t *testing.T) {
	for _, ok := range []struct {
		name, value string
		want        time.Duration
	}{
		{"WEBHOOK_GROUP_WINDOW", "0", 0},
		{"WEBHOOK_GROUP_WINDOW", "1s", time.Second},
		{"SHUTDOWN_READYZ_DELAY", "0", 0},
		{"SHUTDOWN_READYZ_DELAY", "10m", 10 * time.Minute},
	} {
		c, err := config.FromLookup(config.LookupIn(map[string]string{ok.name: ok.value}))
		require.NoError(t, err, "%s=%s", ok.name, ok.value)
		got := map[string]time.Duration{"WEBHOOK_GROUP_WINDOW": c.WebhookGroupWindow, "SHUTDOWN_READYZ_DELAY": c.ShutdownReadyzDelay}[ok.name]
		require.Equal(t, ok.want, got, "%s=%s", ok.name, ok.value)
	}
	for _, bad := range [][2]string{
		{"WEBHOOK_GROUP_WINDOW", "1001ms"},
		{"WEBHOOK_GROUP_WINDOW", "-1ms"},
		{"SHUTDOWN_READYZ_DELAY", "-1s"},
		{"SHUTDOWN_READYZ_DELAY", "later"},
	} {
		_, err := config.FromLookup(config.LookupIn(map[string]string{bad[0]: bad[1]}))
		require.ErrorContains(t, err, bad[0], "%s=%s", bad[0], bad[1])
	}
}

func TestWebhookSecurity(t *testing.T) {
	c, err := config.FromLookup(config.LookupIn(map[string]string{"AUTH_REQUIRED": "false"}))
	require.NoError(t, err)
	require.True(t, c.WebhookSignaturesRequired, "signatures are required unless turned off")
	require.ErrorContains(t, c.CheckAPI(), "WEBHOOK_SECRETS is empty", "the API refuses to start unable to verify anything")

	c, err = config.FromLookup(config.LookupIn(map[string]string{
		"WEBHOOK_SECRETS":    "psp-a=whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw;psp-b=whsec_AjbDemPJbUu0YFbwdkYEmVXCaacwpptbG8pBQFko594=",
		"ADMIN_TOKEN":        "0123456789abcdef",
		"TLS_CERT_FILE":      "/etc/pix/tls.pem",
		"TLS_KEY_FILE":       "/etc/pix/tls-key.pem",
		"TLS_CLIENT_CA_FILE": "/etc/pix/psp-ca.pem",
		"AUTH_REQUIRED":      "false",
		"PSP_NAME":           "psp-b", // several PSPs: the catch-up's is named
	}))
	require.NoError(t, err)
	require.NoError(t, c.CheckAPI())
	require.Len(t, c.WebhookSecrets, 2)
	require.Equal(t, "psp-b", c.WebhookSecrets[1].PSP)

	c, err = config.FromLookup(config.LookupIn(map[string]string{"WEBHOOK_SIGNATURES_REQUIRED": "false", "AUTH_REQUIRED": "false"}))
	require.NoError(t, err)
	require.NoError(t, c.CheckAPI(), "explicitly unsigned (development)")

	_, err = config.FromLookup(config.LookupIn(map[string]string{"WEBHOOK_SECRETS": "psp-a=whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "ADMIN_TOKEN": "short"}))
	require.NotContains(t, err.Error(), "MfKQ9r8", "errors never show key material")
}

func TestCustomerAuthSettings(t *testing.T) {
	dev := map[string]string{"WEBHOOK_SIGNATURES_REQUIRED": "false"}
	c, err := config.FromLookup(config.LookupIn(dev))
	require.NoError(t, err)
	require.True(t, c.AuthRequired, "authentication is required unless turned off")
	require.ErrorContains(t, c.CheckAPI(), "AUTH_ISSUER", "the API refuses to start unable to verify a token")

	dir := t.TempDir()
	jwks := filepath.Join(dir, "jwks.json")
	adminFile := filepath.Join(dir, "admin-token")
	require.NoError(t, os.WriteFile(adminFile, []byte("0123456789abcdef-from-a-file\n"), 0o600))
	c, err = config.FromLookup(config.LookupIn(map[string]string{
		"WEBHOOK_SIGNATURES_REQUIRED": "false",
		"AUTH_ISSUER":                 "https://id.bank.example",
		"AUTH_AUDIENCE":               "pix-api",
		"AUTH_JWKS_FILE":              jwks,
		"ADMIN_TOKEN_FILE":            adminFile,
		"WEBHOOK_HTTP_ADDR":           "0.0.0.0:8443",
		"OPS_HTTP_ADDR":               "127.0.0.1:9090",
		"TRUSTED_PROXIES":             "10.0.0.0/8, 192.168.1.2",
	}))
	require.NoError(t, err)
	require.NoError(t, c.CheckAPI())
	require.Equal(t, "0123456789abcdef-from-a-file", c.AdminToken, "a secret file's trailing newline is not part of it")
	require.Equal(t, []string{"10.0.0.0/8", "192.168.1.2"}, c.TrustedProxies)
	require.Equal(t, "0.0.0.0:8443", c.WebhookHTTPAddr)

	for name, env := range map[string]map[string]string{
		"both inline and file":   {"ADMIN_TOKEN": "0123456789abcdef", "ADMIN_TOKEN_FILE": adminFile},
		"missing secret file":    {"WEBHOOK_SECRETS_FILE": filepath.Join(dir, "nope")},
		"file and url":           {"AUTH_JWKS_FILE": jwks, "AUTH_JWKS_URL": "https://id.bank.example/jwks"},
		"plain http jwks url":    {"AUTH_JWKS_URL": "http://id.bank.example/jwks"},
		"empty auth issuer":      {"AUTH_ISSUER": ""},
		"auth required not bool": {"AUTH_REQUIRED": "maybe"},
	} {
		_, err := config.FromLookup(config.LookupIn(env))
		require.Error(t, err, name)
	}
}

// Temporal payload encryption: TEMPORAL_CODEC_KEYS or its _FILE, the last
// key the newest; without them, payloads are not encrypted.
func TestTemporalCodecSettings(t *testing.T) {
	const k1, k2 = "AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE=", "AgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgI="
	c, err := config.FromLookup(config.LookupIn(nil))
	require.NoError(t, err)
	require.Nil(t, c.TemporalCodecKeys, "not encrypted unless configured")
	require.Empty(t, c.CodecCORSOrigins)

	c, err = config.FromLookup(config.LookupIn(map[string]string{
		"TEMPORAL_CODEC_KEYS":         "2024-01=" + k1 + ",2025-01=" + k2,
		"TEMPORAL_CODEC_CORS_ORIGINS": "http://127.0.0.1:8233, https://temporal.bank.example",
	}))
	require.NoError(t, err)
	require.Equal(t, []string{"2024-01", "2025-01"}, c.TemporalCodecKeys.IDs())
	require.Equal(t, "2025-01", c.TemporalCodecKeys.NewestID())
	require.Equal(t, []string{"http://127.0.0.1:8233", "https://temporal.bank.example"}, c.CodecCORSOrigins)

	// From a file (a Docker or Kubernetes secret), trailing newline and all.
	file := filepath.Join(t.TempDir(), "codec-keys")
	require.NoError(t, os.WriteFile(file, []byte("k1="+k1+"\n"), 0o600))
	c, err = config.FromLookup(config.LookupIn(map[string]string{"TEMPORAL_CODEC_KEYS_FILE": file}))
	require.NoError(t, err)
	require.Equal(t, "k1", c.TemporalCodecKeys.NewestID())

	for name, env := range map[string]map[string]string{
		"both set":        {"TEMPORAL_CODEC_KEYS": "k1=" + k1, "TEMPORAL_CODEC_KEYS_FILE": file},
		"empty":           {"TEMPORAL_CODEC_KEYS": ""},
		"missing file":    {"TEMPORAL_CODEC_KEYS_FILE": filepath.Join(t.TempDir(), "nope")},
		"duplicate id":    {"TEMPORAL_CODEC_KEYS": "k1=" + k1 + ",k1=" + k2},
		"empty id":        {"TEMPORAL_CODEC_KEYS": "=" + k1},
		"short key":       {"TEMPORAL_CODEC_KEYS": "k1=AQEBAQEBAQEBAQEBAQEBAQ=="},
		"bad id":          {"TEMPORAL_CODEC_KEYS": "k 1=" + k1},
		"bare key":        {"TEMPORAL_CODEC_KEYS": k2},
		"origin path":     {"TEMPORAL_CODEC_CORS_ORIGINS": "http://127.0.0.1:8233/"},
		"origin scheme":   {"TEMPORAL_CODEC_CORS_ORIGINS": "127.0.0.1:8233"},
		"origin wildcard": {"TEMPORAL_CODEC_CORS_ORIGINS": "*"},
	} {
		_, err := config.FromLookup(config.LookupIn(env))
		require.Error(t, err, name)
		require.Contains(t, err.Error(), "TEMPORAL_CODEC_", name)
		require.NotContains(t, err.Error(), "AQEBAQEB", "%s: errors never show key material", name)
		require.NotContains(t, err.Error(), "AgICAgIC", "%s: errors never show key material", name)
	}
}

// The event stream's limits: MaxAge at least the outbox's retention (by
// default twice it), never under the broker's duplicate window; MaxBytes a
// size.
func TestEventStreamLimits(t *testing.T) {
	c, err := config.FromLookup(config.LookupIn(nil))
	require.NoError(t, err)
	require.Equal(t, 2*c.OutboxRetention, c.NATSStreamMaxAge)
	require.Equal(t, broker.DefaultStreamLimits, broker.StreamLimits{MaxAge: c.NATSStreamMaxAge, MaxBytes: c.NATSStreamMaxBytes},
		"a reader creates the stream with the configuration's defaults")

	c, err = config.FromLookup(config.LookupIn(map[string]string{"OUTBOX_RETENTION": "720h"}))
	require.NoError(t, err)
	require.Equal(t, 1440*time.Hour, c.NATSStreamMaxAge, "unset: twice the retention")
	c, err = config.FromLookup(config.LookupIn(map[string]string{"OUTBOX_RETENTION": "1m"}))
	require.NoError(t, err)
	require.Equal(t, broker.DuplicateWindow, c.NATSStreamMaxAge, "never under the duplicate window")

	c, err = config.FromLookup(config.LookupIn(map[string]string{"OUTBOX_RETENTION": "72h", "NATS_STREAM_MAX_AGE": "72h", "NATS_STREAM_MAX_BYTES": "512MiB"}))
	require.NoError(t, err)
	require.Equal(t, 72*time.Hour, c.NATSStreamMaxAge, "as long as the retention will do")
	require.EqualValues(t, 512<<20, c.NATSStreamMaxBytes)
	for v, want := range map[string]int64{"1073741824": 1 << 30, "8GiB": 8 << 30, "2048KiB": 2 << 20, "1TiB": 1 << 40} {
		c, err = config.FromLookup(config.LookupIn(map[string]string{"NATS_STREAM_MAX_BYTES": v}))
		require.NoError(t, err, v)
		require.Equal(t, want, c.NATSStreamMaxBytes, v)
	}

	// A stream that would drop events the outbox still keeps is refused at
	// start, saying why.
	_, err = config.FromLookup(config.LookupIn(map[string]string{"NATS_STREAM_MAX_AGE": "24h"}))
	require.ErrorContains(t, err, "NATS_STREAM_MAX_AGE: 24h0m0s is shorter than OUTBOX_RETENTION (168h0m0s)")
	_, err = config.FromLookup(config.LookupIn(map[string]string{"OUTBOX_RETENTION": "1m", "NATS_STREAM_MAX_AGE": (broker.DuplicateWindow - time.Second).String()}))
	require.ErrorContains(t, err, "shorter than the broker's duplicate window")
	_, err = config.FromLookup(config.LookupIn(map[string]string{"OUTBOX_RETENTION": "1m", "NATS_STREAM_MAX_AGE": broker.DuplicateWindow.String()}))
	require.NoError(t, err)
	for _, v := range []string{"", "soon", "-1h", "0s"} {
		_, err = config.FromLookup(config.LookupIn(map[string]string{"NATS_STREAM_MAX_AGE": v}))
		require.ErrorContains(t, err, "NATS_STREAM_MAX_AGE", "%q", v)
	}
	for _, v := range []string{"", "512", "lots", "-1", "1.5GiB", "1GB", "99999999999TiB"} {
		_, err = config.FromLookup(config.LookupIn(map[string]string{"NATS_STREAM_MAX_BYTES": v}))
		require.ErrorContains(t, err, "NATS_STREAM_MAX_BYTES", "%q", v)
	}
}

// The credit's listing version in its input is on by default; off, for a
// rolling upgrade from (or a rollback to) a release whose workers don't
// read it, the dispatcher names none and the run asks workflow.GetVersion.
func TestCreditListingInInput(t *testing.T) {
	c, err := config.FromLookup(config.LookupIn(nil))
	require.NoError(t, err)
	require.Equal(t, workflows.CreditListingVersion, workflows.CreditInputListingVersion(c.CreditListingInInput))
	c, err = config.FromLookup(config.LookupIn(map[string]string{"CREDIT_LISTING_IN_INPUT": "false"}))
	require.NoError(t, err)
	require.Zero(t, workflows.CreditInputListingVersion(c.CreditListingInInput))
	_, err = config.FromLookup(config.LookupIn(map[string]string{"CREDIT_LISTING_IN_INPUT": "sometimes"}))
	require.Error(t, err)
}

// The durations in the workflows' payloads are written as nanoseconds by
// default, what the release before payload.Duration reads; text ("1s")
// when set so, once no such release may read them; anything else stops
// the process.
func TestDurationWriteFormat(t *testing.T) {
	c, err := config.FromLookup(config.LookupIn(nil))
	require.NoError(t, err)
	require.Equal(t, payload.DurationsNanoseconds, c.DurationWriteFormat)
	for _, f := range []payload.DurationFormat{payload.DurationsText, payload.DurationsNanoseconds} {
		c, err = config.FromLookup(config.LookupIn(map[string]string{"TEMPORAL_DURATION_WRITE_FORMAT": string(f)}))
		require.NoError(t, err)
		require.Equal(t, f, c.DurationWriteFormat)
	}
	_, err = config.FromLookup(config.LookupIn(map[string]string{"TEMPORAL_DURATION_WRITE_FORMAT": "seconds"}))
	require.ErrorContains(t, err, "TEMPORAL_DURATION_WRITE_FORMAT")
}

// The workers are versioned by default, and promote their build only when
// none is current; a task queue base from which two bases could derive one
// queue is refused at load (runconf.CheckTaskQueueBase).
func TestWorkerVersioningAndTheTaskQueueBase(t *testing.T) {
	c, err := config.FromLookup(config.LookupIn(nil))
	require.NoError(t, err)
	require.True(t, c.WorkerVersioning)
	require.Equal(t, "first", c.WorkerPromote)
	c, err = config.FromLookup(config.LookupIn(map[string]string{"TEMPORAL_WORKER_VERSIONING": "false", "TEMPORAL_WORKER_PROMOTE": "always",
		"TEMPORAL_TASK_QUEUE": "acme-credit-staging"}))
	require.NoError(t, err)
	require.False(t, c.WorkerVersioning)
	require.Equal(t, "always", c.WorkerPromote)
	_, err = config.FromLookup(config.LookupIn(map[string]string{"TEMPORAL_WORKER_PROMOTE": "sometimes"}))
	require.ErrorContains(t, err, "TEMPORAL_WORKER_PROMOTE")
	for _, base := range []string{"myq", "myq-transfer", "pix-credit-refund", "pix.credit"} {
		_, err = config.FromLookup(config.LookupIn(map[string]string{"TEMPORAL_TASK_QUEUE": base}))
		require.ErrorContains(t, err, "TEMPORAL_TASK_QUEUE", base)
	}
}

// The PSPs whose webhooks are authenticated, each once: WEBHOOK_SECRETS',
// then WEBHOOK_MTLS_PSPS'; the sole one only when there is exactly one.
func TestTheWebhooksPSPsAndTheSoleOne(t *testing.T) {
	for _, tc := range []struct {
		secrets, certs string
		psps           []string
		sole           string
	}{
		{"", "", nil, ""},
		{"psp-a=whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "", []string{"psp-a"}, "psp-a"},
		{"psp-a=whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "psp-a=psp-a.example", []string{"psp-a"}, "psp-a"},
		{"", "psp-b=psp-b.example", []string{"psp-b"}, "psp-b"},
		{"psp-a=whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "psp-b=psp-b.example;psp-a=a.example", []string{"psp-a", "psp-b"}, ""},
	} {
		var c config.Config
		var err error
		c.WebhookSecrets, err = webhooksig.ParseSecrets(tc.secrets)
		require.NoError(t, err)
		c.WebhookMTLSPSPs, err = webhooksig.ParseCertPSPs(tc.certs)
		require.NoError(t, err)
		require.Equal(t, tc.psps, c.WebhookPSPs(), "%q %q", tc.secrets, tc.certs)
		require.Equal(t, tc.sole, c.SolePSP(), "%q %q", tc.secrets, tc.certs)
	}
}

// PSP_NAME names the PSP at PSP_URL, as WEBHOOK_SECRETS or
// WEBHOOK_MTLS_PSPS name it: the catch-up records it on every PIX it found
// first, and MED's fence takes notices about such a PIX from it alone
// (issue 37, attack review B, MED2). A name that is none of them (a typo)
// would have the true PSP's notices refused 403 for good: the API and the
// worker refuse to start.
func TestAPSPNameThatIsNoConfiguredPSPIsRefusedAtTheStart(t *testing.T) {
	env := map[string]string{
		"WEBHOOK_SECRETS": "real-psp=whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
		"PSP_URL":         "https://psp.example/api/v2",
		"AUTH_REQUIRED":   "false",
		"NATS_URL":        "nats://127.0.0.1:4222",
		"PSP_NAME":        "reel-psp",
	}
	c, err := config.FromLookup(config.LookupIn(env))
	require.NoError(t, err)
	require.ErrorContains(t, c.CheckAPI(), `PSP_NAME "reel-psp" is none of the PSPs of WEBHOOK_SECRETS and WEBHOOK_MTLS_PSPS (real-psp)`)
	require.ErrorContains(t, c.CheckWorker(), `PSP_NAME "reel-psp"`)

	env["PSP_NAME"] = "real-psp"
	c, err = config.FromLookup(config.LookupIn(env))
	require.NoError(t, err)
	require.NoError(t, c.CheckAPI())
	require.NoError(t, c.CheckWorker())
}

// Several PSPs configured and PSP_NAME unset: the PIX the catch-up finds
// would be credited with no PSP on record, and every MED notice about them
// answered 503 med_notice_psp_unknown for good (issue 37). The API and the
// worker refuse to start, naming the variable and the PSPs. With one PSP,
// unset is that PSP (CatchUpPSP), recorded on the catch-up's credits.
func TestPSPNameIsRequiredWithSeveralPSPs(t *testing.T) {
	env := map[string]string{
		"WEBHOOK_SECRETS":    "psp-a=whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
		"WEBHOOK_MTLS_PSPS":  "psp-b=psp-b.example",
		"TLS_CERT_FILE":      "/etc/pix/tls.pem",
		"TLS_KEY_FILE":       "/etc/pix/tls-key.pem",
		"TLS_CLIENT_CA_FILE": "/etc/pix/psp-ca.pem",
		"PSP_URL":            "https://psp.example/api/v2",
		"AUTH_REQUIRED":      "false",
		"NATS_URL":           "nats://127.0.0.1:4222",
	}
	c, err := config.FromLookup(config.LookupIn(env))
	require.NoError(t, err)
	require.ErrorContains(t, c.CheckAPI(), "PSP_NAME is unset and WEBHOOK_SECRETS and WEBHOOK_MTLS_PSPS name several PSPs (psp-a, psp-b)")
	require.ErrorContains(t, c.CheckWorker(), "PSP_NAME is unset")
	require.Empty(t, c.CatchUpPSP())

	env["PSP_NAME"] = "psp-b"
	c, err = config.FromLookup(config.LookupIn(env))
	require.NoError(t, err)
	require.NoError(t, c.CheckAPI())
	require.NoError(t, c.CheckWorker())
	require.Equal(t, "psp-b", c.CatchUpPSP())

	// One PSP: PSP_NAME unset is that PSP's.
	delete(env, "PSP_NAME")
	delete(env, "WEBHOOK_MTLS_PSPS")
	c, err = config.FromLookup(config.LookupIn(env))
	require.NoError(t, err)
	require.NoError(t, c.CheckAPI())
	require.NoError(t, c.CheckWorker())
	require.Equal(t, "psp-a", c.CatchUpPSP(), "the sole PSP is the catch-up's")
}
