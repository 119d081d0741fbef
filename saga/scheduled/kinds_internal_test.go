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
	require := func(k *pix.Kind) {
		if got := slices.Contains(types, k.TemporalType); got == k.Retryable {
			t.Errorf("%v (%s): listed non-retryable = %v, kind Retryable = %v", k.Err, k.TemporalType, got, k.Retryable)
		}
	}
	for _, k := range pix.Kinds {
		if k.TemporalType != "" {
			require(k)
		}
	}
	if !slices.Contains(types, "ScheduledPixNotFound") {
		t.Error("the saga's own final kind is not in its policy")
	}
}
