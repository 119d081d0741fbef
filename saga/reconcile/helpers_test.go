package reconcile_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/db/dbtest"
	"github.com/pixbank/pix/internal/pix"
	refundsaga "github.com/pixbank/pix/saga/refund"
)

// A devolução of a PIX, as package db's tests run one (db/refunds_test.go).
// It stays out of dbtest: dbtest importing the refund saga would bring the
// saga's imports (api, workflows) into every test that uses dbtest. The
// PIX, its notice and its credit are dbtest's: E2EID, Notice, CreditNth.

// anyone may refund any account.
func anyone(string) bool { return true }

// refund runs one devolução of the PIX under a fresh key.
func refund(t *testing.T, s *db.Store, e2e string, amount int64, mayRefund func(string) bool) (pix.Refund, error) {
	t.Helper()
	return refundsaga.NewStore(s).CreateRefund(context.Background(), *dbtest.Reserve(t, s, "test-caller"), db.NewRefund{ID: pix.NewRefundID(),
		RefundRequest: pix.RefundRequest{EndToEndID: e2e, AmountCents: amount, Reason: "devolução"}},
		mayRefund, func(r pix.Refund) ([]byte, error) { return json.Marshal(r) })
}
