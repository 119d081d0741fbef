package sagakit_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/saga/sagakit"
)

type counts struct{ open, overdue int64 }

func gauges(log *slog.Logger, timeout time.Duration, query func(context.Context) (counts, error)) *sagakit.ScrapeGauges[counts] {
	return &sagakit.ScrapeGauges[counts]{What: "block gauges", Query: query, Timeout: timeout, Log: log,
		Gauges: []sagakit.Gauge[counts]{
			{Desc: prometheus.NewDesc("pix_block_open", "Blocks open.", nil, nil), Value: func(c counts) float64 { return float64(c.open) }},
			{Desc: prometheus.NewDesc("pix_block_overdue", "Blocks overdue.", nil, nil), Value: func(c counts) float64 { return float64(c.overdue) }},
		}}
}

// Each scrape asks the query, within its bound, and reports each gauge's
// value of the answer.
func TestScrapeGaugesReportTheQuerysAnswer(t *testing.T) {
	scrapes := 0
	var bounded bool
	g := gauges(slog.New(slog.DiscardHandler), 0, func(ctx context.Context) (counts, error) {
		scrapes++
		deadline, ok := ctx.Deadline()
		bounded = ok && time.Until(deadline) <= sagakit.ScrapeTimeout
		return counts{open: int64(3 * scrapes), overdue: 1}, nil
	})
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(g))
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP pix_block_open Blocks open.
# TYPE pix_block_open gauge
pix_block_open 3
# HELP pix_block_overdue Blocks overdue.
# TYPE pix_block_overdue gauge
pix_block_overdue 1
`)))
	require.True(t, bounded, "the query runs within ScrapeTimeout")
	n, err := testutil.GatherAndCount(reg)
	require.NoError(t, err)
	require.Equal(t, 2, n)
	require.Equal(t, 2, scrapes, "read at each scrape")
}

// A query that fails, or outlasts its bound, reports no gauge (never a
// made-up 0) and logs why.
func TestScrapeGaugesReportNothingWhenTheQueryFails(t *testing.T) {
	var logged bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&logged, nil))
	failing := gauges(log, 0, func(context.Context) (counts, error) { return counts{}, errors.New("connection refused") })
	slow := gauges(log, 10*time.Millisecond, func(ctx context.Context) (counts, error) {
		<-ctx.Done()
		return counts{open: 1}, ctx.Err()
	})
	for _, g := range []prometheus.Collector{failing, slow} {
		reg := prometheus.NewPedanticRegistry()
		require.NoError(t, reg.Register(g))
		n, err := testutil.GatherAndCount(reg)
		require.NoError(t, err)
		require.Zero(t, n)
	}
	require.Contains(t, logged.String(), `"msg":"block gauges not read"`)
	require.Contains(t, logged.String(), "connection refused")
	require.Contains(t, logged.String(), "deadline exceeded")
}
