package refund_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/pixbank/pix/activities"
	"github.com/pixbank/pix/internal/payload"
	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/internal/psp"
	"github.com/pixbank/pix/saga/refund"
)

const refundID = "5b1f0c9e2d3a4b5c6d7e8f9012345678"

var (
	refunds   = &refund.Activities{}
	refundRef = refund.Ref{RefundID: refundID}
)

func newRefundEnv(t *testing.T) *testsuite.TestWorkflowEnvironment {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.RegisterWorkflowWithOptions(refund.Workflow, workflow.RegisterOptions{Name: refund.WorkflowName})
	env.RegisterActivity(refunds)
	t.Cleanup(func() { env.AssertExpectations(t) })
	return env
}

func runRefund(t *testing.T, env *testsuite.TestWorkflowEnvironment, s refund.RunSettings) (refund.Output, error) {
	t.Helper()
	env.ExecuteWorkflow(refund.WorkflowName, refund.Input{RefundID: refundID, Settings: s})
	require.True(t, env.IsWorkflowCompleted())
	if err := env.GetWorkflowError(); err != nil {
		return refund.Output{}, err
	}
	var out refund.Output
	require.NoError(t, env.GetWorkflowResult(&out))
	return out, nil
}

func pspRefundSays(status psp.RefundStatus, reason string) refund.State {
	return refund.State{RefundID: refundID, Status: string(status), RtrID: "D12345678202611291200abcdef12345", Reason: reason}
}

func TestRefundReturnedAfterPolling(t *testing.T) {
	env := newRefundEnv(t)
	transient := temporal.NewApplicationError("psp: 503", activities.ErrTypePSPUnavailable)
	env.OnActivity(refunds.RequestRefund, mock.Anything, refundRef).Return(refund.State{}, transient).Twice()
	env.OnActivity(refunds.RequestRefund, mock.Anything, refundRef).Return(pspRefundSays(psp.RefundInProcessing, ""), nil).Once()
	env.OnActivity(refunds.CheckRefund, mock.Anything, refundRef).Return(pspRefundSays(psp.RefundInProcessing, ""), nil).Twice()
	env.OnActivity(refunds.CheckRefund, mock.Anything, refundRef).Return(pspRefundSays(psp.RefundReturned, ""), nil).Once()
	env.OnActivity(refunds.MarkRefundReturned, mock.Anything, pspRefundSays(psp.RefundReturned, "")).Return(nil).Once()

	out, err := runRefund(t, env, refund.DefaultRunSettings())
	require.NoError(t, err)
	require.Equal(t, refund.Output{Status: pix.RefundReturned}, out)
}

// A notice from the inbox ends the wait at once: the PSP's record is
// checked then, not at the next poll an hour later.
func TestRefundNoticeSignalChecksAtOnce(t *testing.T) {
	env := newRefundEnv(t)
	s := refund.DefaultRunSettings()
	s.PollInitial, s.PollMax = payload.Duration(time.Hour), payload.Duration(time.Hour)
	env.OnActivity(refunds.RequestRefund, mock.Anything, refundRef).Return(pspRefundSays(psp.RefundInProcessing, ""), nil).Once()
	env.OnActivity(refunds.CheckRefund, mock.Anything, refundRef).Return(pspRefundSays(psp.RefundReturned, ""), nil).Once()
	env.OnActivity(refunds.MarkRefundReturned, mock.Anything, mock.Anything).Return(nil).Once()
	var start time.Time
	env.RegisterDelayedCallback(func() {
		start = env.Now()
		env.SignalWorkflow(refund.NoticeSignal, refund.Notice{Status: string(psp.RefundReturned)})
		env.SignalWorkflow(refund.NoticeSignal, refund.Notice{Status: string(psp.RefundReturned)})
	}, time.Minute)

	out, err := runRefund(t, env, s)
	require.NoError(t, err)
	require.Equal(t, pix.RefundReturned, out.Status)
	require.Less(t, env.Now().Sub(start), time.Minute, "checked on the notice, once for both")
}

