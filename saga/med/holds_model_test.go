package med_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/db/dbtest"
	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/saga/block"
	"github.com/pixbank/pix/saga/med"
	refundsaga "github.com/pixbank/pix/saga/refund"
	"github.com/pixbank/pix/saga/sagatest"
)

// A seeded random history of ONE credited PIX and its account on which
// cautionary blocks (saga/block) and a MED infraction report race for the
// same money (issue 37: "every race a model-checked history"): blocks of
// the PIX asked for (some refused: the PIX's room, the available balance),
// released by an operator, expired at their 72 hours (and asked to expire
// before them), returned through their devolução, settled as it ends;
// the report's whole life as TestMEDAgainstAModel drives it (its hold
// made while a block takes part of the PIX, filling to what the PIX has
// left and raised as the block ends; the analysis AGREED or DISAGREED;
// refund requests, returns in parts, the reporter's cancel, the 72 hours
// and the 90 days; the operator's release); the account's later credits
// filling the report's hold, and debits racing the holds: the customer's
// transfers, devoluções of the PIX itself and of the account's other
// PIX. Every step is checked against the one model of the account's
// holds (medModel: each hold's amount, what it fills to and what the
// PIX's room cut short of it; the account's balance and held), the blocks
// as the model says, the PIX's room (its devoluções and active holds never
// more than its credit, in the books and in the model); the
// reconciliation every 20 steps and at the end; one event per change of
// every report, hold and block at the end, and every write to the DICT
// sent once. PIX_HOLDS_MODEL_SEED runs one seed of your choice (a failure
// prints its seed and step), PIX_HOLDS_MODEL_STEPS a history of another
// length (150 by default), PIX_HOLDS_MODEL_LOG=1 logs every step's
// outcome; scripts/model.sh runs more seeds.

// mBlock is a cautionary block of the model.
type mBlock struct {
	id     uuid.UUID
	hold   *mHold
	status string
	refund *mRefund
	events int // pix.block.*
}

func (b *mBlock) setStatus(s string) {
	if s != b.status {
		b.events++
	}
	b.status = s
}

// holdsModel is the history's model: the MED model of the account (its
// one report r, of the PIX c) and the blocks of c.
type holdsModel struct {
	*medModel
	r      *mReport
	c      dbtest.Credited
	blocks []*mBlock
	// blockStore decides by the database's clock; expired by one past
	// every block's 72 hours.
	blockStore, expired *block.Store
	others              []dbtest.Credited // the account's other PIX
}

func TestBlocksAndMEDOnOnePIXAgainstAModel(t *testing.T) {
	if testing.Short() {
		t.Skip("needs PostgreSQL")
	}
	// Seeds whose histories, together, meet every outcome below: in 2, 4,
	// 9, 11, 13 and 20 a block ends while the report's hold is short of
	// it (raised); in 20 a reversal's money passes over the report's hold
	// past its fill-until.
	runHistories(t, "PIX_HOLDS_MODEL", []uint64{1, 2, 4, 9, 11, 13, 20}, 150, runHoldsModel, []string{"block created",
		"block refused: the PIX's room", "block refused: available", "block released by an operator", "block expired",
		"block not expired before its 72 hours", "block returned", "block returned again", "block release refused: returned",
		"block return refused: released", "block settled returned", "block settled released", "run: hold",
		"cut short by the PIX's room", "raised", "run: return", "run: settle", "devolução reversed", "devolução returned",
		"devolução of the PIX", "devolução of the PIX refused: its room", "devolução of another PIX", "refused: available",
		"credit", "spend", "analysis AGREED", "analysis DISAGREED", "refund request", "past its fill-until passed over"})
}

