package block_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/saga/block"
	refundsaga "github.com/pixbank/pix/saga/refund"
)

// A seeded random history of blocks on a few PIX (created, some refused),
// releases, returns, expiries, the ends of their devoluções (returned or
// reversed), spending by the customers, and every decision asked again (a
// redelivered request, a retried activity), each step checked against a
// model that says what the saga must answer and what every account must
// then hold; the reconciliation every 20 steps and at the end.
// PIX_BLOCK_MODEL_SEED runs one seed of your choice (a failure prints its
// seed and step).

type modelBlock struct {
	id     uuid.UUID
	e2e    string
	acc    string
	amount int64
	status string
	refund string
	// refundEnded says the devolução ended: "returned", "reversed".
	refundEnded string
}

type blockModel struct {
	balance, held map[string]int64
	credit        map[string]int64 // a PIX's credit
	accountOf     map[string]string
	blocks        []*modelBlock
}

// room is what of a PIX its active blocks and devoluções (but the
// reversed) leave.
func (m *blockModel) room(e2e string) int64 {
	left := m.credit[e2e]
	for _, b := range m.blocks {
		if b.e2e != e2e {
			continue
		}
		switch {
		case b.status == block.StatusActive:
			left -= b.amount
		case b.refund != "" && b.refundEnded != "reversed":
			left -= b.amount
		}
	}
	return left
}

func TestBlocksAgainstAModel(t *testing.T) {
	if testing.Short() {
		t.Skip("needs PostgreSQL")
	}
	seeds := []uint64{1, 2, 3}
	if s := os.Getenv("PIX_BLOCK_MODEL_SEED"); s != "" {
		seed, err := strconv.ParseUint(s, 10, 64)
		require.NoError(t, err)
		seeds = []uint64{seed}
	}
	for _, seed := range seeds {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { runBlockModel(t, seed, 120) })
	}
}

