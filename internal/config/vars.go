package config

import "strings"

// Role is a set of pixd's roles, those that read a variable.
type Role uint8

// pixd's roles (pixd dev is api, worker and migrate in one process).
const (
	RoleAPI Role = 1 << iota
	RoleWorker
	RoleMigrate
	RoleTemporalSetup

	RoleDev = RoleAPI | RoleWorker | RoleMigrate
)

// roleNames are the roles as pixd's commands name them, in help's order.
var roleNames = []struct {
	role Role
	name string
}{{RoleAPI, "api"}, {RoleWorker, "worker"}, {RoleMigrate, "migrate"}, {RoleTemporalSetup, "temporal-setup"}}

// String names the roles of r, space-separated.
func (r Role) String() string {
	var names []string
	for _, n := range roleNames {
		if r&n.role != 0 {
			names = append(names, n.name)
		}
	}
	return strings.Join(names, " ")
}

// Variable is one environment variable pixd reads: its name (a prefix when
// it ends in "_": TEMPORAL_GRPC_META_<NAME>) and the roles that use it.
// Every role reads and checks them all at start, Load the process's own
// and registry.CheckSettings each saga's (a value that does not parse
// stops any role); Roles are those whose work depends on it.
type Variable struct {
	Name  string
	Roles Role
}