// runHoldsModel runs a history of steps from seed and returns how many
// steps went through each outcome.
func runHoldsModel(t *testing.T, seed uint64, steps int) map[string]int {
	f := newFixture(t)
	rng := rand.New(rand.NewPCG(seed, 47))
	m := &medModel{t: t, f: f, rng: rng, out: rand.New(rand.NewPCG(seed, 53)), balance: map[string]int64{},
		clock: time.Now().Add(-3 * time.Hour).Truncate(time.Millisecond), maxReports: 1}
	m.dict = &worldDICT{m: m, sent: map[string]int{}}
	m.psp = f.noticesWith(&sagatest.Signals{}, nil)
	c := f.credit(4_000+rng.Int64N(8_000), rng.Int64N(4_000))
	m.addReport(c, true)
	m.balance[c.AccountID] = c.BalanceAfterCents
	h := &holdsModel{medModel: m, r: m.reports[0], c: c, blockStore: block.NewStore(f.s)}
	h.expired = h.blockStore.WithClock(func() time.Time { return time.Now().Add(block.Duration + time.Minute) })
	seen := map[string]int{}
	logSteps := os.Getenv("PIX_HOLDS_MODEL_LOG") != ""
	reported := rng.IntN(12) // the report comes in after the blocks of the first steps
	for step := range steps {
		at := fmt.Sprintf("seed %d step %d", seed, step)
		raised, cutShort, passedOver := m.raised, m.cutShort, m.passedOver
		what := ""
		// Blocks, in a hundred steps: more before the report holds (its
		// hold then cut short by them) and once it ended.
		blocks := 30
		if !h.r.row || h.r.status == med.StatusReceived || h.r.status == med.StatusEnded {
			blocks = 55
		}
		switch n := rng.IntN(100); {
		case n < blocks:
			what = h.blockStep(at)
		case n < blocks+15 || step < reported:
			what = h.moneyStep(at)
		default:
			if m.out.IntN(100) < 6 {
				what = m.rejectOutside(at)
			}
			if what == "" {
				what = m.step(at)
			}
		}
		if m.cutShort > cutShort {
			what += " (a hold cut short by the PIX's room)"
		}
		if m.raised > raised {
			what += " (a hold raised)"
		}
		if m.passedOver > passedOver {
			what += " (a hold past its fill-until passed over)"
		}
		seen[what]++
		if logSteps {
			t.Logf("%s: %s", at, what)
		}
		m.check(at + ": " + what)
		h.check(at + ": " + what)
		if step%20 == 19 {
			f.requireBooks()
		}
	}
	for what, n := range m.drain(fmt.Sprintf("seed %d drain", seed)) {
		seen[what] += n
	}
	h.check(fmt.Sprintf("seed %d drain", seed))
	m.final(fmt.Sprintf("seed %d end", seed))
	h.final(fmt.Sprintf("seed %d end", seed))
	f.requireBooks()
	t.Logf("seed %d, %d steps: %v", seed, steps, seen)
	return seen
}

// blockStep is an operator's or the block saga's act on a block of the
// PIX: a block asked for, released, expired (or asked to expire before its
// time), returned, settled as its devolução ended; each now and then asked
// again.
func (h *holdsModel) blockStep(at string) string {
	m := h.medModel
	n := m.rng.IntN(10)
	if len(h.blocks) == 0 || n < 3 {
		return h.createBlock(at)
	}
	b := h.blocks[m.rng.IntN(len(h.blocks))]
	var open []*mBlock
	for _, x := range h.blocks {
		if x.status == block.StatusActive || x.status == block.StatusReturning {
			open = append(open, x)
		}
	}
	if len(open) > 0 && m.rng.IntN(5) > 0 {
		b = open[m.rng.IntN(len(open))]
	}
	if b.status == block.StatusActive && h.cutShort() && m.rng.IntN(2) == 0 {
		n = 3 + 2*m.rng.IntN(2) // the race of interest: the block ends while the report's hold is short of it
	}
	switch n {
	case 3, 4:
		return h.releaseBlock(at, b, h.blockStore)
	case 5:
		return h.releaseBlock(at, b, h.expired)
	case 6:
		return h.expireEarly(at, b)
	case 7, 8:
		return h.returnBlock(at, b)
	}
	return h.settleBlock(at, b)
}

// cutShort says whether the report's hold is short of what it asked by
// what a block (or a devolução) of the PIX takes.
func (h *holdsModel) cutShort() bool {
	return h.r.hold != nil && h.r.hold.active && h.r.hold.short > 0
}

