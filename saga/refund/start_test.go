package refund_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/mocks"

	"github.com/pixbank/pix/saga/refund"
	"github.com/pixbank/pix/workflows"
)

// A notice for a refund whose run closed between the start and the signal
// (it gave up, or timed out) starts the next run at once, which asks the
// PSP and checks its record: it does not wait for the recheck, which for a
// run open long is minutes away.
func TestNoticeForARunThatClosedMeanwhileStartsTheNextRun(t *testing.T) {
	c := &mocks.Client{}
	in := refund.Input{RefundID: "R1", Settings: refund.DefaultRunSettings()}
	id := refund.WorkflowID(in.RefundID)
	c.On("ExecuteWorkflow", mock.Anything, mock.Anything, refund.WorkflowName, in).
		Return(nil, serviceerror.NewWorkflowExecutionAlreadyStarted("open", "", "")).Once()
	c.On("SignalWorkflow", mock.Anything, id, "", refund.NoticeSignal, refund.Notice{Status: "NAO_REALIZADO"}).
		Return(serviceerror.NewNotFound("closed")).Once()
	c.On("ExecuteWorkflow", mock.Anything, mock.Anything, refund.WorkflowName, in).
		Return(&mocks.WorkflowRun{}, nil).Once()

	started, err := refund.Start(context.Background(), c, "pix-refund", in, workflows.Listing{}, &refund.Notice{Status: "NAO_REALIZADO"})
	require.NoError(t, err)
	require.True(t, started, "the next run began")
	c.AssertExpectations(t)
}
