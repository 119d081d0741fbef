package pix_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/pixbank/pix/internal/pix"
)

// TestKindsConsistent walks the declaration of every business error: each
// mapping is complete and unique, and matching a wrapped error finds it.
func TestKindsConsistent(t *testing.T) {
	sentinels := map[error]bool{}
	codes := map[string]bool{}
	types := map[string]bool{}
	for _, k := range pix.Kinds {
		name := fmt.Sprintf("%v", k.Err)
		if k.Err == nil {
			t.Fatalf("kind without a sentinel: %+v", k)
		}
		if sentinels[k.Err] {
			t.Errorf("%s: declared twice", name)
		}
		sentinels[k.Err] = true
		if (k.Status == 0) != (k.Code == "") || (k.Status == 0) != (k.Message == "") {
			t.Errorf("%s: status %d, code %q and message %q must be all set or all empty", name, k.Status, k.Code, k.Message)
		}
		if k.Status != 0 {
			if k.Refusal && (k.Status < 400 || k.Status >= 500) {
				t.Errorf("%s: a refusal answers 4xx, not %d", name, k.Status)
			}
			if !k.Refusal && k.Status < 500 {
				t.Errorf("%s: a technical failure answers 5xx, not %d", name, k.Status)
			}
			if codes[k.Code] {
				t.Errorf("%s: code %q used twice", name, k.Code)
			}
			codes[k.Code] = true
		}
		if k.MessageWithCause && k.Status == 0 {
			t.Errorf("%s: MessageWithCause without an HTTP answer", name)
		}
		if k.TemporalType != "" {
			if types[k.TemporalType] {
				t.Errorf("%s: temporal type %q used twice", name, k.TemporalType)
			}
			types[k.TemporalType] = true
		} else if k.Retryable {
			t.Errorf("%s: Retryable without a temporal type (technical failures are retried anyway)", name)
		}
		if k.Status == 0 && k.TemporalType == "" {
			t.Errorf("%s: neither answered by the API nor raised by activities", name)
		}
		if got := pix.IsRefusal(fmt.Errorf("wrapped: %w", k.Err)); got != k.Refusal {
			t.Errorf("%s: IsRefusal = %v, want %v", name, got, k.Refusal)
		}
		if got := pix.KindOf(fmt.Errorf("wrapped: %w", k.Err)); got != k {
			t.Errorf("%s: KindOf of the wrapped sentinel is %v", name, got)
		}
		if got := pix.TemporalType(k.Err); got != k.TemporalType {
			t.Errorf("%s: TemporalType = %q, want %q", name, got, k.TemporalType)
		}
	}
	nonRetryable := map[string]bool{}
	for _, typ := range pix.NonRetryableTypes() {
		nonRetryable[typ] = true
	}
	for _, k := range pix.Kinds {
		if k.TemporalType != "" && nonRetryable[k.TemporalType] == k.Retryable {
			t.Errorf("%v: in NonRetryableTypes = %v, Retryable = %v", k.Err, nonRetryable[k.TemporalType], k.Retryable)
		}
	}
	if pix.KindOf(nil) != nil || pix.KindOf(fmt.Errorf("other")) != nil {
		t.Error("KindOf of an error of no kind must be nil")
	}
}

// TestTemporalTypesPinned pins the ApplicationError types and their
// retryability: recorded histories and running workflows depend on them.
func TestTemporalTypesPinned(t *testing.T) {
	want := map[error]struct {
		typ       string
		retryable bool
	}{
		pix.ErrAccountNotFound:   {"AccountNotFound", true},
		pix.ErrPixKeyNotFound:    {"PixKeyNotFound", true},
		pix.ErrChargeNotFound:    {"ChargeNotFound", true},
		pix.ErrAccountClosed:     {"AccountClosed", false},
		pix.ErrCreditNotFound:    {"InboxMessageNotFound", false},
		pix.ErrNotPending:        {"InboxMessageNotPending", false},
		pix.ErrPayloadMismatch:   {"PayloadMismatch", false},
		pix.ErrSuperseded:        {"CreditSuperseded", false},
		pix.ErrBalanceOverflow:   {"BalanceOverflow", false},
		pix.ErrTransferNotFound:  {"TransferNotFound", false},
		pix.ErrTransferFinal:     {"TransferFinal", false},
		pix.ErrHoldRefReused:     {"HoldRefReused", false},
		pix.ErrHoldNotFound:      {"HoldNotFound", false},
		pix.ErrHoldEnded:         {"HoldEnded", false},
		pix.ErrHoldExceedsCredit: {"HoldExceedsCredit", false},
		pix.ErrHoldNotCapturable: {"HoldNotCapturable", false},
	}
	for _, k := range pix.Kinds {
		w, ok := want[k.Err]
		if !ok {
			if k.TemporalType != "" {
				t.Logf("%v: type %q not pinned here (a new kind?)", k.Err, k.TemporalType)
			}
			continue
		}
		if k.TemporalType != w.typ || k.Retryable != w.retryable {
			t.Errorf("%v: type %q retryable %v, want %q %v", k.Err, k.TemporalType, k.Retryable, w.typ, w.retryable)
		}
	}
}

// A policy that misses a final kind, or lists a retried one, is named with
// the kind; one that lists every final kind and no retried one passes.
func TestCheckRetryPolicies(t *testing.T) {
	final := &pix.Kind{Err: errors.New("final"), TemporalType: "Final"}
	retried := &pix.Kind{Err: errors.New("retried"), TemporalType: "Retried", Retryable: true}
	untyped := &pix.Kind{Err: errors.New("untyped")}
	kinds := []*pix.Kind{final, retried, untyped}
	if err := pix.CheckRetryPolicies(kinds, map[string][]string{"a": {"Final"}, "b": {"Other", "Final"}}); err != nil {
		t.Fatal(err)
	}
	err := pix.CheckRetryPolicies(kinds, map[string][]string{"a": {}, "b": {"Final", "Retried"}})
	want := "final (Final): listed non-retryable in the a policy = false, kind Retryable = false\n" +
		"retried (Retried): listed non-retryable in the b policy = true, kind Retryable = true"
	if err == nil || err.Error() != want {
		t.Fatalf("got %v, want %s", err, want)
	}
}
