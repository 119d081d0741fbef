package sagatest

import (
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/pixbank/pix/activities"
	"github.com/pixbank/pix/internal/psp/psptest"
)

// Activities is an activity environment of Temporal's test suite (no
// server) with acts registered: a saga's struct of activities (each
// exported method an activity) or its methods.
func Activities(acts ...any) *testsuite.TestActivityEnvironment {
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	for _, a := range acts {
		env.RegisterActivity(a)
	}
	return env
}

// Run runs activity on env with args and decodes its result into T; err
// is the activity's, T's zero value with it.
func Run[T any](t testing.TB, env *testsuite.TestActivityEnvironment, activity any, args ...any) (T, error) {
	t.Helper()
	var out T
	v, err := env.ExecuteActivity(activity, args...)
	if err != nil {
		return out, err
	}
	require.NoError(t, v.Get(&out))
	return out, nil
}

// ErrorType is the type of err's Temporal application error (what a
// saga's retry policies and workflow decide on); the test fails when err
// holds none.
func ErrorType(t testing.TB, err error) string {
	t.Helper()
	var appErr *temporal.ApplicationError
	require.ErrorAs(t, err, &appErr)
	return appErr.Type()
}

// EachTokenFailure runs test, as a subtest, for each way the PSP's token
// endpoint fails a call (psptest.TokenFailures), on a FakePSP answering so,
// with the type of the activity error every call must then end in:
// PSPRequestRefused for our client refused (counted, alerting),
// PSPUnavailable for the endpoint down. No call reaches the API: no money
// may move.
func EachTokenFailure(t *testing.T, test func(t *testing.T, fake *psptest.FakePSP, want string)) {
	for _, c := range psptest.TokenFailures {
		t.Run(c.Name, func(t *testing.T) {
			fake := psptest.NewFakePSP(t)
			fake.TokenAnswer = c.Answer
			want := activities.ErrTypePSPUnavailable
			if c.Refused {
				want = activities.ErrTypePSPRequestRefused
			}
			test(t, fake, want)
		})
	}
}