// Variables is every variable pixd reads, once: `pixd help` lists them from
// here, and a test holds Load, the help and docs/configuration.md (which
// gives each one's default and meaning) to this list.
var Variables = func() []Variable {
	const (
		api, worker, migrate, setup = RoleAPI, RoleWorker, RoleMigrate, RoleTemporalSetup
		temporal                    = api | worker | setup
	)
	var vs []Variable
	add := func(roles Role, names ...string) {
		for _, n := range names {
			vs = append(vs, Variable{Name: n, Roles: roles})
		}
	}
	add(api|worker|migrate, "DATABASE_URL", "DATABASE_URL_FILE", "DATABASE_MAX_CONNS")
	// The migrator's role and the service's (docs/operations.md, "The
	// database's roles").
	add(migrate, "MIGRATE_DATABASE_URL", "MIGRATE_DATABASE_URL_FILE", "DATABASE_SERVICE_ROLE")
	add(api|worker|migrate|setup, "LOG_LEVEL")
	// The Temporal client: TEMPORAL_ADDRESS and TEMPORAL_NAMESPACE, and
	// Temporal's own client variables (envconfig).
	add(temporal, "TEMPORAL_ADDRESS", "TEMPORAL_NAMESPACE", "TEMPORAL_API_KEY", "TEMPORAL_API_KEY_FILE",
		"TEMPORAL_TLS", "TEMPORAL_TLS_CLIENT_CERT_PATH", "TEMPORAL_TLS_CLIENT_CERT_DATA",
		"TEMPORAL_TLS_CLIENT_KEY_PATH", "TEMPORAL_TLS_CLIENT_KEY_DATA",
		"TEMPORAL_TLS_SERVER_CA_CERT_PATH", "TEMPORAL_TLS_SERVER_CA_CERT_DATA",
		"TEMPORAL_TLS_SERVER_NAME", "TEMPORAL_TLS_DISABLE_HOST_VERIFICATION",
		"TEMPORAL_CLIENT_AUTHORITY", "TEMPORAL_GRPC_META_", "TEMPORAL_CONFIG_FILE", "TEMPORAL_PROFILE")
	add(api|worker, "TEMPORAL_TASK_QUEUE", "TEMPORAL_CODEC_KEYS", "TEMPORAL_CODEC_KEYS_FILE", "TEMPORAL_CODEC_WRITE_FORMAT")
	add(api, "TEMPORAL_UI_URL", "TEMPORAL_CODEC_CORS_ORIGINS", "TEMPORAL_CODEC_AUTH_REQUIRED")
	// The HTTP server and the webhooks' door.
	add(api, "HTTP_ADDR", "HTTP_READ_TIMEOUT", "HTTP_WRITE_TIMEOUT", "HTTP_IDLE_TIMEOUT", "HTTP_REQUEST_TIMEOUT",
		"HTTP_MAX_CONNECTIONS", "HTTP_MAX_IN_FLIGHT",
		"WEBHOOK_GROUP_WRITERS", "WEBHOOK_GROUP_MAX_ROWS", "WEBHOOK_GROUP_WINDOW", "WEBHOOK_QUEUE_MAX_ROWS",
		"SHUTDOWN_TIMEOUT", "SHUTDOWN_READYZ_DELAY",
		"WEBHOOK_SECRETS", "WEBHOOK_SECRETS_FILE", "WEBHOOK_SIGNATURES_REQUIRED", "WEBHOOK_SIGNATURE_TOLERANCE",
		"TLS_CERT_FILE", "TLS_KEY_FILE", "TLS_CLIENT_CA_FILE", "WEBHOOK_MTLS_PSPS", "TLS_LISTENERS",
		"ADMIN_TOKEN", "ADMIN_TOKEN_FILE", "AUTH_REQUIRED", "AUTH_ISSUER", "AUTH_AUDIENCE", "AUTH_JWKS_FILE",
		"AUTH_JWKS_URL", "AUTH_DEV_KEY_DIR", "WEBHOOK_HTTP_ADDR", "OPS_HTTP_ADDR", "TRUSTED_PROXIES",
		"IDEMPOTENCY_LOCK_TIMEOUT", "IDEMPOTENCY_KEY_TTL",
		// Read by the scheduled PIX's routes (saga/scheduled), not by Load.
		"PIX_SCHEDULED_HOUR", "PIX_SCHEDULED_MAX_PENDING")
	// The worker: its own limits, the dispatchers, the sagas, the outbox
	// relay and the Schedules.
	add(worker, "WORKER_STOP_TIMEOUT", "WORKER_MAX_CONCURRENT_ACTIVITIES", "WORKER_WORKFLOW_TASK_POLLERS", "WORKER_METRICS_ADDR",
		"TEMPORAL_WORKER_VERSIONING", "TEMPORAL_WORKER_PROMOTE",
		"INBOX_ATTEMPTS_MAX", "INBOX_RETRY_INITIAL_INTERVAL", "INBOX_RETRY_BACKOFF_COEFFICIENT",
		"INBOX_RETRY_MAX_INTERVAL", "INBOX_ACTIVITY_TIMEOUT",
		"DISPATCHER_ENABLED", "CREDIT_LISTING_IN_INPUT", "TEMPORAL_DURATION_WRITE_FORMAT", "DISPATCH_POLL_INTERVAL", "DISPATCH_BATCH_SIZE",
		"DISPATCH_CONCURRENCY", "DISPATCH_RECHECK_AFTER", "DISPATCH_RECHECK_MAX", "DISPATCH_RETRY_MAX_DELAY",
		"PSP_RETRY_INITIAL_INTERVAL", "PSP_RETRY_MAX_INTERVAL",
		"NATS_URL", "NATS_STREAM_MAX_AGE", "NATS_STREAM_MAX_BYTES",
		"OUTBOX_RELAY_ENABLED", "OUTBOX_BATCH_SIZE", "OUTBOX_POLL_INTERVAL", "OUTBOX_GATHER_WINDOW", "OUTBOX_RETENTION",
		// Read by the sagas in their packages (saga.Descriptor.Settings),
		// not by Load: the reconciliation's (saga/reconcile), the
		// retention's (saga/retention), the PSP
		// catch-up's (saga/catchup), the transfer's (saga/transfer), the
		// devolução's (saga/refund), MED's (saga/med).
		"RECONCILE_INTERVAL",
		"INBOX_RETENTION", "RETENTION_INTERVAL", "RETENTION_ROWS_PER_SECOND", "RETENTION_BATCH_PAUSE",
		"PSP_CATCHUP_INTERVAL", "PSP_CATCHUP_OVERLAP", "PSP_CATCHUP_LOOKBACK", "PSP_CATCHUP_GRACE",
		"TRANSFER_SETTLEMENT_TIMEOUT", "TRANSFER_SETTLEMENT_POLL_MAX",
		"REFUND_POLL_MAX", "REFUND_OUTCOME_TIMEOUT", "REFUND_REFUSAL_QUIET_PERIOD",
		// MED's DICT client and its lister (saga/med).
		"MED_DICT_DISABLED", "MED_DICT_URL", "MED_DICT_POLICIES_URL", "MED_DICT_CERT_FILE", "MED_DICT_KEY_FILE",
		"MED_DICT_CA_FILE", "MED_DICT_SIGNING_CERT_FILE", "MED_DICT_SIGNING_KEY_FILE", "MED_DICT_VERIFY_CERT_FILE",
		"MED_DICT_TIMEOUT", "MED_DICT_LIST_INTERVAL", "MED_DICT_LIST_OVERLAP", "MED_DICT_LIST_LOOKBACK", "MED_DICT_LIST_GRACE")
	// The reconciliation's limits: its Schedule's runs and GET
	// /admin/reconcile's (read by saga/reconcile, not by Load).
	add(api|worker, "RECONCILE_RECOUNT_MOVEMENTS", "RECONCILE_RECOUNT_ACCOUNTS", "RECONCILE_DONE_ROWS")
	// The PSP client: the sagas' calls, and the API's webhook registration.
	add(api|worker, "PSP_URL", "PSP_NAME", "PSP_NAMES", "PSP_TIMEOUT", "PSP_OAUTH_TOKEN_URL", "PSP_CLIENT_ID", "PSP_CLIENT_SECRET",
		"PSP_CLIENT_SECRET_FILE", "PSP_OAUTH_SCOPES", "PSP_TLS_CERT_FILE", "PSP_TLS_KEY_FILE", "PSP_CA_FILE",
		"BANK_ISPB")
	// Tracing: the standard OTEL_* variables (docs/tracing.md).
	add(api|worker, "OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
		"OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_SERVICE_NAME",
		"OTEL_RESOURCE_ATTRIBUTES", "OTEL_PROPAGATORS", "OTEL_TRACES_SAMPLER", "OTEL_TRACES_SAMPLER_ARG", "OTEL_SDK_DISABLED",
		"OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT", "OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT")
	return vs
}()

// VariablesOf are the names of the variables any of roles uses, in
// Variables' order.
func VariablesOf(roles Role) []string {
	var names []string
	for _, v := range Variables {
		if v.Roles&roles != 0 {
			names = append(names, v.Name)
		}
	}
	return names
}