// createBlock asks for a block of the PIX: any amount up to the credit,
// or exactly what the PIX's room or the available balance leaves.
func (h *holdsModel) createBlock(at string) string {
	m := h.medModel
	acc, e2e := h.c.AccountID, h.c.EndToEndID
	// A block never takes what an older hold that fills lacks (db.Hold):
	// nothing while one lacks, as no hold lacks while money is available.
	room, available := m.room(e2e, h.c.AmountCents), m.availableToNew(acc)
	amount := 1 + m.rng.Int64N(h.c.AmountCents/2)
	switch m.rng.IntN(4) {
	case 0:
		amount = max(1, room)
	case 1:
		amount = max(1, available)
	}
	res := dbtest.Reserve(m.t, m.f.s, "operator-1")
	got, err := h.blockStore.Create(context.Background(), res, block.New{ID: uuid.New(), EndToEndID: e2e, AmountCents: amount,
		Reason: "suspeita de fraude", RequestedBy: "operator-1"}, func(b block.Block) ([]byte, error) { return json.Marshal(b) })
	what := fmt.Sprintf("block of %d (room %d, available %d)", amount, room, available)
	switch {
	case amount > room:
		require.ErrorIs(m.t, err, block.ErrExceedsCredit, "%s: %s", at, what)
		return "block refused: the PIX's room"
	case amount > available:
		require.ErrorIs(m.t, err, block.ErrNotAvailable, "%s: %s", at, what)
		return "block refused: available"
	}
	require.NoError(m.t, err, "%s: %s", at, what)
	hold := &mHold{id: got.HoldID, acc: acc, e2e: e2e, amount: amount, fillTo: amount, active: true, whole: true, events: 1}
	m.holds = append(m.holds, hold)
	h.blocks = append(h.blocks, &mBlock{id: got.ID, hold: hold, status: block.StatusActive, events: 1})
	require.Equal(m.t, block.StatusActive, got.Status, at)
	return "block created"
}

// releaseBlock is an operator's release (store: by the database's clock),
// or the block's expiry at its 72 hours (store: past them), once or twice.
func (h *holdsModel) releaseBlock(at string, b *mBlock, store *block.Store) string {
	m := h.medModel
	expiry := store == h.expired
	what := "block released by an operator"
	if expiry {
		what = "block expired"
	}
	for i := range 1 + m.rng.IntN(2) {
		var out block.Block
		var changed bool
		var err error
		if expiry {
			out, changed, err = store.Expire(context.Background(), b.id)
		} else {
			out, changed, err = store.Release(context.Background(), b.id, "operator-1")
		}
		switch {
		case b.status == block.StatusActive:
			require.NoError(m.t, err, "%s: %s", at, what)
			require.True(m.t, changed, "%s: %s", at, what)
			b.setStatus(block.StatusReleased)
			m.releaseHold(b.hold)
		case !expiry && (b.status == block.StatusReturning || b.status == block.StatusReturned):
			require.ErrorIs(m.t, err, block.ErrReturned, "%s: %s", at, what)
			return "block release refused: returned"
		default:
			require.NoError(m.t, err, "%s: %s", at, what)
			require.False(m.t, changed, "%s: %s", at, what)
			if i == 0 {
				what += ": ended already"
			}
		}
		require.Equal(m.t, b.status, out.Status, "%s: %s", at, what)
	}
	return what
}

// expireEarly is the block's expiry asked before its 72 hours by the
// database's clock (a timer early): an active block stays as it is.
func (h *holdsModel) expireEarly(at string, b *mBlock) string {
	m := h.medModel
	out, changed, err := h.blockStore.Expire(context.Background(), b.id)
	require.False(m.t, changed, at)
	if b.status == block.StatusActive {
		require.ErrorContains(m.t, err, "not yet", at)
		return "block not expired before its 72 hours"
	}
	require.NoError(m.t, err, at)
	require.Equal(m.t, b.status, out.Status, at)
	return "block ended: its expiry changes nothing"
}

