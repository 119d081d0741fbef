package logging_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
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
