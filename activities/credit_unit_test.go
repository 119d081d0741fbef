package activities_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/pixbank/pix/activities"
	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/internal/pix"
)

// The credit activities' decisions over a scripted store (the unit tier):
// which errors are which types and retried or not, that a failed attempt
// is recorded with its number, and what MarkCreditFailed answers.

// scriptedCredits answers Credit and MarkFailed as told and records the
// failed attempts.
type scriptedCredits struct {
	activities.Store // nil: the methods below are the only ones there
	mu               sync.Mutex
	credit           db.CreditOutcome
	creditErr        error
	marked           db.MarkFailedOutcome
	recorded         []string // "attempt: reason"
}

func (s *scriptedCredits) Credit(context.Context, string, int, int) (db.CreditOutcome, error) {
	return s.credit, s.creditErr
}

func (s *scriptedCredits) RecordAttemptFailure(_ context.Context, _ string, _ int, attempt int, reason string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.recorded = append(s.recorded, fmt.Sprintf("%d: %s", attempt, reason))
	return nil
}

func (s *scriptedCredits) MarkFailed(context.Context, string, int, int, string) (db.MarkFailedOutcome, error) {
	return s.marked, nil
}

func creditUnit(s *scriptedCredits) *testsuite.TestActivityEnvironment {
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	env.RegisterActivity(&activities.Activities{Store: s, Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))})
	return env
}

func TestUnitCreditAccountDecisions(t *testing.T) {
	t.Run("credited", func(t *testing.T) {
		s := &scriptedCredits{credit: db.CreditOutcome{AccountID: "acc-1", AmountCents: 700, Credited: true, BalanceAfter: 800}}
		val, err := creditUnit(s).ExecuteActivity(a.CreditAccount, activities.CreditInput{EndToEndID: e2e})
		require.NoError(t, err)
		var res activities.CreditResult
		require.NoError(t, val.Get(&res))
		require.Equal(t, activities.CreditResult{AccountID: "acc-1", AmountCents: 700, Credited: true, BalanceAfter: 800}, res)
		require.Empty(t, s.recorded)
	})
	for name, c := range map[string]struct {
		err       error
		wantType  string
		retryable bool // the activity error itself (the policy lists the final types)
	}{
		"unknown account":   {fmt.Errorf("%w: acc-9", pix.ErrAccountNotFound), activities.ErrTypeAccountNotFound, true},
		"closed account":    {fmt.Errorf("%w: acc-9", pix.ErrAccountClosed), activities.ErrTypeAccountClosed, true},
		"superseded drive":  {fmt.Errorf("%w: drive 1", pix.ErrSuperseded), activities.ErrTypeSuperseded, true},
		"database gone":     {fmt.Errorf("%w: connection refused", pix.ErrUnavailable), activities.ErrTypeTechnicalFailure, true},
		"an unknown error":  {errors.New("boom"), activities.ErrTypeTechnicalFailure, true},
		"payload elsewhere": {pix.ErrPayloadMismatch, activities.ErrTypePayloadMismatch, true},
	} {
		t.Run(name, func(t *testing.T) {
			s := &scriptedCredits{creditErr: c.err}
			_, err := creditUnit(s).ExecuteActivity(a.CreditAccount, activities.CreditInput{EndToEndID: e2e, PriorAttempts: 3})
			var appErr *temporal.ApplicationError
			require.True(t, errors.As(err, &appErr), "got %v", err)
			require.Equal(t, c.wantType, appErr.Type())
			require.Equal(t, c.retryable, !appErr.NonRetryable())
			require.Len(t, s.recorded, 1, "the failed attempt is recorded on the row")
			require.Contains(t, s.recorded[0], "4: ", "prior attempts + this attempt")
		})
	}
}

func TestUnitMarkCreditFailedAnswersWhatItFound(t *testing.T) {
	for _, status := range []string{pix.StatusFailed, pix.StatusDone, pix.StatusSuperseded} {
		s := &scriptedCredits{marked: db.MarkFailedOutcome{Status: status, Marked: status == pix.StatusFailed}}
		val, err := creditUnit(s).ExecuteActivity(a.MarkCreditFailed, activities.MarkFailedInput{EndToEndID: e2e, Attempts: 5, Reason: "AccountNotFound: x"})
		require.NoError(t, err)
		var res activities.MarkFailedResult
		require.NoError(t, val.Get(&res))
		require.Equal(t, status, res.Status)
	}
}