// returnBlock hands an active block to its devolução, capturing its hold;
// asked again, the same devolução.
func (h *holdsModel) returnBlock(at string, b *mBlock) string {
	m := h.medModel
	what := "block returned"
	for i := range 1 + m.rng.IntN(2) {
		out, changed, err := h.blockStore.Return(context.Background(), b.id, "operator-1")
		switch b.status {
		case block.StatusActive:
			require.NoError(m.t, err, "%s: %s", at, what)
			require.True(m.t, changed, "%s: %s", at, what)
			require.NotNil(m.t, out.RefundID, at)
			hold := b.hold
			hold.active, hold.captured = false, true
			hold.events++
			m.balance[hold.acc] -= hold.amount
			b.refund = &mRefund{id: *out.RefundID, e2e: hold.e2e, acc: hold.acc, credit: h.c.AmountCents, amount: hold.amount}
			m.refunds = append(m.refunds, b.refund)
			b.setStatus(block.StatusReturning)
		case block.StatusReleased:
			require.ErrorIs(m.t, err, block.ErrReleased, "%s: %s", at, what)
			return "block return refused: released"
		default:
			require.NoError(m.t, err, "%s: %s", at, what)
			require.False(m.t, changed, "%s: %s", at, what)
			require.Equal(m.t, b.refund.id, *out.RefundID, "%s: one devolução", at)
			if i == 0 {
				what = "block returned again"
			}
		}
		require.Equal(m.t, b.status, out.Status, "%s: %s", at, what)
	}
	return what
}

// settleBlock is the block's run reading its devolução (twice now and
// then): returned, or released when the devolução was not made.
func (h *holdsModel) settleBlock(at string, b *mBlock) string {
	m := h.medModel
	if b.status == block.StatusReturning && b.refund.ended == "" && m.rng.IntN(2) == 0 {
		m.endRefund(at, b.refund, m.rng.IntN(2) == 0)
	}
	what := "block settled: nothing to settle"
	for range 1 + m.rng.IntN(2) {
		out, changed, err := h.blockStore.Settle(context.Background(), b.id)
		require.NoError(m.t, err, at)
		want := b.status
		if b.status == block.StatusReturning && b.refund.ended == "returned" {
			want = block.StatusReturned
		}
		if b.status == block.StatusReturning && b.refund.ended == "reversed" {
			want = block.StatusReleased
		}
		require.Equal(m.t, want != b.status, changed, at)
		if changed {
			what = "block settled " + want
		}
		b.setStatus(want)
		require.Equal(m.t, b.status, out.Status, at)
	}
	return what
}

// moneyStep is money moving in and out beside the holds: a later credit
// of the account (filling its holds that lack), or a debit racing the
// holds: a devolução of the PIX asked by its customer, one of another PIX
// of the account (credited first, now and then), or a transfer of what is
// available (or a cent more).
func (h *holdsModel) moneyStep(at string) string {
	m := h.medModel
	acc := h.c.AccountID
	switch m.rng.IntN(4) {
	case 3:
		m.credit(acc, 1_000+m.rng.Int64N(5_000))
		return "later credit"
	case 0:
		return h.devolucao(at, h.c, "devolução of the PIX")
	case 1:
		if len(h.others) == 0 || m.rng.IntN(3) == 0 {
			c := dbtest.CreditPIX(m.t, m.f.s, dbtest.PIX{AccountID: acc, AmountCents: 500 + m.rng.Int64N(3_000)})
			m.balance[acc] += c.AmountCents
			m.fill(acc, c.AmountCents)
			h.others = append(h.others, c)
		}
		return h.devolucao(at, h.others[m.rng.IntN(len(h.others))], "devolução of another PIX")
	}
	available := m.balance[acc] - m.held(acc)
	amount := max(1, available+m.rng.Int64N(2))
	err := m.f.spend(acc, amount)
	if amount > available {
		require.ErrorIs(m.t, err, pix.ErrInsufficientFunds, "%s: spend %d of %s", at, amount, acc)
		return "spend of all: refused: available"
	}
	require.NoError(m.t, err, "%s: spend %d of %s", at, amount, acc)
	m.balance[acc] -= amount
	return "spend of all"
}

