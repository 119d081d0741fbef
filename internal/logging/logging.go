package logging

import (
	"context"
	"io"
	"log/slog"
	"strings"

	"go.opentelemetry.io/otel/trace"
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
	return slog.New(traceHandler{slog.NewJSONHandler(w, &slog.HandlerOptions{Level: l})})
}

// traceHandler adds the trace_id and span_id of the span in a line's
// context (InfoContext and the like), when it has one: a line and the trace
// it belongs to find each other. A line logged without a context, or with
// tracing off, is left as it is.
type traceHandler struct{ slog.Handler }

func (h traceHandler) Handle(ctx context.Context, r slog.Record) error {
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		r.AddAttrs(slog.String("trace_id", sc.TraceID().String()), slog.String("span_id", sc.SpanID().String()))
	}
	return h.Handler.Handle(ctx, r)
}

func (h traceHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return traceHandler{h.Handler.WithAttrs(attrs)}
}

func (h traceHandler) WithGroup(name string) slog.Handler {
	return traceHandler{h.Handler.WithGroup(name)}
}

// Temporal adapts logger for the Temporal SDK. The SDK's own lines name
// the workflow as WorkflowID, RunID and Attempt, and the tracing
// interceptor's loggers (workflow.GetLogger, activity.GetLogger) the span
// as TraceID and SpanID; they are logged under the service's keys
// (workflow_id, run_id, attempt, trace_id, span_id), and a line about a PIX
// credit's workflow gets the end_to_end_id too, so that one search by
// end_to_end_id finds every line about a PIX.
func Temporal(logger *slog.Logger) tlog.Logger {
	return tlog.NewStructuredLogger(slog.New(pixIDHandler{logger.Handler()}))
}

// sdkKeys renames the SDK's attribute keys to the service's.
var sdkKeys = map[string]string{"WorkflowID": "workflow_id", "RunID": "run_id", "Attempt": "attempt",
	"TraceID": "trace_id", "SpanID": "span_id"}

// pixWorkflowPrefixes are the workflow ID prefixes whose suffix is an
// end_to_end_id (see package workflows).
var pixWorkflowPrefixes = []string{"pix-credit:"}

// rename renames a to the service's key, and returns the end_to_end_id when
// a names a PIX credit's workflow.
func rename(a slog.Attr) (renamed slog.Attr, endToEndID string) {
	if key, ok := sdkKeys[a.Key]; ok {
		if key == "trace_id" || key == "span_id" {
			// A trace.TraceID or SpanID: its hex form, as traceHandler logs it.
			a.Value = slog.StringValue(a.Value.String())
		}
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
