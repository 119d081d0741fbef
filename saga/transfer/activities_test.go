package transfer_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/testsuite"

	"github.com/pixbank/pix/activities"
	"github.com/pixbank/pix/db/dbtest"
	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/internal/psp"
	"github.com/pixbank/pix/internal/psp/psptest"
	"github.com/pixbank/pix/saga/sagatest"
	"github.com/pixbank/pix/saga/transfer"
)

// a names the activities (never called).
var a *transfer.Activities

// scriptedPSP answers Submit and Status from scripts, one answer per call
// (the last one repeats), and counts the calls.
type scriptedPSP struct {
	psptest.Calls
	submits  []pspAnswer
	statuses []pspAnswer
}

type pspAnswer struct {
	status psp.Status
	reason string
	err    error
	amount int64 // what the PSP says it holds, when it says (0: not said)
}

func (p *scriptedPSP) next(kind string, script []pspAnswer, e2e string) (psp.Result, error) {
	a, err := psptest.Next(&p.Calls, kind, script)
	if err == nil {
		err = a.err
	}
	if err != nil {
		return psp.Result{}, err
	}
	return psp.Result{EndToEndID: e2e, Status: a.status, Reason: a.reason, AmountCents: a.amount}, nil
}

func (p *scriptedPSP) Submit(_ context.Context, t psp.Transfer) (psp.Result, error) {
	return p.next("submit", p.submits, t.EndToEndID)
}

func (p *scriptedPSP) Status(_ context.Context, e2e string) (psp.Result, error) {
	return p.next("status", p.statuses, e2e)
}

// transferBooks is what the transfer tests read back: the activities'
// store, and the accounts.
type transferBooks interface {
	transfer.ActivityStore
	GetAccount(ctx context.Context, id string) (pix.Account, error)
}

// transferSetup debits one transfer of 1,000 from acc-1 (10,000) and
// returns the activity environment over it: in PostgreSQL, or, in the unit
// tier (-short), in memory (memTransfers), so that the activities'
// decisions are tested without a database too.
func transferSetup(t *testing.T, fake psp.Client) (transferBooks, *testsuite.TestActivityEnvironment, pix.Transfer) {
	t.Helper()
	var books transferBooks
	var tr pix.Transfer
	if testing.Short() {
		m := newMemTransfers("acc-1", 10_000, 1_000)
		books, tr = m, m.t
	} else {
		s := newStore(t)
		dbtest.OpenAccount(t, s.Store, "acc-1", 10_000)
		books, tr = s, debit(t, s, "acc-1", 1_000)
	}
	return books, sagatest.Activities(&transfer.Activities{Store: books, PSP: fake, Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))}), tr
}

func submit(t *testing.T, env *testsuite.TestActivityEnvironment, tr pix.Transfer) (transfer.PSPResult, error) {
	t.Helper()
	return sagatest.Run[transfer.PSPResult](t, env, a.SubmitTransfer, transfer.Ref{TransferID: tr.ID})
}

// submitFails submits the transfer to fake: no result (that the workflow
// would act on), an error of type want, the transfer still debited.
func submitFails(t *testing.T, fake *scriptedPSP, want string) {
	t.Helper()
	s, env, tr := transferSetup(t, fake)
	res, err := submit(t, env, tr)
	require.Error(t, err, "got a result instead: %+v", res)
	require.Equal(t, want, sagatest.ErrorType(t, err))
	require.Equal(t, pix.TransferDebited, statusOf(t, s, tr))
}

// statusOf is tr's status as the store holds it.
func statusOf(t *testing.T, s transferBooks, tr pix.Transfer) string {
	t.Helper()
	got, err := s.GetTransfer(context.Background(), uuid.MustParse(tr.ID))
	require.NoError(t, err)
	return got.Status
}

// Defect 1: a resubmission refused for a reason about our request or our
// credentials (the PSP may well hold the transfer from an earlier
// submission) is never taken for a rejection: no result that the workflow
// would refund, an error it retries.
func TestRefusedRequestIsNeverARejection(t *testing.T) {
	refusals := map[string]*psp.RequestError{"409 end_to_end_id_reused": {StatusCode: 409, Code: psp.CodeEndToEndIDReused, Message: "another transfer's id"}}
	for _, code := range []int{400, 401, 403, 404, 405, 413, 415, 422} {
		refusals[fmt.Sprint(code)] = &psp.RequestError{StatusCode: code, Message: "refused"}
	}
	for name, refusal := range refusals {
		t.Run(name, func(t *testing.T) {
			submitFails(t, &scriptedPSP{submits: []pspAnswer{{err: refusal}}}, activities.ErrTypePSPRequestRefused)
		})
	}
}

// 409 means the PSP already has a transfer under this end_to_end_id: its
// status is asked, and that is the answer.
func TestDuplicateSubmissionAsksTheStatus(t *testing.T) {
	fake := &scriptedPSP{
		submits:  []pspAnswer{{err: &psp.RequestError{StatusCode: 409, Code: "duplicate_transfer", Message: "already have it"}}},
		statuses: []pspAnswer{{status: psp.StatusSettled}},
	}
	s, env, tr := transferSetup(t, fake)
	res, err := submit(t, env, tr)
	require.NoError(t, err)
	require.Equal(t, string(psp.StatusSettled), res.Status)
	require.Equal(t, 1, fake.Count("status"))
	require.Equal(t, pix.TransferSubmitted, statusOf(t, s, tr))
}

