package refund

import (
	"slices"
	"testing"

	"github.com/pixbank/pix/internal/pix"
)

// TestKindsInRetryPolicies checks that every final business kind is
// non-retryable in every retry policy of the saga, and that the retried
// kinds (AccountNotFound, ...) are in none (workflows' test holds the
// credit's to the same; its "refund db" policy moved here).
func TestKindsInRetryPolicies(t *testing.T) {
	s := DefaultRunSettings()
	policies := map[string][]string{
		"refund db": databasePolicy.NonRetryableErrorTypes,
		"psp":       s.RetryPolicy(ErrTypePSPRefundUnknown, ErrTypeReversalUnconfirmed).NonRetryableErrorTypes,
	}
	for _, k := range pix.Kinds {
		if k.TemporalType == "" {
			continue
		}
		for name, types := range policies {
			if got := slices.Contains(types, k.TemporalType); got == k.Retryable {
				t.Errorf("%v (%s): listed non-retryable in the %s policy = %v, kind Retryable = %v", k.Err, k.TemporalType, name, got, k.Retryable)
			}
		}
	}
	// The types that are not business kinds stay where they were.
	if !slices.Contains(databasePolicy.NonRetryableErrorTypes, "RefundUnconfirmed") {
		t.Error("refund db policy lost RefundUnconfirmed")
	}
}
