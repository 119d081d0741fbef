package tracing

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// Traceparent is the W3C traceparent of the span in ctx, for the nullable
// traceparent column of a row whose work goes on asynchronously (an inbox
// row, a transfer, a refund, an outbox event): nil when ctx holds no span
// context, which is always the case with tracing off (no allocation then).
// A span context that is not sampled is kept too: the hops that continue
// from the row then follow the same sampling decision instead of starting
// traces of their own.
func Traceparent(ctx context.Context) *string {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return nil
	}
	tp := "00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-" + sc.TraceFlags().String()
	return &tp
}

// WithTraceparent returns ctx with the span a row's traceparent names as
// its remote parent: the spans started from it continue that trace. ctx
// itself when traceparent is nil or does not parse.
func WithTraceparent(ctx context.Context, traceparent *string) context.Context {
	if traceparent == nil {
		return ctx
	}
	return propagation.TraceContext{}.Extract(ctx, propagation.MapCarrier{"traceparent": *traceparent})
}

// AttrEndToEndID is the attribute under which a span names the PIX it is
// about: a trace backend finds a PIX's trace by it.
const AttrEndToEndID = "pix.end_to_end_id"

// SetEndToEndID names the PIX the span in ctx is about, when the span is
// recorded (nothing is done otherwise).
func SetEndToEndID(ctx context.Context, id string) {
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		span.SetAttributes(attribute.String(AttrEndToEndID, id))
	}
}
