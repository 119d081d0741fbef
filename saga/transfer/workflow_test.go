package transfer_test

import (
	"testing"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/pixbank/pix/activities"
	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/internal/psp"
	"github.com/pixbank/pix/saga/transfer"
)

const (
	transferID = "0b6f7c1e-3d5a-4e2b-9c8d-7a6b5c4d3e2f"
	e2e        = "E1234567820261129120000000000001"
)

func newTransferEnv(t *testing.T) *testsuite.TestWorkflowEnvironment {
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	env.RegisterWorkflowWithOptions(transfer.Workflow, workflow.RegisterOptions{Name: transfer.WorkflowName})
	env.RegisterActivity(&transfer.Activities{})
	t.Cleanup(func() { env.AssertExpectations(t) })
	return env
}

func runTransfer(t *testing.T, env *testsuite.TestWorkflowEnvironment) (transfer.Output, error) {
	t.Helper()
	env.ExecuteWorkflow(transfer.WorkflowName, transfer.Input{TransferID: transferID, Settings: transfer.DefaultRunSettings()})
	require.True(t, env.IsWorkflowCompleted())
	if err := env.GetWorkflowError(); err != nil {
		return transfer.Output{}, err
	}
	var out transfer.Output
	require.NoError(t, env.GetWorkflowResult(&out))
	return out, nil
}

var ref = transfer.Ref{TransferID: transferID}

func pspSays(status psp.Status, reason string) transfer.PSPResult {
	return transfer.PSPResult{EndToEndID: e2e, Status: string(status), Reason: reason}
}

func TestTransferSettlesAfterPolling(t *testing.T) {
	env := newTransferEnv(t)
	transient := temporal.NewApplicationError("psp: 503", activities.ErrTypePSPUnavailable)
	pending := temporal.NewApplicationError("not settled yet", transfer.ErrTypeSettlementPending)
	env.OnActivity(a.SubmitTransfer, mock.Anything, ref).Return(transfer.PSPResult{}, transient).Twice()
	env.OnActivity(a.SubmitTransfer, mock.Anything, ref).Return(pspSays(psp.StatusPending, ""), nil).Once()
	env.OnActivity(a.AwaitSettlement, mock.Anything, pspSays(psp.StatusPending, "")).Return(transfer.PSPResult{}, pending).Times(3)
	env.OnActivity(a.AwaitSettlement, mock.Anything, pspSays(psp.StatusPending, "")).Return(pspSays(psp.StatusSettled, ""), nil).Once()
	env.OnActivity(a.SettleTransfer, mock.Anything, ref).Return(nil).Once()

	out, err := runTransfer(t, env)
	require.NoError(t, err)
	require.Equal(t, transfer.Output{Status: pix.TransferSettled}, out)
}

func TestTransferRejectedAtSubmissionIsRefunded(t *testing.T) {
	env := newTransferEnv(t)
	env.OnActivity(a.SubmitTransfer, mock.Anything, ref).Return(pspSays(psp.StatusRejected, "receiver account closed"), nil).Once()
	env.OnActivity(a.RefundTransfer, mock.Anything, transfer.RefundInput{TransferID: transferID, Reason: "receiver account closed"}).Return(nil).Once()

	out, err := runTransfer(t, env)
	require.NoError(t, err)
	require.Equal(t, transfer.Output{Status: pix.TransferRefunded, Reason: "receiver account closed"}, out)
}

func TestTransferRejectedAtSettlementIsRefunded(t *testing.T) {
	env := newTransferEnv(t)
	env.OnActivity(a.SubmitTransfer, mock.Anything, ref).Return(pspSays(psp.StatusPending, ""), nil).Once()
	env.OnActivity(a.AwaitSettlement, mock.Anything, mock.Anything).Return(pspSays(psp.StatusRejected, "fraud suspected"), nil).Once()
	env.OnActivity(a.RefundTransfer, mock.Anything, transfer.RefundInput{TransferID: transferID, Reason: "fraud suspected"}).Return(nil).Once()

	out, err := runTransfer(t, env)
	require.NoError(t, err)
	require.Equal(t, pix.TransferRefunded, out.Status)
}

func TestTransferSettledAtOnceSkipsPolling(t *testing.T) {
	env := newTransferEnv(t)
	env.OnActivity(a.SubmitTransfer, mock.Anything, ref).Return(pspSays(psp.StatusSettled, ""), nil).Once()
	env.OnActivity(a.SettleTransfer, mock.Anything, ref).Return(nil).Once()

	out, err := runTransfer(t, env)
	require.NoError(t, err)
	require.Equal(t, pix.TransferSettled, out.Status)
}

// A new run of a saga that already ended (the dispatcher's recheck raced
// the end) does nothing: no second settlement, no refund.
func TestTransferAlreadyFinalDoesNothing(t *testing.T) {
	for _, final := range []string{pix.TransferSettled, pix.TransferRefunded} {
		env := newTransferEnv(t)
		env.OnActivity(a.SubmitTransfer, mock.Anything, ref).Return(transfer.PSPResult{EndToEndID: e2e, Status: final, AlreadyFinal: true}, nil).Once()
		out, err := runTransfer(t, env)
		require.NoError(t, err)
		require.Equal(t, final, out.Status)
	}
}

func TestTransferContradictionFailsVisibly(t *testing.T) {
	env := newTransferEnv(t)
	env.OnActivity(a.SubmitTransfer, mock.Anything, ref).Return(pspSays(psp.StatusSettled, ""), nil).Once()
	final := temporal.NewNonRetryableApplicationError("transfer is already final: settled by the PSP after it was refunded", transfer.ErrTypeTransferFinal, nil)
	env.OnActivity(a.SettleTransfer, mock.Anything, ref).Return(final).Once()

	_, err := runTransfer(t, env)
	var appErr *temporal.ApplicationError
	require.ErrorAs(t, err, &appErr)
	require.Equal(t, transfer.ErrTypeFailed, appErr.Type())
	require.Contains(t, appErr.Message(), "settle: TransferFinal: transfer is already final")
}

// A refused request (expired credentials, say) is retried and then fails
// the run visibly; nothing is refunded, the transfer stays open.
func TestTransferRequestRefusedFailsTheRunWithoutRefund(t *testing.T) {
	env := newTransferEnv(t)
	refused := temporal.NewApplicationError("psp refused the request (http 401)", activities.ErrTypePSPRequestRefused)
	final := temporal.NewNonRetryableApplicationError("psp refused the request (http 401)", activities.ErrTypePSPRequestRefused, nil)
	env.OnActivity(a.SubmitTransfer, mock.Anything, ref).Return(transfer.PSPResult{}, refused).Times(3)
	env.OnActivity(a.SubmitTransfer, mock.Anything, ref).Return(transfer.PSPResult{}, final).Once()
	env.OnActivity(a.RefundTransfer, mock.Anything, mock.Anything).Return(nil).Never()

	_, err := runTransfer(t, env)
	var appErr *temporal.ApplicationError
	require.ErrorAs(t, err, &appErr)
	require.Equal(t, transfer.ErrTypeFailed, appErr.Type())
	require.Contains(t, appErr.Error(), activities.ErrTypePSPRequestRefused)
}
