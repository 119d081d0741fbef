package activities_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/pixbank/pix/activities"
	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/db/dbtest"
	"github.com/pixbank/pix/internal/pix"
)

const e2e = "E1234567820261129120000000000042"

func setup(t *testing.T, account string) (*db.Store, *testsuite.TestActivityEnvironment) {
	t.Helper()
	s := dbtest.New(t)
	payload, _ := json.Marshal(map[string]any{"end_to_end_id": e2e})
	_, err := s.Receive(context.Background(), pix.Notification{EndToEndID: e2e, AccountID: account, AmountCents: 700, Payload: payload})
	require.NoError(t, err)
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	env.RegisterActivity(&activities.Activities{Store: s, Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))})
	return s, env
}

var a *activities.Activities

func TestCreditAccountTwiceCreditsOnce(t *testing.T) {
	s, env := setup(t, "acc-1")
	_, err := s.CreateAccount(context.Background(), db.NewAccount{ID: "acc-1", OwnerName: "A", OpeningBalanceCents: 100})
	require.NoError(t, err)

	val, err := env.ExecuteActivity(a.CreditAccount, activities.CreditInput{EndToEndID: e2e})
	require.NoError(t, err)
	var res activities.CreditResult
	require.NoError(t, val.Get(&res))
	require.Equal(t, activities.CreditResult{AccountID: "acc-1", AmountCents: 700, Credited: true, BalanceAfter: 800}, res)

	// Temporal may run an activity again after it committed.
	val, err = env.ExecuteActivity(a.CreditAccount, activities.CreditInput{EndToEndID: e2e})
	require.NoError(t, err)
	require.NoError(t, val.Get(&res))
	require.False(t, res.Credited)

	acc, err := s.GetAccount(context.Background(), "acc-1")
	require.NoError(t, err)
	require.EqualValues(t, 800, acc.BalanceCents)
}

func TestCreditAccountUnknownAccountIsRetryableAndRecorded(t *testing.T) {
	s, env := setup(t, "acc-nobody")
	_, err := env.ExecuteActivity(a.CreditAccount, activities.CreditInput{EndToEndID: e2e, PriorAttempts: 3})
	var appErr *temporal.ApplicationError
	require.True(t, errors.As(err, &appErr), "got %v", err)
	require.Equal(t, activities.ErrTypeAccountNotFound, appErr.Type())
	require.False(t, appErr.NonRetryable())

	c, err := s.GetCredit(context.Background(), e2e)
	require.NoError(t, err)
	require.Equal(t, 4, c.Attempts, "prior attempts + this attempt")
	require.Contains(t, *c.LastError, "AccountNotFound")
}

func TestCreditAccountClosedAccountHasItsType(t *testing.T) {
	s, env := setup(t, "acc-closed")
	_, err := s.CreateAccount(context.Background(), db.NewAccount{ID: "acc-closed", OwnerName: "C"})
	require.NoError(t, err)
	require.NoError(t, s.CloseAccount(context.Background(), "acc-closed"))
	_, err = env.ExecuteActivity(a.CreditAccount, activities.CreditInput{EndToEndID: e2e})
	var appErr *temporal.ApplicationError
	require.True(t, errors.As(err, &appErr), "got %v", err)
	require.Equal(t, activities.ErrTypeAccountClosed, appErr.Type())
}

func TestMarkCreditFailed(t *testing.T) {
	s, env := setup(t, "acc-nobody")
	val, err := env.ExecuteActivity(a.MarkCreditFailed, activities.MarkFailedInput{EndToEndID: e2e, Attempts: 5, Reason: "AccountNotFound: acc-nobody"})
	require.NoError(t, err)
	var res activities.MarkFailedResult
	require.NoError(t, val.Get(&res))
	require.Equal(t, pix.StatusFailed, res.Status)
	c, err := s.GetCredit(context.Background(), e2e)
	require.NoError(t, err)
	require.Equal(t, pix.StatusFailed, c.Status)
	require.Equal(t, 5, c.Attempts)
	require.NotNil(t, c.ProcessedAt)
}
