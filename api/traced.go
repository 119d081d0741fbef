package api

import (
	"net/http"
	"sync"

	"github.com/gin-gonic/gin"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"

	"github.com/pixbank/pix/internal/tracing"
)

// traced makes each request a server span named by its route's template
// ("POST /webhooks/pix", "GET /pix/credits/:end_to_end_id": never the path
// with its ids), with contrib's otelhttp, the maintained HTTP
// instrumentation. The span is the root of a trace of its own: a
// traceparent the caller sends is not continued (the span starts before
// any credential is checked, and every caller, the PSPs and the app
// backend included, is outside the service: one that picked the trace id
// could join another PIX's trace, or force sampling past
// OTEL_TRACES_SAMPLER's ratio) but linked (tracing.LinkCaller). Its
// attributes are the method, route, path, status, peer and user agent,
// each bounded (setup.New's span limits): never a header (Authorization,
// the webhook signatures) nor a body. The operations routes (probes and
// scrapes, every few seconds) and requests that match no route are not
// traced.
//
// It is a gin middleware, not a wrapper of the router, so that it runs
// once gin has routed the request (the route names the span) and after
// what refuses a request before any work (Deps.InFlight).
func traced(p *tracing.Provider) gin.HandlerFunc {
	span := otelhttp.NewMiddleware("",
		otelhttp.WithTracerProvider(p.TracerProvider()),
		otelhttp.WithPropagators(propagation.NewCompositeTextMapPropagator()), // extracts nothing: LinkCaller reads the caller's
		otelhttp.WithMeterProvider(metricnoop.NewMeterProvider()),             // the service's metrics are Prometheus's
	)
	return func(c *gin.Context) {
		route := c.FullPath()
		switch route {
		case "", "/healthz", "/readyz", "/metrics":
			c.Next()
			return
		}
		// otelhttp names the span and sets http.route from the pattern a
		// ServeMux would have matched: gin's route is that pattern.
		c.Request.Pattern = route
		gw := c.Writer
		header := c.Request.Header
		span(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			r.Header = header // the caller's, as sent (clientAddressed)
			p.LinkCaller(r.Context(), propagation.HeaderCarrier(r.Header))
			c.Request = r
			sw := &spanWriter{ResponseWriter: gw, w: w}
			c.Writer = sw
			c.Next()
			c.Writer = gw
			// A handler that wrote no body (a 204, an abort with a status)
			// left its status in gin's writer alone: otelhttp records it here.
			sw.sendHeader()
		})).ServeHTTP(gw, clientAddressed(c))
	}
}

// clientAddressed is c's request as otelhttp is to see it: with the client
// IP gin resolved (the connection's, or what TRUSTED_PROXIES' X-Forwarded-For
// says) as its only X-Forwarded-For. otelhttp records client.address from
// that header as any caller sent it, so an untrusted caller could write the
// address our spans blame; the logs have never trusted it (docs/security.md).
func clientAddressed(c *gin.Context) *http.Request {
	r := c.Request
	if _, ok := r.Header["X-Forwarded-For"]; !ok {
		return r // otelhttp takes the connection's address
	}
	seen := r.WithContext(r.Context())
	seen.Header = r.Header.Clone()
	seen.Header.Set("X-Forwarded-For", c.ClientIP())
	return seen
}

// spanWriter is gin's ResponseWriter with the status and the body going
// through w, otelhttp's writer (which passes them on to gin's), so that the
// span records them. gin sets a status without sending it (Status, then
// the first write sends it): spanWriter hands otelhttp the status gin
// holds once, when the header is sent.
type spanWriter struct {
	gin.ResponseWriter
	w    http.ResponseWriter
	once sync.Once
}

func (s *spanWriter) sendHeader() {
	s.once.Do(func() { s.w.WriteHeader(s.Status()) })
}

func (s *spanWriter) WriteHeaderNow() {
	s.sendHeader()
	s.ResponseWriter.WriteHeaderNow()
}

func (s *spanWriter) Write(b []byte) (int, error) {
	s.sendHeader()
	return s.w.Write(b)
}

func (s *spanWriter) WriteString(str string) (int, error) {
	s.sendHeader()
	return s.w.Write([]byte(str))
}

func (s *spanWriter) Flush() {
	s.sendHeader()
	s.ResponseWriter.Flush()
}
