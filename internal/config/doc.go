// Package config owns the service's configuration: one struct, read from the
// environment, with every default in one place. A value that is set but can't
// be parsed is an error, never a silent fallback to the default. Variables
// (vars.go) declares every variable pixd reads, once, with the roles that
// use it: pixd's help lists them from there, and a test holds Load and
// docs/configuration.md to it. A saga reads its own settings in its
// package, through the same reader (Settings; SagaSettings, its defaults
// and its reads declared once, checked at pixd's start and read after).
// It does not import what it configures: the workflows' settings it builds
// (TaskQueues, Retry, PSPCalls) are internal/runconf's types, below both
// (docs/architecture.md, "Import directions").
//
// The reading is ours, not github.com/caarlos0/env's (v11.4.2, measured on
// the rules the tests pin): with envDefault a variable set to "" silently
// takes the default, and notEmpty refuses an unset one, where we refuse the
// first and default the second; its parse errors name the Go field and
// print strconv's and time's words, not the variable and an example; it
// has no ranges (positive durations, 1..10000), so 0s and -1 pass; its
// file option keeps the trailing newline and neither refuses NAME beside
// NAME_FILE nor keeps the path for a secret read again
// (PSP_CLIENT_SECRET_FILE); and the defaults that follow other variables
// (DISPATCH_RECHECK_MAX, OUTBOX_GATHER_WINDOW, PSP_CATCHUP_GRACE,
// NATS_STREAM_MAX_AGE) need to know what was set. Of what load reads (25
// strings, 29 durations, 7 waits, 9 integers, 6 booleans, 5 secrets, a
// dozen of their own form), only the booleans would need nothing on top.
package config