func runBlockModel(t *testing.T, seed uint64, steps int) {
	f := newFixture(t)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(seed, 37))
	m := &blockModel{balance: map[string]int64{}, held: map[string]int64{}, credit: map[string]int64{}, accountOf: map[string]string{}}
	var pixes []string
	for range 3 {
		c := f.credit(5_000+rng.Int64N(5_000), rng.Int64N(3_000))
		pixes = append(pixes, c.EndToEndID)
		m.credit[c.EndToEndID] = c.AmountCents
		m.accountOf[c.EndToEndID] = c.AccountID
		bal, _ := f.money(c.AccountID)
		m.balance[c.AccountID] = bal
	}
	expired := f.expired()
	pick := func() *modelBlock { return m.blocks[rng.IntN(len(m.blocks))] }
	for step := range steps {
		at := fmt.Sprintf("seed %d step %d", seed, step)
		op := rng.IntN(7)
		if len(m.blocks) == 0 {
			op = 0
		}
		switch op {
		case 0: // a block asked for
			e2e := pixes[rng.IntN(len(pixes))]
			acc := m.accountOf[e2e]
			amount := 1 + rng.Int64N(4_000)
			b, err := f.block(e2e, amount)
			switch {
			case amount > m.room(e2e):
				require.ErrorIs(t, err, block.ErrExceedsCredit, at)
			case amount > m.balance[acc]-m.held[acc]:
				require.ErrorIs(t, err, block.ErrNotAvailable, at)
			default:
				require.NoError(t, err, at)
				m.blocks = append(m.blocks, &modelBlock{id: b.ID, e2e: e2e, acc: acc, amount: amount, status: block.StatusActive})
				m.held[acc] += amount
			}
		case 1, 2: // released by an operator, or at its 72 hours
			mb := pick()
			for range 1 + rng.IntN(2) {
				var out block.Block
				var changed bool
				var err error
				if op == 1 {
					out, changed, err = f.store.Release(ctx, mb.id, "op")
				} else {
					out, changed, err = expired.Expire(ctx, mb.id)
				}
				switch {
				case mb.status == block.StatusActive:
					require.NoError(t, err, at)
					require.True(t, changed, at)
					mb.status = block.StatusReleased
					m.held[mb.acc] -= mb.amount
				case op == 1 && (mb.status == block.StatusReturning || mb.status == block.StatusReturned):
					require.ErrorIs(t, err, block.ErrReturned, at)
					continue
				default:
					require.NoError(t, err, at)
					require.False(t, changed, at)
				}
				require.Equal(t, mb.status, out.Status, at)
			}
		case 3: // returned
			mb := pick()
			for range 1 + rng.IntN(2) {
				out, changed, err := f.store.Return(ctx, mb.id, "op")
				switch mb.status {
				case block.StatusActive:
					require.NoError(t, err, at)
					require.True(t, changed, at)
					mb.status, mb.refund = block.StatusReturning, *out.RefundID
					m.held[mb.acc] -= mb.amount
					m.balance[mb.acc] -= mb.amount
				case block.StatusReleased:
					require.ErrorIs(t, err, block.ErrReleased, at)
					continue
				default:
					require.NoError(t, err, at)
					require.False(t, changed, at)
					require.Equal(t, mb.refund, *out.RefundID, at)
				}
				require.Equal(t, mb.status, out.Status, at)
			}
		case 4: // a devolução ends
			mb := pick()
			if mb.refund == "" || mb.refundEnded != "" {
				continue
			}
			if rng.IntN(2) == 0 {
				_, err := refundsaga.NewStore(f.s).MarkRefundReturned(ctx, mb.refund, "")
				require.NoError(t, err, at)
				mb.refundEnded = "returned"
			} else {
				_, err := refundsaga.NewStore(f.s).ReverseRefund(ctx, mb.refund, "NAO_REALIZADO", false)
				require.NoError(t, err, at)
				mb.refundEnded = "reversed"
				m.balance[mb.acc] += mb.amount
			}
		case 5: // the run reads the devolução (maybe twice)
			mb := pick()
			for range 1 + rng.IntN(2) {
				out, changed, err := f.store.Settle(ctx, mb.id)
				require.NoError(t, err, at)
				want := mb.status
				if mb.status == block.StatusReturning && mb.refundEnded == "returned" {
					want = block.StatusReturned
				}
				if mb.status == block.StatusReturning && mb.refundEnded == "reversed" {
					want = block.StatusReleased
				}
				require.Equal(t, want != mb.status, changed, at)
				mb.status = want
				require.Equal(t, mb.status, out.Status, at)
			}
		case 6: // the customer spends
			e2e := pixes[rng.IntN(len(pixes))]
			acc := m.accountOf[e2e]
			amount := 1 + rng.Int64N(3_000)
			_, err := f.spend(acc, amount)
			if amount > m.balance[acc]-m.held[acc] {
				require.ErrorIs(t, err, pix.ErrInsufficientFunds, at)
			} else {
				require.NoError(t, err, at)
				m.balance[acc] -= amount
			}
		}
		for _, e2e := range pixes {
			acc := m.accountOf[e2e]
			bal, held := f.money(acc)
			require.Equal(t, [2]int64{m.balance[acc], m.held[acc]}, [2]int64{bal, held}, "%s: balance, held of %s", at, acc)
		}
		if step%20 == 19 {
			f.requireBooks()
		}
	}
	// Every block as the model says, with one event per change.
	for _, mb := range m.blocks {
		got, err := f.store.Get(ctx, mb.id)
		require.NoError(t, err)
		require.Equal(t, mb.status, got.Status)
		want := map[string]int{block.StatusActive: 1, block.StatusReleased: 2, block.StatusReturning: 2, block.StatusReturned: 3}[mb.status]
		if mb.status == block.StatusReleased && mb.refund != "" {
			want = 3 // created, returning, released (return not made)
		}
		require.Len(t, f.events(mb.id), want, "block %s %s", mb.id, mb.status)
	}
	f.requireBooks()
}
