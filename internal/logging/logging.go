// Package logging owns the process logger: log/slog JSON on stderr, the level
// from LOG_LEVEL, and the bridge that makes the Temporal SDK log through it.
package logging

import (
	"context"
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

// Temporal adapts logger for the Temporal SDK. The SDK's own lines about a
// PIX workflow carry its WorkflowID; they get the end_to_end_id too, so that
// one search by end_to_end_id finds every line about a PIX.
func Temporal(logger *slog.Logger) tlog.Logger {
	return tlog.NewStructuredLogger(slog.New(pixIDHandler{logger.Handler()}))
}

// pixWorkflowPrefixes are the workflow ID prefixes whose suffix is an
// end_to_end_id (see package workflows).
var pixWorkflowPrefixes = []string{"pix-credit:"}

// endToEndIDOf returns the end_to_end_id of a "WorkflowID" attribute.
func endToEndIDOf(a slog.Attr) (string, bool) {
	if a.Key != "WorkflowID" {
		return "", false
	}
	id := a.Value.String()
	for _, p := range pixWorkflowPrefixes {
		if rest, ok := strings.CutPrefix(id, p); ok {
			return rest, true
		}
	}
	return "", false
}

type pixIDHandler struct{ slog.Handler }

func (h pixIDHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	for _, a := range attrs {
		if id, ok := endToEndIDOf(a); ok {
			attrs = append(attrs, slog.String("end_to_end_id", id))
			break
		}
	}
	return pixIDHandler{h.Handler.WithAttrs(attrs)}
}

func (h pixIDHandler) WithGroup(name string) slog.Handler {
	return pixIDHandler{h.Handler.WithGroup(name)}
}

func (h pixIDHandler) Handle(ctx context.Context, r slog.Record) error {
	var id string
	r.Attrs(func(a slog.Attr) bool {
		var ok bool
		id, ok = endToEndIDOf(a)
		return !ok
	})
	if id != "" {
		r = r.Clone()
		r.AddAttrs(slog.String("end_to_end_id", id))
	}
	return h.Handler.Handle(ctx, r)
}
