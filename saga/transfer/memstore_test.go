package transfer_test

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/saga/transfer"
)

// The stores of the unit tier: the saga's Store satisfies what the
// activities need, and so does this in-memory fake.
var (
	_ transfer.ActivityStore = (*transfer.Store)(nil)
	_ transfer.ActivityStore = (*memTransfers)(nil)
)

// memTransfers is an in-memory transfer.ActivityStore of one debited
// transfer, following the Store's rules for it: submitted only from debited, settled
// from debited or submitted, refunded once (crediting the amount back),
// and a final status never contradicted (pix.ErrTransferFinal).
type memTransfers struct {
	mu      sync.Mutex
	t       pix.Transfer
	balance int64
}

func newMemTransfers(account string, opening, amount int64) *memTransfers {
	now := time.Now()
	return &memTransfers{
		t: pix.Transfer{ID: uuid.NewString(), EndToEndID: pix.NewEndToEndID("12345678", now), AccountID: account, AmountCents: amount,
			PixKey: "maria@example.com", Status: pix.TransferDebited, BalanceAfterCents: opening - amount, CreatedAt: now},
		balance: opening - amount,
	}
}

func (m *memTransfers) get(id uuid.UUID) (pix.Transfer, error) {
	if id.String() != m.t.ID {
		return pix.Transfer{}, pix.ErrTransferNotFound
	}
	return m.t, nil
}

func (m *memTransfers) GetTransfer(_ context.Context, id uuid.UUID) (pix.Transfer, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.get(id)
}

func (m *memTransfers) GetTransferByEndToEndID(_ context.Context, e2e string) (pix.Transfer, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e2e != m.t.EndToEndID {
		return pix.Transfer{}, pix.ErrTransferNotFound
	}
	return m.t, nil
}

func (m *memTransfers) MarkTransferSubmitted(_ context.Context, id uuid.UUID) (pix.Transfer, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.t.Status == pix.TransferDebited {
		now := time.Now()
		m.t.Status, m.t.SubmittedAt = pix.TransferSubmitted, &now
	}
	return m.get(id)
}

func (m *memTransfers) SettleTransfer(_ context.Context, id uuid.UUID) (pix.Transfer, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch m.t.Status {
	case pix.TransferDebited, pix.TransferSubmitted:
		now := time.Now()
		m.t.Status, m.t.SettledAt = pix.TransferSettled, &now
	case pix.TransferRefunded:
		return m.t, fmt.Errorf("%w: settled by the PSP after it was refunded", pix.ErrTransferFinal)
	}
	return m.get(id)
}

func (m *memTransfers) RefundTransfer(_ context.Context, id uuid.UUID, reason string) (pix.Transfer, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch m.t.Status {
	case pix.TransferRefunded:
		return m.t, nil
	case pix.TransferSettled:
		return pix.Transfer{}, fmt.Errorf("%w: the transfer is settled", pix.ErrTransferFinal)
	}
	now := time.Now()
	m.balance += m.t.AmountCents
	m.t.Status, m.t.FailureReason, m.t.RefundedAt = pix.TransferRefunded, &reason, &now
	return m.get(id)
}

func (m *memTransfers) GetAccount(_ context.Context, id string) (pix.Account, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if id != m.t.AccountID {
		return pix.Account{}, pix.ErrAccountNotFound
	}
	return pix.Account{ID: id, Status: pix.AccountActive, BalanceCents: m.balance}, nil
}
