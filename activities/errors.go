package activities

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/pixbank/pix/internal/metrics"
	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/internal/psp"
)

// Application error types of the PSP's answers that every saga calling the
// PSP shares.
const (
	// ErrTypePSPUnavailable: the PSP did not answer (5xx, timeout,
	// connection), or its token endpoint did not; retried with backoff.
	ErrTypePSPUnavailable = "PSPUnavailable"
	// ErrTypePSPRequestRefused: the PSP refused our request itself (401,
	// 403, 400, 404, 413, ...), or its token endpoint our client
	// (invalid_client, ...): our credentials or request are wrong. Never
	// a reason to refund nor to reverse: retried with backoff; after
	// attentionAttemptsPerRun attempts of a run the run fails visibly, the
	// saga's row stays open, and the dispatcher's recheck starts another
	// run.
	ErrTypePSPRequestRefused = "PSPRequestRefused"
	// ErrTypeRefundUnconfirmed: a transfer's compensation found the PSP
	// holding the transfer as pending or settled: not refunded; the run
	// fails and the next one follows the PSP (saga/transfer). Non-retryable
	// in the devolução's database policy as well, where it was declared
	// with the transfer's.
	ErrTypeRefundUnconfirmed = "RefundUnconfirmed"
)

// attentionAttemptsPerRun bounds the attempts of one run's PSP step once an
// answer needs a human's attention (a refused request, a rejection the
// PSP's status does not confirm): from that attempt on such an answer fails
// the run, visibly; the saga's row stays open, and the dispatcher's recheck
// starts a new run. With the sagas' backoff that is a minute or two of
// retries. It counts every attempt of the step, so a refusal after a long
// PSP outage fails the run at once: it has been retrying for long already.
const attentionAttemptsPerRun = 8

// PSPNeedsAttention counts an answer a human must look at (by kind, the
// activity error type) and returns the error of kind: retried with the
// step's backoff until attentionAttemptsPerRun attempts, then final for
// the run, which fails visibly while the saga's row stays open for the next
// run. consequence says where the money stays (it ends the message).
func PSPNeedsAttention(ctx context.Context, m *metrics.Worker, log *slog.Logger, kind string, statusCode int, err error, consequence string) error {
	m.PSPNeedsAttention(kind, statusCode)
	log.ErrorContext(ctx, "psp answer needs attention; "+consequence, "kind", kind, "status_code", statusCode, "error", err)
	msg := err.Error() + "; " + consequence
	if activity.GetInfo(ctx).Attempt >= attentionAttemptsPerRun {
		return temporal.NewNonRetryableApplicationError(msg, kind, err)
	}
	return temporal.NewApplicationErrorWithCause(msg, kind, err)
}

// PSPRequestRefused reports a refused request (credentials, the token
// endpoint refusing our client, a malformed request): never a rejection;
// see PSPNeedsAttention.
func PSPRequestRefused(ctx context.Context, m *metrics.Worker, log *slog.Logger, err error, consequence string) error {
	var refused *psp.RequestError
	var token *psp.TokenError
	code := 0
	switch {
	case errors.As(err, &token):
		code = token.StatusCode // the token endpoint's
	case errors.As(err, &refused):
		code = refused.StatusCode
	}
	return PSPNeedsAttention(ctx, m, log, ErrTypePSPRequestRefused, code, fmt.Errorf("psp refused the request (http %d): %w", code, err), consequence)
}

// PSPError is a PSP call without an answer: retried.
func PSPError(err error) error {
	return temporal.NewApplicationErrorWithCause("psp: "+err.Error(), ErrTypePSPUnavailable, err)
}

// KindError turns a store error into a Temporal application error: a
// business error of its kind's type (pix.Kinds), non-retryable unless the
// kind is retried; anything else is a technical failure. No error is none
// (a store's answer returned as it is: `return r, KindError(err)`).
func KindError(err error) error {
	if err == nil {
		return nil
	}
	k := pix.KindOf(err)
	switch {
	case k == nil || k.TemporalType == "":
		return TechnicalFailure(err)
	case k.Retryable:
		return temporal.NewApplicationErrorWithCause(err.Error(), k.TemporalType, err)
	default:
		return temporal.NewNonRetryableApplicationError(err.Error(), k.TemporalType, err)
	}
}
