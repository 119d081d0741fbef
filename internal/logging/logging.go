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

// Temporal adapts logger for the Temporal SDK. The SDK's own lines name
// the workflow as WorkflowID, RunID and Attempt; they are logged under the
// service's keys (workflow_id, run_id, attempt), and a line about a PIX
// credit's workflow gets the end_to_end_id too, so that one search by
// end_to_end_id finds every line about a PIX.
func Temporal(logger *slog.Logger) tlog.Logger {
	return tlog.NewStructuredLogger(slog.New(pixIDHandler{logger.Handler()}))
}

// sdkKeys renames the SDK's attribute keys to the service's.
var sdkKeys = map[string]string{"WorkflowID": "workflow_id", "RunID": "run_id", "Attempt": "attempt"}

// pixWorkflowPrefixes are the workflow ID prefixes whose suffix is an
// end_to_end_id (see package workflows).
var pixWorkflowPrefixes = []string{"pix-credit:"}

// rename renames a to the service's key, and returns the end_to_end_id when
// a names a PIX credit's workflow.
func rename(a slog.Attr) (renamed slog.Attr, endToEndID string) {
	if key, ok := sdkKeys[a.Key]; ok {
		a.Key = key
	}
	if a.Key == "workflow_id" {
		id := a.Value.String()
		for _, p := range pixWorkflowPrefixes {
			if rest, ok := strings.CutPrefix(id, p); ok {
				return a, rest
			}
		}
	}
	return a, ""
}

type pixIDHandler struct{ slog.Handler }

func (h pixIDHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	out := make([]slog.Attr, 0, len(attrs)+1)
	for _, a := range attrs {
		a, id := rename(a)
		out = append(out, a)
		if id != "" {
			out = append(out, slog.String("end_to_end_id", id))
		}
	}
	return pixIDHandler{h.Handler.WithAttrs(out)}
}

func (h pixIDHandler) WithGroup(name string) slog.Handler {
	return pixIDHandler{h.Handler.WithGroup(name)}
}

func (h pixIDHandler) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, r.Message, r.PC)
	r.Attrs(func(a slog.Attr) bool {
		a, id := rename(a)
		out.AddAttrs(a)
		if id != "" {
			out.AddAttrs(slog.String("end_to_end_id", id))
		}
		return true
	})
	return h.Handler.Handle(ctx, out)
}