// A rejection is confirmed by the PSP's status before the workflow may
// refund: the status is the PSP's record of the transfer, which an earlier
// submission whose answer was lost may have made settled or pending.
func TestRejectionIsConfirmedByTheStatus(t *testing.T) {
	cases := []struct {
		name   string
		status pspAnswer
		want   string // "" for an error
	}{
		{"confirmed", pspAnswer{status: psp.StatusRejected, reason: "receiver account closed"}, string(psp.StatusRejected)},
		{"settled meanwhile", pspAnswer{status: psp.StatusSettled}, string(psp.StatusSettled)},
		{"pending", pspAnswer{status: psp.StatusPending}, string(psp.StatusPending)},
		{"status unknown", pspAnswer{err: fmt.Errorf("psp status: %w", psp.ErrNotFound)}, ""},
		{"status unavailable", pspAnswer{err: fmt.Errorf("psp status: %w", psp.ErrTransient)}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fake := &scriptedPSP{
				submits:  []pspAnswer{{status: psp.StatusRejected, reason: "receiver account closed"}},
				statuses: []pspAnswer{c.status},
			}
			_, env, tr := transferSetup(t, fake)
			res, err := submit(t, env, tr)
			if c.want == "" {
				require.Error(t, err, "got a result instead: %+v", res)
				return
			}
			require.NoError(t, err)
			require.Equal(t, c.want, res.Status)
			require.Equal(t, 1, fake.Count("status"))
		})
	}
}

// The PSP's record under our end_to_end_id names another amount: it is
// another transfer's, and its status is never adopted (neither settled nor
// refunded on it).
func TestStatusOfAnotherTransferIsNeverAdopted(t *testing.T) {
	for _, status := range []psp.Status{psp.StatusSettled, psp.StatusRejected} {
		t.Run(string(status), func(t *testing.T) {
			submitFails(t, &scriptedPSP{
				submits:  []pspAnswer{{err: &psp.RequestError{StatusCode: 409, Code: "duplicate_transfer"}}},
				statuses: []pspAnswer{{status: status, amount: 5_000}},
			}, transfer.ErrTypePSPTransferMismatch)
		})
	}
}

// The compensation checks the PSP's record for itself: it refunds only a
// transfer the PSP holds as rejected, whatever decided the refund.
func TestRefundOnlyOnTheRecordOfARejection(t *testing.T) {
	cases := []struct {
		record   pspAnswer
		refunded bool
		errType  string
	}{
		{pspAnswer{status: psp.StatusRejected, reason: "receiver account closed"}, true, ""},
		{pspAnswer{status: psp.StatusSettled}, false, transfer.ErrTypeRefundUnconfirmed},
		{pspAnswer{status: psp.StatusPending}, false, transfer.ErrTypeRefundUnconfirmed},
		{pspAnswer{err: fmt.Errorf("psp status: %w", psp.ErrNotFound)}, false, transfer.ErrTypeRejectionUnconfirmed},
		{pspAnswer{status: psp.StatusRejected, amount: 9_999}, false, transfer.ErrTypePSPTransferMismatch},
		{pspAnswer{err: fmt.Errorf("psp status: %w", psp.ErrTransient)}, false, activities.ErrTypePSPUnavailable},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s %v %d", c.record.status, c.record.err, c.record.amount), func(t *testing.T) {
			fake := &scriptedPSP{statuses: []pspAnswer{c.record}}
			s, env, tr := transferSetup(t, fake)
			_, err := env.ExecuteActivity(a.RefundTransfer, transfer.RefundInput{TransferID: tr.ID})
			got, gerr := s.GetTransfer(context.Background(), uuid.MustParse(tr.ID))
			require.NoError(t, gerr)
			acc, aerr := s.GetAccount(context.Background(), "acc-1")
			require.NoError(t, aerr)
			if c.refunded {
				require.NoError(t, err)
				require.Equal(t, pix.TransferRefunded, got.Status)
				require.Equal(t, "receiver account closed", *got.FailureReason, "the PSP's reason when the saga had none")
				require.EqualValues(t, 10_000, acc.BalanceCents)
				return
			}
			require.Equal(t, c.errType, sagatest.ErrorType(t, err))
			require.Equal(t, pix.TransferDebited, got.Status)
			require.EqualValues(t, 9_000, acc.BalanceCents, "nothing refunded")
		})
	}
}

// A settled answer to the submission is taken only from the PSP's record
// of our transfer, and a submission answered with another transfer's
// details is never adopted.
func TestFinalOrForeignAnswersToTheSubmissionAreChecked(t *testing.T) {
	fake := &scriptedPSP{submits: []pspAnswer{{status: psp.StatusSettled}}, statuses: []pspAnswer{{status: psp.StatusPending}}}
	_, env, tr := transferSetup(t, fake)
	res, err := submit(t, env, tr)
	require.NoError(t, err)
	require.Equal(t, string(psp.StatusPending), res.Status, "the record decides")
	require.Equal(t, 1, fake.Count("status"))

	foreign := &scriptedPSP{submits: []pspAnswer{{status: psp.StatusSettled, amount: 77}}}
	_, env, tr = transferSetup(t, foreign)
	_, err = submit(t, env, tr)
	require.Equal(t, transfer.ErrTypePSPTransferMismatch, sagatest.ErrorType(t, err))
}
