// Package logging owns the process logger: log/slog JSON on stderr, the level
// from LOG_LEVEL, and the bridge that makes the Temporal SDK log through it.
package logging
