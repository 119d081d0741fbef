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
	if err := pix.CheckRetryPolicies(pix.Kinds, policies); err != nil {
		t.Error(err)
	}
	// The types that are not business kinds stay where they were.
	if !slices.Contains(databasePolicy.NonRetryableErrorTypes, "RefundUnconfirmed") {
		t.Error("refund db policy lost RefundUnconfirmed")
	}
}
