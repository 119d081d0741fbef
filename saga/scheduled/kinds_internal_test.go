package scheduled

import (
	"slices"
	"testing"

	"github.com/pixbank/pix/internal/pix"
)

// Every final business kind, this saga's included, is non-retryable in
// the saga's retry policy, and the retried kinds are not.
func TestKindsInRetryPolicy(t *testing.T) {
	types := activityOptions().RetryPolicy.NonRetryableErrorTypes
	if err := pix.CheckRetryPolicies(pix.Kinds, map[string][]string{"activity": types}); err != nil {
		t.Error(err)
	}
	if !slices.Contains(types, "ScheduledPixNotFound") {
		t.Error("the saga's own final kind is not in its policy")
	}
}
