package dbtest

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/internal/pix"
)

// PIX is a PIX received for CreditPIX to credit; what it leaves unset is
// made up.
type PIX struct {
	// EndToEndID is the PIX's id; "": a new one.
	EndToEndID string
	// AccountID is the account credited, opened if it does not exist (one
	// that does keeps its balance and status); "": a new account.
	AccountID string
	// OpeningBalanceCents is the balance an account opened here starts
	// with.
	OpeningBalanceCents int64
	// AmountCents is the amount credited; 0: 10_000 (R$ 100,00).
	AmountCents int64
	// PSP is the PSP whose webhook delivered it; "": none said (one PSP).
	PSP string
}

// Credited is the PIX CreditPIX credited: what a test of a saga that acts
// on a PIX received (a devolução, a hold, a block) needs of it.
type Credited struct {
	EndToEndID string
	AccountID  string
	// Key is the account's Pix key (an email), registered in pix_keys.
	Key         string
	AmountCents int64
	// BalanceAfterCents is the account's balance just after the credit.
	BalanceAfterCents int64
}

// CreditPIX opens the account of p (with its Pix key) and credits it the
// PIX through the credit's own path: the PSP's notification received into
// the inbox (Store.Receive), then the credit's transaction of the first
// attempt of its first drive (Store.Credit, as the credit's activity runs
// it), which writes the balance, the pix_credits row, its event and the
// inbox row done. The PIX must be new: one the inbox holds already fails
// the test, as does any refusal of the credit.
func CreditPIX(t testing.TB, s *db.Store, p PIX) Credited {
	t.Helper()
	ctx := context.Background()
	if p.AccountID == "" {
		p.AccountID = "acc-" + randomHex(6)
	}
	if p.EndToEndID == "" {
		p.EndToEndID = pix.NewEndToEndID("12345678", time.Now())
	}
	if p.AmountCents == 0 {
		p.AmountCents = 10_000
	}
	key := p.AccountID + "@example.com"
	_, err := s.CreateAccount(ctx, db.NewAccount{ID: p.AccountID, OwnerName: "Owner " + p.AccountID, OpeningBalanceCents: p.OpeningBalanceCents})
	require.NoError(t, err)
	_, err = s.CreatePixKey(ctx, db.NewPixKey{Key: key, KeyType: "email", AccountID: p.AccountID})
	require.NoError(t, err)

	n := Notice(p.EndToEndID, p.AccountID, p.AmountCents)
	n.PSP = p.PSP
	receipt, err := s.Receive(ctx, n)
	require.NoError(t, err)
	require.False(t, receipt.Duplicate, "PIX %s was received before: CreditPIX credits a new one", p.EndToEndID)
	out, err := s.Credit(ctx, p.EndToEndID, 1, 1)
	require.NoError(t, err, "credit PIX %s to %s", p.EndToEndID, p.AccountID)
	require.True(t, out.Credited, "PIX %s was not credited", p.EndToEndID)
	return Credited{EndToEndID: p.EndToEndID, AccountID: p.AccountID, Key: key, AmountCents: p.AmountCents, BalanceAfterCents: out.BalanceAfter}
}

// E2EID is the n-th PIX's end_to_end_id of a test: the same on every run,
// so that a test names the PIX it credited, or one nobody credited.
func E2EID(n int) string { return fmt.Sprintf("E12345678202611291200%011d", n) }

// Notice is the PSP's notification of a PIX of amount to account, its
// payload the fields a webhook's body carries.
func Notice(id, account string, amount int64) pix.Notification {
	payload, _ := json.Marshal(map[string]any{"end_to_end_id": id, "account_id": account, "amount_cents": amount})
	return pix.Notification{EndToEndID: id, AccountID: account, AmountCents: amount, Payload: payload}
}

// CreditNth credits amount to account under E2EID(n) (CreditPIX) and
// returns that end_to_end_id.
func CreditNth(t testing.TB, s *db.Store, n int, account string, amount int64) string {
	t.Helper()
	return CreditPIX(t, s, PIX{EndToEndID: E2EID(n), AccountID: account, AmountCents: amount}).EndToEndID
}