// The notice is only a wake-up: the PSP's record decides.
func TestRefundNoticeIsConfirmedByTheRecord(t *testing.T) {
	env := newRefundEnv(t)
	s := refund.DefaultRunSettings()
	s.PollInitial, s.PollMax = payload.Duration(time.Hour), payload.Duration(time.Hour)
	env.OnActivity(refunds.RequestRefund, mock.Anything, refundRef).Return(pspRefundSays(psp.RefundInProcessing, ""), nil).Once()
	env.OnActivity(refunds.CheckRefund, mock.Anything, refundRef).Return(pspRefundSays(psp.RefundInProcessing, ""), nil).Once()
	env.OnActivity(refunds.CheckRefund, mock.Anything, refundRef).Return(pspRefundSays(psp.RefundReturned, ""), nil).Once()
	env.OnActivity(refunds.MarkRefundReturned, mock.Anything, mock.Anything).Return(nil).Once()
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(refund.NoticeSignal, refund.Notice{Status: string(psp.RefundNotDone)})
	}, time.Minute)

	out, err := runRefund(t, env, s)
	require.NoError(t, err)
	require.Equal(t, pix.RefundReturned, out.Status, "a notice of NAO_REALIZADO the record does not confirm reverses nothing")
}

func TestRefundNotMadeIsReversedOnce(t *testing.T) {
	env := newRefundEnv(t)
	env.OnActivity(refunds.RequestRefund, mock.Anything, refundRef).Return(pspRefundSays(psp.RefundInProcessing, ""), nil).Once()
	env.OnActivity(refunds.CheckRefund, mock.Anything, refundRef).Return(pspRefundSays(psp.RefundNotDone, "conta encerrada"), nil).Once()
	env.OnActivity(refunds.ReverseRefund, mock.Anything, refundRef).Return(nil).Once()

	out, err := runRefund(t, env, refund.DefaultRunSettings())
	require.NoError(t, err)
	require.Equal(t, refund.Output{Status: pix.RefundReversed, Reason: "conta encerrada"}, out)
}

func TestRefundRefusedAtOnceIsReversed(t *testing.T) {
	env := newRefundEnv(t)
	env.OnActivity(refunds.RequestRefund, mock.Anything, refundRef).Return(pspRefundSays(psp.RefundNotDone, "valor excede"), nil).Once()
	env.OnActivity(refunds.ReverseRefund, mock.Anything, refundRef).Return(nil).Once()

	out, err := runRefund(t, env, refund.DefaultRunSettings())
	require.NoError(t, err)
	require.Equal(t, pix.RefundReversed, out.Status)
}

func TestRefundAlreadyFinalDoesNothing(t *testing.T) {
	env := newRefundEnv(t)
	env.OnActivity(refunds.RequestRefund, mock.Anything, refundRef).Return(refund.State{RefundID: refundID, Status: pix.RefundReturned, AlreadyFinal: true}, nil).Once()

	out, err := runRefund(t, env, refund.DefaultRunSettings())
	require.NoError(t, err)
	require.Equal(t, pix.RefundReturned, out.Status)
}

