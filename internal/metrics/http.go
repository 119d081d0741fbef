package metrics

import "github.com/prometheus/client_golang/prometheus"

// Shedding counts what the API's caps refused (HTTP_MAX_CONNECTIONS,
// HTTP_MAX_IN_FLIGHT): work answered 503 at once so that memory stays
// bounded whatever the callers open.
type Shedding struct {
	connections, requests prometheus.Counter
}

// NewShedding registers the shedding counters on r, and a gauge of the
// connections served now (open: 0 without a cap).
func NewShedding(r *prometheus.Registry, open func() float64) *Shedding {
	s := &Shedding{
		connections: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "pix_http_connections_shed_total",
			Help: "Connections over HTTP_MAX_CONNECTIONS, answered 503 with Retry-After and closed.",
		}),
		requests: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "pix_http_requests_shed_total",
			Help: "Requests over HTTP_MAX_IN_FLIGHT, answered 503 with Retry-After at once.",
		}),
	}
	r.MustRegister(s.connections, s.requests, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "pix_http_connections_open",
		Help: "Connections the API and webhook listeners serve now, counted against HTTP_MAX_CONNECTIONS.",
	}, open))
	return s
}

// ConnectionShed counts one connection refused.
func (s *Shedding) ConnectionShed() { s.connections.Inc() }

// RequestShed counts one request refused.
func (s *Shedding) RequestShed() { s.requests.Inc() }
