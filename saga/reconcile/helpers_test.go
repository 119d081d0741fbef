package reconcile_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/db/dbtest"
	"github.com/pixbank/pix/internal/pix"
	refundsaga "github.com/pixbank/pix/saga/refund"
)

// The fixtures the reconciliation's tests used in package db's tests,
// where they were: a PIX's id, its notice, its credit, a devolução of it.

// e2eID is the n-th PIX's end_to_end_id.
func e2eID(n int) string { return fmt.Sprintf("E12345678202611291200%011d", n) }

// note is the notice of a PIX of amount to account.
func note(id, account string, amount int64) pix.Notification {
	payload, _ := json.Marshal(map[string]any{"end_to_end_id": id, "account_id": account, "amount_cents": amount})
	return pix.Notification{EndToEndID: id, AccountID: account, AmountCents: amount, Payload: payload}
}

// creditPIX credits amount to account under e2eID(n), through the
// credit's path (dbtest.CreditPIX).
func creditPIX(t *testing.T, s *db.Store, n int, account string, amount int64) string {
	t.Helper()
	return dbtest.CreditPIX(t, s, dbtest.PIX{EndToEndID: e2eID(n), AccountID: account, AmountCents: amount}).EndToEndID
}

// anyone may refund any account.
func anyone(string) bool { return true }

// refund runs one devolução of the PIX under a fresh key.
func refund(t *testing.T, s *db.Store, e2e string, amount int64, mayRefund func(string) bool) (pix.Refund, error) {
	t.Helper()
	return refundsaga.NewStore(s).CreateRefund(context.Background(), *dbtest.Reserve(t, s, "test-caller"), db.NewRefund{ID: pix.NewRefundID(),
		RefundRequest: pix.RefundRequest{EndToEndID: e2e, AmountCents: amount, Reason: "devolução"}},
		mayRefund, func(r pix.Refund) ([]byte, error) { return json.Marshal(r) })
}
