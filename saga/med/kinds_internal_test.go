package med

import (
	"errors"
	"slices"
	"testing"
	"time"

	"go.temporal.io/sdk/temporal"

	"github.com/pixbank/pix/internal/pix"
)

// Review r14 L1: the saga's final errors are declared final where they are
// raised (their Temporal type: StoppedType, NotYetType, the saga's Kinds)
// and again in the activities' retry policy (activityOptions), which is
// what Temporal reads. This holds the two together: each error the
// activities raise as final is not retried by the policy (listed there, or
// raised non-retryable), and the retried kinds are not listed. Removing
// NotYetType from the policy fails it (the "not yet" retried with backoff
// again, what attack review r12 LOW-1 fixed).
func TestFinalErrorsAreNotRetriedByThePolicy(t *testing.T) {
	types := activityOptions().RetryPolicy.NonRetryableErrorTypes
	if err := pix.CheckRetryPolicies(pix.Kinds, map[string][]string{"activity": types}); err != nil {
		t.Error(err)
	}
	notYet := notYetError(&NotYetError{Left: 5 * time.Second})
	var app *temporal.ApplicationError
	if !errors.As(notYet, &app) || app.Type() != NotYetType {
		t.Fatalf("a NotYetError is raised as %v, not as %s", notYet, NotYetType)
	}
	var d NotYet
	if err := app.Details(&d); err != nil || d.Left != 5*time.Second {
		t.Errorf("its details: %+v, %v; want Left 5s", d, err)
	}
	if !app.NonRetryable() && !slices.Contains(types, NotYetType) {
		t.Errorf("%s is raised retryable and the activities' policy retries it (%v)", NotYetType, types)
	}
	if !slices.Contains(types, StoppedType) {
		t.Errorf("%s is not listed non-retryable in the activities' policy (%v)", StoppedType, types)
	}
}