// Unknown stays open: a check without an answer is asked again later; a PSP
// that lost the devolução, or no outcome in time, fails the run with the
// refund debited and open (no reversal).
func TestRefundUnknownNeverReverses(t *testing.T) {
	t.Run("no answer, then an answer", func(t *testing.T) {
		env := newRefundEnv(t)
		transient := temporal.NewApplicationError("psp: 503", activities.ErrTypePSPUnavailable)
		refused := temporal.NewApplicationError("psp refused (http 401)", activities.ErrTypePSPRequestRefused)
		env.OnActivity(refunds.RequestRefund, mock.Anything, refundRef).Return(pspRefundSays(psp.RefundInProcessing, ""), nil).Once()
		env.OnActivity(refunds.CheckRefund, mock.Anything, refundRef).Return(refund.State{}, transient).Times(6)
		env.OnActivity(refunds.CheckRefund, mock.Anything, refundRef).Return(refund.State{}, refused).Times(3)
		env.OnActivity(refunds.CheckRefund, mock.Anything, refundRef).Return(pspRefundSays(psp.RefundReturned, ""), nil).Once()
		env.OnActivity(refunds.MarkRefundReturned, mock.Anything, mock.Anything).Return(nil).Once()
		out, err := runRefund(t, env, refund.DefaultRunSettings())
		require.NoError(t, err)
		require.Equal(t, pix.RefundReturned, out.Status)
	})
	t.Run("the psp lost it", func(t *testing.T) {
		env := newRefundEnv(t)
		lost := temporal.NewNonRetryableApplicationError("the psp knows no devolução", refund.ErrTypePSPRefundUnknown, nil)
		env.OnActivity(refunds.RequestRefund, mock.Anything, refundRef).Return(pspRefundSays(psp.RefundInProcessing, ""), nil).Once()
		env.OnActivity(refunds.CheckRefund, mock.Anything, refundRef).Return(refund.State{}, lost).Once()
		_, err := runRefund(t, env, refund.DefaultRunSettings())
		var appErr *temporal.ApplicationError
		require.ErrorAs(t, err, &appErr)
		require.Equal(t, refund.ErrTypeFailed, appErr.Type())
	})
	t.Run("no outcome in time", func(t *testing.T) {
		env := newRefundEnv(t)
		s := refund.DefaultRunSettings()
		s.OutcomeTimeout = payload.Duration(2 * time.Hour)
		env.OnActivity(refunds.RequestRefund, mock.Anything, refundRef).Return(pspRefundSays(psp.RefundInProcessing, ""), nil).Once()
		env.OnActivity(refunds.CheckRefund, mock.Anything, refundRef).Return(pspRefundSays(psp.RefundInProcessing, ""), nil)
		_, err := runRefund(t, env, s)
		require.ErrorContains(t, err, "no outcome within 2h0m0s")
	})
	t.Run("the reversal is not confirmed", func(t *testing.T) {
		env := newRefundEnv(t)
		unconfirmed := temporal.NewNonRetryableApplicationError("not reversed", refund.ErrTypeReversalUnconfirmed, nil)
		env.OnActivity(refunds.RequestRefund, mock.Anything, refundRef).Return(pspRefundSays(psp.RefundNotDone, "x"), nil).Once()
		env.OnActivity(refunds.ReverseRefund, mock.Anything, refundRef).Return(unconfirmed).Once()
		_, err := runRefund(t, env, refund.DefaultRunSettings())
		require.ErrorContains(t, err, "pix refund stopped at reverse")
	})
}

// A devolução the PSP refused itself (no record of it) is reversed after a
// quiet period, by a reversal that looks again.
func TestRefundRefusedByThePSPIsReversedAfterAQuietPeriod(t *testing.T) {
	env := newRefundEnv(t)
	refused := refund.State{RefundID: refundID, Status: refund.RefusedByPSP, Reason: "PixDevolucaoInvalida"}
	env.OnActivity(refunds.RequestRefund, mock.Anything, refundRef).Return(refused, nil).Once()
	var reversedAt time.Time
	env.OnActivity(refunds.ReverseRefund, mock.Anything, refund.Ref{RefundID: refundID, PSPRefused: true, Reason: "PixDevolucaoInvalida"}).
		Run(func(mock.Arguments) { reversedAt = env.Now() }).Return(nil).Once()
	start := env.Now()
	out, err := runRefund(t, env, refund.DefaultRunSettings())
	require.NoError(t, err)
	require.Equal(t, refund.Output{Status: pix.RefundReversed, Reason: "PixDevolucaoInvalida"}, out)
	require.GreaterOrEqual(t, reversedAt.Sub(start), time.Minute)
}

// A notice during the quiet period after a refusal means the PSP holds a
// record after all: it is followed, never reversed on (found by an attack
// review: the run slept through it and reversed).
func TestRefundNoticeAfterARefusalIsFollowed(t *testing.T) {
	env := newRefundEnv(t)
	refused := refund.State{RefundID: refundID, Status: refund.RefusedByPSP, Reason: "PixDevolucaoInvalida"}
	env.OnActivity(refunds.RequestRefund, mock.Anything, refundRef).Return(refused, nil).Once()
	env.OnActivity(refunds.CheckRefund, mock.Anything, refundRef).Return(pspRefundSays(psp.RefundReturned, ""), nil).Once()
	env.OnActivity(refunds.MarkRefundReturned, mock.Anything, mock.Anything).Return(nil).Once()
	env.RegisterDelayedCallback(func() {
		env.SignalWorkflow(refund.NoticeSignal, refund.Notice{Status: string(psp.RefundReturned)})
	}, 10*time.Second)
	out, err := runRefund(t, env, refund.DefaultRunSettings())
	require.NoError(t, err)
	require.Equal(t, pix.RefundReturned, out.Status, "never reversed")
}
