package logging_test

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/internal/logging"
)

func TestOutageLogsTheFirstFailureThenEveryIntervalThenTheRecovery(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, nil))
	o := logging.Outage{Every: 50 * time.Millisecond}

	o.Succeeded(log, "back")
	require.Empty(t, buf.String(), "no outage, nothing to say")
	for range 5 {
		o.Failed(log, "round failed", errors.New("db down"), "k", "v")
	}
	require.Equal(t, 1, strings.Count(buf.String(), `"msg":"round failed"`), "once, not once per round")
	require.Contains(t, buf.String(), `"error":"db down"`)
	require.Contains(t, buf.String(), `"k":"v"`)
	time.Sleep(60 * time.Millisecond)
	o.Failed(log, "round failed", errors.New("db down"))
	require.Equal(t, 2, strings.Count(buf.String(), `"msg":"round failed"`), "again after Every")
	o.Succeeded(log, "back")
	o.Succeeded(log, "back")
	require.Equal(t, 1, strings.Count(buf.String(), `"msg":"back"`), "the recovery, once")
}
