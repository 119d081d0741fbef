package sagatest

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
)

// Registry is a registry of the test's own with collectors registered on
// it, as pixd registers a saga's (its Collectors, once per process).
func Registry(t testing.TB, collectors []prometheus.Collector) *prometheus.Registry {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	for _, c := range collectors {
		require.NoError(t, reg.Register(c))
	}
	return reg
}

// Value is the value of the metric name (a gauge or a counter) whose
// labels include labels (name, value, ...), summed over every such metric
// (its other labels), as g gathers it at this call: a scrape, which reads
// the gauges read at scrape time anew. The test fails when g gathers no
// such metric.
func Value(t testing.TB, g prometheus.Gatherer, name string, labels ...string) float64 {
	t.Helper()
	require.Zero(t, len(labels)%2, "labels are name, value pairs")
	families, err := g.Gather()
	require.NoError(t, err)
	sum, found := 0.0, false
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			has := map[string]string{}
			for _, l := range m.GetLabel() {
				has[l.GetName()] = l.GetValue()
			}
			match := true
			for i := 0; i < len(labels); i += 2 {
				if v, ok := has[labels[i]]; !ok || v != labels[i+1] {
					match = false
				}
			}
			if !match {
				continue
			}
			found = true
			if c := m.GetCounter(); c != nil {
				sum += c.GetValue()
			} else {
				sum += m.GetGauge().GetValue()
			}
		}
	}
	require.True(t, found, "%s%q not gathered", name, labels)
	return sum
}
