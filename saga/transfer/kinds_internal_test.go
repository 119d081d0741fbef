package transfer

import (
	"slices"
	"testing"

	"github.com/pixbank/pix/internal/pix"
)

// TestKindsInRetryPolicies checks that every final business kind is
// non-retryable in every retry policy of the saga, and that the retried
// kinds (AccountNotFound, ...) are in none (workflows' test holds the
// credit's and the devolução's to the same).
func TestKindsInRetryPolicies(t *testing.T) {
	s := DefaultRunSettings()
	policies := map[string][]string{
		"transfer db": databasePolicy.NonRetryableErrorTypes,
		"submit":      s.RetryPolicy().NonRetryableErrorTypes,
		"poll":        s.pollPolicy().NonRetryableErrorTypes,
	}
	if err := pix.CheckRetryPolicies(pix.Kinds, policies); err != nil {
		t.Error(err)
	}
	// The types that are not business kinds stay where they were.
	if !slices.Contains(databasePolicy.NonRetryableErrorTypes, "RefundUnconfirmed") {
		t.Error("transfer db policy lost RefundUnconfirmed")
	}
	if !slices.Contains(s.pollPolicy().NonRetryableErrorTypes, "PSPTransferUnknown") {
		t.Error("poll policy lost PSPTransferUnknown")
	}
}
