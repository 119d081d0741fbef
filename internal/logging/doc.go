// Package logging owns the process logger: log/slog JSON on stderr, the level
// from LOG_LEVEL, the trace_id and span_id of a line logged with a span in
// its context, and the bridge that makes the Temporal SDK log through it.
package logging
