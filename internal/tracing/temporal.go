package tracing

import (
	"fmt"

	temporalotel "go.temporal.io/sdk/contrib/opentelemetry"
	"go.temporal.io/sdk/interceptor"
)

// TemporalInterceptor is the Temporal SDK's tracing interceptor on this
// provider, for the client's options: the client's workflow starts and
// signals, and, since the workers inherit the client's interceptors, every
// workflow run, activity and local activity, carry the trace context in
// their Temporal headers. nil when tracing is off. Queries (the UI
// reading a run) are not traced: they are no part of a PIX's work.
func (p *Provider) TemporalInterceptor() (interceptor.Interceptor, error) {
	if !p.Enabled() {
		return nil, nil
	}
	i, err := temporalotel.NewTracingInterceptor(temporalotel.TracerOptions{
		Tracer:              p.Tracer("go.temporal.io/sdk"),
		TextMapPropagator:   propagator,
		DisableQueryTracing: true,
	})
	if err != nil {
		return nil, fmt.Errorf("temporal tracing interceptor: %w", err)
	}
	return i, nil
}
