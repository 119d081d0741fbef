package med_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/pixbank/pix/internal/dict"
	"github.com/pixbank/pix/saga/med"
)

// A kept request's close refused as invalid for its status, read back
// OPEN, and refused as invalid again records dict_invalid_status (as
// documented), not dict_refused. (Attack review r1 LOW-a: the second
// refusal took the refused path, the code unreachable.)
func TestAKeptCloseRefusedInvalidTwiceIsInvalidStatus(t *testing.T) {
	f := newFixture(t)
	a, r, req := disagreedWithRequest(t, f)
	a.dict.invalidCloses = 2
	require.NoError(t, a.closeKept(r))
	require.Equal(t, []string{"closeRefund", "getRefund", "closeRefund"}, a.dict.opsSince(len(a.dict.ops)-3))
	q := f.kept(req.ID)
	require.Equal(t, "OPEN", q.DICTStatus)
	require.NotNil(t, q.CloseProblem)
	require.Equal(t, med.ProblemInvalidStatus, *q.CloseProblem)
}

// The same on a report's refund request close: the run stops visibly
// with dict_invalid_status.
func TestARefundCloseRefusedInvalidTwiceStopsInvalidStatus(t *testing.T) {
	f := newFixture(t)
	a, r := analysed(t, f, dict.Agreed)
	r, err := a.run(a.acts.CloseReport, r)
	require.NoError(t, err)
	req := request(r, 10_000, dict.RefundOpen)
	req.LastModified = time.Now()
	a.dict.refunds[req.ID] = req
	r = f.returnedAndSettled(req, "D12345678202612061200abcdefghijk")
	a.dict.invalidCloses = 2
	_, err = a.run(a.acts.CloseRefundRequest, r)
	var app *temporal.ApplicationError
	require.True(t, errors.As(err, &app) && app.Type() == med.StoppedType, "stopped: %v", err)
	cur := a.current(r)
	require.NotNil(t, cur.DICTProblem)
	require.True(t, strings.HasPrefix(*cur.DICTProblem, med.ProblemInvalidStatus), *cur.DICTProblem)
	require.Nil(t, cur.RefundClosedAt)
}
