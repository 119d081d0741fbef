package tracing

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/jackc/pgx/v5/pgconn"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	enumspb "go.temporal.io/api/enums/v1"

	"github.com/pixbank/pix/internal/pix"
)

// redacting wraps the TracerProvider of every instrumentation (gin, pgx,
// the PSP client, Temporal, NATS) so that no error's text reaches a span:
// an error is recorded by its type only (ErrorType), in the span's
// exception event and its status. An error's text can hold what the trace
// backend must not (a PSP's answer, the Temporal failure messages that the
// payload codec encrypts, a database error's detail); its type is what an
// operator searches by, and the logs, keyed by the same trace_id, have
// the rest.
type redacting struct{ trace.TracerProvider }

func (r redacting) Tracer(name string, opts ...trace.TracerOption) trace.Tracer {
	return redactingTracer{r.TracerProvider.Tracer(name, opts...)}
}

type redactingTracer struct{ trace.Tracer }

func (t redactingTracer) Start(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	ctx, span := t.Tracer.Start(ctx, name, opts...)
	if !span.IsRecording() {
		return ctx, span
	}
	s := &redactedSpan{Span: span}
	return trace.ContextWithSpan(ctx, s), s
}

// redactedSpan records errors by type. The type of the last error
// recorded is the description of an error status (the Temporal and gin
// instrumentations set the error's text there).
type redactedSpan struct {
	trace.Span
	mu        sync.Mutex
	errorType string
}

func (s *redactedSpan) RecordError(err error, _ ...trace.EventOption) {
	if err == nil {
		return
	}
	typ := ErrorType(err)
	s.mu.Lock()
	s.errorType = typ
	s.mu.Unlock()
	// The options may ask for a stack trace or add the error's text: none
	// of them is kept.
	s.Span.AddEvent("exception", trace.WithAttributes(attribute.String("exception.type", typ)))
}

func (s *redactedSpan) SetStatus(code codes.Code, _ string) {
	description := ""
	if code == codes.Error {
		s.mu.Lock()
		description = s.errorType
		s.mu.Unlock()
	}
	s.Span.SetStatus(code, description)
}

func (s *redactedSpan) TracerProvider() trace.TracerProvider {
	return redacting{s.Span.TracerProvider()}
}

// ErrorType names what kind of error err is, without its text: a Temporal
// application error's type (PixCreditFailed, AccountNotFound, ...), the
// error code of the service's error kinds, PostgreSQL's SQLSTATE, or the Go
// type of the innermost error it wraps.
func ErrorType(err error) string {
	// The Temporal SDK's errors by their methods, so that this package (and
	// the store, which it serves) does not link the SDK.
	var appErr temporalApplicationError
	if errors.As(err, &appErr) && appErr.Type() != "" {
		return appErr.Type()
	}
	var timeoutErr temporalTimeoutError
	if errors.As(err, &timeoutErr) {
		return "Timeout" + timeoutErr.TimeoutType().String()
	}
	if k := pix.KindOf(err); k != nil && k.Code != "" {
		return k.Code
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return "SQLSTATE " + pgErr.Code
	}
	for {
		inner := errors.Unwrap(err)
		if inner == nil {
			return fmt.Sprintf("%T", err)
		}
		err = inner
	}
}

// temporalApplicationError is *temporal.ApplicationError's, and
// temporalTimeoutError *temporal.TimeoutError's (package setup's
// TestErrorTypeOfTemporalErrors holds them to the SDK's types).
type (
	temporalApplicationError interface {
		error
		Type() string
		NonRetryable() bool
	}
	temporalTimeoutError interface {
		error
		TimeoutType() enumspb.TimeoutType
	}
)
