// Package logging owns the process logger: log/slog JSON on stderr, the level
// from LOG_LEVEL, and the bridge that makes the Temporal SDK log through it.
package logging

import (
	"io"
	"log/slog"
	"strings"

	tlog "go.temporal.io/sdk/log"
)

// New returns a JSON logger at level ("debug", "info", "warn", "error").
func New(w io.Writer, level string) *slog.Logger {
	var l slog.Level
	switch strings.ToLower(level) {
	case "debug":
		l = slog.LevelDebug
	case "warn":
		l = slog.LevelWarn
	case "error":
		l = slog.LevelError
	default:
		l = slog.LevelInfo
	}
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: l}))
}

// Temporal adapts logger for the Temporal SDK.
func Temporal(logger *slog.Logger) tlog.Logger {
	return tlog.NewStructuredLogger(logger)
}
