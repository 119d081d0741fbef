package sagakit_test

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/saga/sagakit"
)

// Each end counted under its outcome, on the counter registered; a nil
// Finished counts nothing and does not fail.
func TestFinishedCountsByOutcome(t *testing.T) {
	f := sagakit.NewFinished("pix_things_finished_total", "Things finished.")
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(f))
	f.Count("settled")
	f.Count("settled")
	f.Count("refunded")
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP pix_things_finished_total Things finished.
# TYPE pix_things_finished_total counter
pix_things_finished_total{outcome="refunded"} 1
pix_things_finished_total{outcome="settled"} 2
`)))
	var none *sagakit.Finished
	require.NotPanics(t, func() { none.Count("settled") })
}
