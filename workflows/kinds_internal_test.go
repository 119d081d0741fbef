package workflows

import (
	"slices"
	"testing"

	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/internal/runconf"
)

// TestKindsInRetryPolicies checks that every final business kind is
// non-retryable in every retry policy of the workflows, and that the
// retried kinds (AccountNotFound, ...) are in none.
func TestKindsInRetryPolicies(t *testing.T) {
	policies := map[string][]string{
		"credit":       creditPolicy(runconf.DefaultRetrySettings()).NonRetryableErrorTypes,
		"mark failed":  markFailedPolicy.NonRetryableErrorTypes,
		"NonRetryable": NonRetryableCreditErrors,
		"psp calls":    runconf.DefaultPSPCalls().RetryPolicy().NonRetryableErrorTypes,
	}
	// The kinds of the sagas of this package and the shared ones. A saga
	// of its own package adds its kinds to pix.Kinds when it is linked
	// (pix.DeclareKinds), after these policies were built: its activities
	// alone raise them, and its own test holds its policies to them
	// (saga/scheduled/kinds_internal_test.go, saga/transfer's, saga/refund's).
	if err := pix.CheckRetryPolicies(slices.Concat(pix.CreditKinds, pix.TransferKinds, pix.RefundKinds, pix.SharedKinds), policies); err != nil {
		t.Error(err)
	}
}
