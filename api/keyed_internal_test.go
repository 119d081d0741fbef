package api

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"
)

// A devolução's fingerprint is what it was before OperationHash: the keys
// recorded with it still match their retries.
func TestRefundFingerprintIsUnchanged(t *testing.T) {
	body := []byte(`{"amount_cents": 100, "reason": "x"}`)
	e2e := "E1234567820261129120000000000001"
	sum := sha256.Sum256([]byte("refund\n" + e2e + "\n" + requestHash(body)))
	if got, want := OperationHash("refund", e2e)(body), hex.EncodeToString(sum[:]); got != want {
		t.Fatalf("refund fingerprint changed: %s, was %s", got, want)
	}
	if OperationHash("pix-scheduled")(body) == requestHash(body) {
		t.Fatal("an operation's fingerprint is the bare body's (POST /pix's)")
	}
}
