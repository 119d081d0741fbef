package load

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/stretchr/testify/require"
)

// The starts of one kind are summed by outcome over every worker; other
// kinds, and a worker that counted none yet, add nothing.
func TestDispatchStartsSumsTheWorkersCounters(t *testing.T) {
	t.Parallel()
	worker := func(counts map[[2]string]float64) string {
		r := prometheus.NewRegistry()
		c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "pix_dispatch_starts_total"}, []string{"kind", "outcome"})
		r.MustRegister(c)
		for l, v := range counts {
			c.WithLabelValues(l[0], l[1]).Add(v)
		}
		srv := httptest.NewServer(promhttp.HandlerFor(r, promhttp.HandlerOpts{}))
		t.Cleanup(srv.Close)
		return srv.URL
	}
	a := worker(map[[2]string]float64{{"inbox", "new"}: 10, {"inbox", "open"}: 4, {"transfers", "new"}: 7})
	b := worker(map[[2]string]float64{{"inbox", "new"}: 5, {"inbox", "failed"}: 1})
	none := worker(nil)
	got, err := DispatchStarts(t.Context(), []string{a, b, none}, "inbox")
	require.NoError(t, err)
	require.Equal(t, map[string]float64{"new": 15, "open": 4, "failed": 1}, got)

	broken := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(broken.Close)
	_, err = DispatchStarts(t.Context(), []string{a, broken.URL}, "inbox")
	require.ErrorContains(t, err, "404")
}
