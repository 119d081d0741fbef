package logging_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	tlog "go.temporal.io/sdk/log"

	"github.com/pixbank/pix/internal/logging"
)

func lines(t *testing.T, buf *bytes.Buffer) []map[string]any {
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(l), &m))
		out = append(out, m)
	}
	return out
}

func TestTemporalLinesAboutAPIXCarryItsEndToEndID(t *testing.T) {
	var buf bytes.Buffer
	l := logging.Temporal(logging.New(&buf, "debug"))
	const id = "E1234567820261129120000000000001"

	l.Info("Activity error.", "WorkflowID", "pix-credit:"+id, "Attempt", 2)
	tlog.With(l, "WorkflowID", "pix-credit:"+id).Warn("Task failed")
	l.Info("Started Worker", "TaskQueue", "pix-credit")
	l.Info("other workflow", "WorkflowID", "something-else")

	got := lines(t, &buf)
	require.Len(t, got, 4)
	require.Equal(t, id, got[0]["end_to_end_id"])
	require.Equal(t, "pix-credit:"+id, got[0]["workflow_id"], "the SDK's keys are logged under the service's")
	require.EqualValues(t, 2, got[0]["attempt"])
	require.NotContains(t, got[0], "WorkflowID")
	require.Equal(t, id, got[1]["end_to_end_id"])
	require.Equal(t, "pix-credit:"+id, got[1]["workflow_id"])
	require.NotContains(t, got[2], "end_to_end_id")
	require.NotContains(t, got[3], "end_to_end_id")
}

// A line logged with a span in its context names the span's trace and the
// span itself; one without does not. The Temporal SDK's loggers name the
// span as TraceID and SpanID: logged under the same keys, in the same form.
func TestLinesWithASpanCarryItsTraceAndSpanIDs(t *testing.T) {
	var buf bytes.Buffer
	log := logging.New(&buf, "debug").With("end_to_end_id", "E1")
	tp := sdktrace.NewTracerProvider()
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	ctx, span := tp.Tracer("test").Start(context.Background(), "credit")
	defer span.End()
	sc := span.SpanContext()

	log.InfoContext(ctx, "pix credited", "amount_cents", 5)
	log.Info("no context")
	log.InfoContext(context.Background(), "a context without a span")
	logging.Temporal(log).Info("activity line", "TraceID", sc.TraceID(), "SpanID", sc.SpanID())

	got := lines(t, &buf)
	require.Len(t, got, 4)
	require.Equal(t, sc.TraceID().String(), got[0]["trace_id"])
	require.Equal(t, sc.SpanID().String(), got[0]["span_id"])
	require.Equal(t, "E1", got[0]["end_to_end_id"])
	require.EqualValues(t, 5, got[0]["amount_cents"])
	for _, line := range got[1:3] {
		require.NotContains(t, line, "trace_id")
		require.NotContains(t, line, "span_id")
	}
	require.Equal(t, sc.TraceID().String(), got[3]["trace_id"])
	require.Equal(t, sc.SpanID().String(), got[3]["span_id"])
	require.NotContains(t, got[3], "TraceID")
}
