package activities_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/pixbank/pix/activities"
	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/db/dbtest"
	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/internal/psp"
)

// scriptedPSP answers Submit and Status from scripts, one answer per call
// (the last one repeats), and counts the calls.
type scriptedPSP struct {
	mu       sync.Mutex
	submits  []pspAnswer
	statuses []pspAnswer
	calls    map[string]int
}

type pspAnswer struct {
	status psp.Status
	reason string
	err    error
}

func (p *scriptedPSP) next(kind string, script []pspAnswer, e2e string) (psp.Result, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.calls == nil {
		p.calls = map[string]int{}
	}
	n := p.calls[kind]
	p.calls[kind]++
	if len(script) == 0 {
		return psp.Result{}, fmt.Errorf("%w: no %s scripted", psp.ErrTransient, kind)
	}
	a := script[min(n, len(script)-1)]
	if a.err != nil {
		return psp.Result{}, a.err
	}
	return psp.Result{EndToEndID: e2e, Status: a.status, Reason: a.reason}, nil
}

func (p *scriptedPSP) Submit(_ context.Context, t psp.Transfer) (psp.Result, error) {
	return p.next("submit", p.submits, t.EndToEndID)
}

func (p *scriptedPSP) Status(_ context.Context, e2e string) (psp.Result, error) {
	return p.next("status", p.statuses, e2e)
}

func (p *scriptedPSP) count(kind string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.calls[kind]
}

func transferSetup(t *testing.T, fake *scriptedPSP) (*db.Store, *testsuite.TestActivityEnvironment, pix.Transfer) {
	t.Helper()
	ctx := context.Background()
	s := dbtest.New(t)
	_, err := s.CreateAccount(ctx, db.NewAccount{ID: "acc-1", OwnerName: "A", OpeningBalanceCents: 10_000})
	require.NoError(t, err)
	res, _, err := s.ReserveKey(ctx, uuid.New(), "h", db.KeyPolicy{LockFor: 30 * time.Second, KeepFor: time.Hour})
	require.NoError(t, err)
	tr, err := s.CreateTransfer(ctx, *res, db.NewTransfer{ID: uuid.New(), EndToEndID: pix.NewEndToEndID("12345678", time.Now()),
		TransferRequest: pix.TransferRequest{AccountID: "acc-1", AmountCents: 1_000, PixKey: "maria@example.com"}},
		func(pix.Transfer) ([]byte, error) { return []byte(`{}`), nil })
	require.NoError(t, err)
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	env.RegisterActivity(&activities.Activities{Store: s, PSP: fake, Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))})
	return s, env, tr
}

func submit(t *testing.T, env *testsuite.TestActivityEnvironment, tr pix.Transfer) (activities.PSPResult, error) {
	t.Helper()
	val, err := env.ExecuteActivity(a.SubmitTransfer, activities.TransferRef{TransferID: tr.ID})
	if err != nil {
		return activities.PSPResult{}, err
	}
	var res activities.PSPResult
	require.NoError(t, val.Get(&res))
	return res, nil
}

// Defect 1: a resubmission refused for a reason about our request or our
// credentials (the PSP may well hold the transfer from an earlier
// submission) is never taken for a rejection: no result that the workflow
// would refund, an error it retries.
func TestRefusedRequestIsNeverARejection(t *testing.T) {
	for _, code := range []int{400, 401, 403, 404, 405, 413, 415, 422} {
		t.Run(fmt.Sprint(code), func(t *testing.T) {
			fake := &scriptedPSP{submits: []pspAnswer{{err: &psp.RequestError{StatusCode: code, Message: "refused"}}}}
			s, env, tr := transferSetup(t, fake)
			res, err := submit(t, env, tr)
			require.Error(t, err, "got a result instead: %+v", res)
			var appErr *temporal.ApplicationError
			require.True(t, errors.As(err, &appErr), "%v", err)
			require.Equal(t, "PSPRequestRefused", appErr.Type())
			got, err := s.GetTransfer(context.Background(), uuid.MustParse(tr.ID))
			require.NoError(t, err)
			require.Equal(t, pix.TransferDebited, got.Status)
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
	require.Equal(t, 1, fake.count("status"))
	got, err := s.GetTransfer(context.Background(), uuid.MustParse(tr.ID))
	require.NoError(t, err)
	require.Equal(t, pix.TransferSubmitted, got.Status)
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
			require.Equal(t, 1, fake.count("status"))
		})
	}
}