// devolucao is the customer's devolução of part of the PIX c (or of what
// its room or the available balance leaves, or a cent more).
func (h *holdsModel) devolucao(at string, c dbtest.Credited, what string) string {
	m := h.medModel
	room, available := m.room(c.EndToEndID, c.AmountCents), m.balance[c.AccountID]-m.held(c.AccountID)
	amount := 1 + m.rng.Int64N(c.AmountCents/2+1)
	switch m.rng.IntN(4) {
	case 0:
		amount = max(1, room+m.rng.Int64N(2))
	case 1:
		amount = max(1, available+m.rng.Int64N(2))
	}
	res := dbtest.Reserve(m.t, m.f.s, "customer-1")
	out, err := refundsaga.NewStore(m.f.s).CreateRefund(context.Background(), *res,
		db.NewRefund{ID: pix.NewRefundID(), RefundRequest: pix.RefundRequest{EndToEndID: c.EndToEndID, AmountCents: amount, Reason: "devolução pedida"}},
		func(string) bool { return true }, func(r pix.Refund) ([]byte, error) { return json.Marshal(r) })
	at = fmt.Sprintf("%s: %s of %d (room %d, available %d)", at, what, amount, room, available)
	switch {
	case amount > room:
		require.ErrorIs(m.t, err, pix.ErrRefundExceedsCredit, at)
		return what + " refused: its room"
	case amount > available:
		require.ErrorIs(m.t, err, pix.ErrInsufficientFunds, at)
		return what + " refused: available"
	}
	require.NoError(m.t, err, at)
	m.balance[c.AccountID] -= amount
	m.refunds = append(m.refunds, &mRefund{id: out.ID, e2e: c.EndToEndID, acc: c.AccountID, credit: c.AmountCents, amount: amount})
	return what
}

// check compares the blocks and the PIX's room with the model (medModel's
// check compares the account, every hold and the report).
func (h *holdsModel) check(at string) {
	m := h.medModel
	ctx := context.Background()
	for _, b := range h.blocks {
		got, err := h.blockStore.Get(ctx, b.id)
		require.NoError(m.t, err, at)
		require.Equal(m.t, b.status, got.Status, "%s: block %s", at, b.id)
		if b.refund != nil {
			require.Equal(m.t, b.refund.id, *got.RefundID, "%s: block %s's devolução", at, b.id)
		}
	}
	// The PIX's devoluções (all but the reversed) and active holds never
	// take more than its credit; the model's room is the books'.
	for _, c := range append([]dbtest.Credited{h.c}, h.others...) {
		var taken int64
		require.NoError(m.t, m.f.s.Pool().QueryRow(ctx, `SELECT
			(SELECT COALESCE(sum(amount_cents), 0) FROM pix_refunds WHERE end_to_end_id = $1 AND status <> 'reversed')
			+ (SELECT COALESCE(sum(COALESCE(fill_to_cents, amount_cents)), 0) FROM pix_holds WHERE end_to_end_id = $1 AND status = 'active')`,
			c.EndToEndID).Scan(&taken))
		require.LessOrEqual(m.t, taken, c.AmountCents, "%s: PIX %s: its devoluções and holds take at most its credit", at, c.EndToEndID)
		require.Equal(m.t, m.room(c.EndToEndID, c.AmountCents), c.AmountCents-taken, "%s: PIX %s's room", at, c.EndToEndID)
	}
}

// final checks one event per change of every block, and the blocks'
// devoluções made once each (the operator's: requested_by).
func (h *holdsModel) final(at string) {
	m := h.medModel
	returns := 0
	for _, b := range h.blocks {
		require.Len(m.t, dbtest.OutboxEvents(m.t, m.f.s, "pix_block", b.id.String()), b.events, "%s: block %s's events", at, b.id)
		if b.refund != nil {
			returns++
		}
	}
	var n int
	require.NoError(m.t, m.f.s.Pool().QueryRow(context.Background(),
		`SELECT count(*) FROM pix_refunds WHERE end_to_end_id = $1 AND requested_by = 'operator-1'`, h.c.EndToEndID).Scan(&n))
	require.Equal(m.t, returns, n, "%s: the blocks' devoluções", at)
}
