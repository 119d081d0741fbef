package db_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/db/dbtest"
	"github.com/pixbank/pix/internal/pix"
	refundsaga "github.com/pixbank/pix/saga/refund"
)

// A seeded random history of credits, transfers, holds (of accounts and
// of PIX, whole, up to and filling from later credits, refs reused),
// releases, shrinks, captures (whole, and of a part with the hold kept),
// devoluções and their reversals (a kept hold's part given back to it
// first), blocks and MEDs of the same PIX (a MED made while a block takes
// part of its PIX fills to what is left; the block released or shrunk, a
// devolução of the PIX reversed, raises it first: db.RaiseFillTo), each
// step checked
// against a model that says what the money API must answer and what every
// account and hold must then be (I2, I9, I11): each credit and each
// reversal (money back) fills the holds of its account that fill, in the
// order they were made, and a new hold that fills takes nothing available
// while an older one lacks; the reconciliation every 25 steps and at the
// end.
// PIX_HOLD_MODEL_SEED runs one seed of your choice (a failure prints its
// seed and step).

type modelHold struct {
	id     uuid.UUID
	asked  db.NewHold
	amount int64
	// fillTo is what a hold that fills from later credits fills to (fills;
	// 0 for one that does not, or that was captured in part down to 0).
	fillTo int64
	// short is what the PIX's room cut short of what it fills to
	// (fill_short_cents), raised as the PIX gets room back.
	short  int64
	fills  bool
	status string
}

// raise gives room cents of the PIX e2e just freed to its active holds
// that fill, but except, that its room cut short, in the order they were
// made: the model of queries/holds.sql RaiseFillTo. It returns what was
// raised.
func (m *moneyModel) raise(e2e string, except *modelHold, room int64) int64 {
	left := room
	for _, h := range m.holds {
		if e2e == "" || h.asked.EndToEndID != e2e || h == except || h.status != pix.HoldActive || h.short == 0 || left <= 0 {
			continue
		}
		r := min(h.short, left)
		h.fillTo += r
		h.short -= r
		left -= r
	}
	return room - left
}

// taken is what the hold takes of its PIX's credit: what it fills to,
// for a hold that fills (TakenCents), else what it holds.
func (h *modelHold) taken() int64 {
	if h.fillTo > 0 {
		return h.fillTo
	}
	return h.amount
}

// fill is what the credit of cents to account adds to its holds that
// fill, each in the order they were made taking what it lacks of what is
// left: the model of queries/holds.sql Fill. It returns what was filled.
func (m *moneyModel) fill(account string, cents int64) int64 {
	left := cents
	for _, h := range m.holds {
		if h.asked.AccountID != account || h.status != pix.HoldActive || h.amount >= h.fillTo || left == 0 {
			continue
		}
		f := min(h.fillTo-h.amount, left)
		h.amount += f
		left -= f
	}
	m.held[account] += cents - left
	return cents - left
}

// filling says whether a hold of account still fills (active, lacking).
func (m *moneyModel) filling(account string) bool {
	for _, h := range m.holds {
		if h.asked.AccountID == account && h.status == pix.HoldActive && h.amount < h.fillTo {
			return true
		}
	}
	return false
}

type modelPIX struct {
	e2e, account string
	credit       int64
}

type modelRefund struct {
	id       string
	e2e      string
	amount   int64
	account  string
	reversed bool
	// kept is the hold it captured a part of and kept (NewRefund.KeepHold;
	// nil: none), which its reversal gives the part back to while active.
	kept *modelHold
}

type moneyModel struct {
	balance, held map[string]int64
	pix           []modelPIX
	holds         []*modelHold
	refunds       []*modelRefund
}

func (m *moneyModel) available(account string) int64 { return m.balance[account] - m.held[account] }

func (m *moneyModel) pixOf(e2e string) modelPIX {
	for _, p := range m.pix {
		if p.e2e == e2e {
			return p
		}
	}
	panic("no PIX " + e2e)
}

// left is what of a PIX's credit its devoluções (but the reversed) and its
// active holds but except leave.
func (m *moneyModel) left(e2e string, except *modelHold) int64 {
	left := m.pixOf(e2e).credit
	for _, r := range m.refunds {
		if r.e2e == e2e && !r.reversed {
			left -= r.amount
		}
	}
	for _, h := range m.holds {
		if h.asked.EndToEndID == e2e && h.status == pix.HoldActive && h != except {
			left -= h.taken()
		}
	}
	return left
}

func TestMoneyAPIAgainstAModel(t *testing.T) {
	if v := os.Getenv("PIX_HOLD_MODEL_SEED"); v != "" {
		seed, err := strconv.ParseUint(v, 10, 64)
		require.NoError(t, err, "PIX_HOLD_MODEL_SEED")
		runMoneyModel(t, seed, 400)
		return
	}
	// A MED of a PIX that a block (or another hold, a devolução) takes
	// part of, raised when that part is freed: rarer, met over the seeds
	// together.
	raising := map[string]int{}
	for _, seed := range []uint64{30, 39} { // histories that meet every outcome below
		t.Run(fmt.Sprintf("seed %d", seed), func(t *testing.T) {
			seen := runMoneyModel(t, seed, 400)
			for _, outcome := range []string{"hold that fills of a PIX wholly taken", "release that raises", "reversal that raises"} {
				raising[outcome] += seen[outcome]
			}
			// A history that never met an outcome proves nothing of it.
			for _, outcome := range []string{"credit", "transfer", "transfer: " + pix.ErrInsufficientFunds.Error(),
				"hold", "hold: " + pix.ErrInsufficientFunds.Error(), "hold: " + pix.ErrHoldExceedsCredit.Error(),
				"hold that fills", "credit that fills", "capture of nothing: " + pix.ErrHoldNotCapturable.Error(),
				"hold: " + pix.ErrHoldRefReused.Error(), "hold: " + pix.ErrPixNotCredited.Error(), "release",
				"capture", "capture: " + pix.ErrHoldEnded.Error(), "capture: " + pix.ErrHoldNotCapturable.Error(),
				"devolução", "devolução: " + pix.ErrRefundExceedsCredit.Error(), "devolução: " + pix.ErrInsufficientFunds.Error(),
				"reversal", "shrink", "shrink of nothing", "shrink: invalid", "capture of a part",
				"capture of a part: " + pix.ErrHoldNotCapturable.Error(), "reversal into its hold",
				"release that fills", "shrink that fills"} {
				require.Positive(t, seen[outcome], "seed %d: no step was %q", seed, outcome)
			}
		})
	}
	for outcome, n := range raising {
		require.Positive(t, n, "no step of the seeds was %q", outcome)
	}
}

// runMoneyModel runs a history of steps from seed and returns how many
// steps went through each operation and outcome.
func runMoneyModel(t *testing.T, seed uint64, steps int) (seen map[string]int) {
	ctx := context.Background()
	s := dbtest.New(t)
	rnd := rand.New(rand.NewPCG(seed, seed))
	accounts := []string{"acc-0", "acc-1", "acc-2"}
	m := &moneyModel{balance: map[string]int64{}, held: map[string]int64{}}
	for i, a := range accounts {
		dbtest.OpenAccount(t, s, a, int64(i)*10_000)
		m.balance[a] = int64(i) * 10_000
	}
	pick := func(n int) int { return rnd.IntN(n) }
	amount := func(most int64) int64 { return 1 + rnd.Int64N(most) }
	pixes := 0
	seen = map[string]int{}

	for step := range steps {
		var op, what string
		var err, want error
		switch n := pick(100); {
		case n < 15 || len(m.pix) == 0: // a PIX received
			op = "credit"
			account, cents := accounts[pick(len(accounts))], amount(8_000)
			pixes++
			what = fmt.Sprintf("credit %d to %s", cents, account)
			e2e := dbtest.CreditNth(t, s, pixes, account, cents)
			m.pix = append(m.pix, modelPIX{e2e: e2e, account: account, credit: cents})
			m.balance[account] += cents
			if m.fill(account, cents) > 0 {
				op = "credit that fills"
			}
		case n < 30: // a PIX sent
			op = "transfer"
			account, cents := accounts[pick(len(accounts))], amount(8_000)
			what = fmt.Sprintf("transfer %d from %s", cents, account)
			err = tryDebit(s, account, cents)
			if cents > m.available(account) {
				want = pix.ErrInsufficientFunds
			} else {
				m.balance[account] -= cents
			}
		case n < 55: // a hold
			op, what, err, want = m.holdStep(s, rnd)
		case n < 67 && len(m.holds) > 0: // a release
			op = "release"
			h := m.someHold(rnd, false)
			what = fmt.Sprintf("release %s (%s)", h.asked.Ref, h.status)
			var got pix.Hold
			var released bool
			got, released, err = release(s, h.id.String(), "")
			if err == nil {
				require.Equal(t, h.status == pix.HoldActive, released, "step %d, seed %d: %s", step, seed, what)
				if released {
					h.status = pix.HoldReleased
					m.held[h.asked.AccountID] -= h.amount
					// Its PIX's room first raises the PIX's holds cut short.
					if m.raise(h.asked.EndToEndID, h, h.taken()) > 0 {
						op = "release that raises"
					}
					if m.fill(h.asked.AccountID, h.amount) > 0 && op == "release" { // first to the holds that lack
						op = "release that fills"
					}
				}
				require.Equal(t, h.status, got.Status, "step %d, seed %d: %s", step, seed, what)
			}
		case n < 72 && len(m.holds) > 0: // a hold shrunk in place
			op, what, err = m.shrinkStep(s, rnd)
		case n < 80 && len(m.holds) > 0 && pick(3) == 0: // a part captured, the hold kept
			op = "capture of a part"
			h := m.someFillingHold(rnd)
			cents, e2e := 1+rnd.Int64N(h.amount+1), h.asked.EndToEndID
			if e2e == "" {
				e2e = m.pix[pick(len(m.pix))].e2e
			}
			what = fmt.Sprintf("capture %d of %s (%s, %d filling to %d of %q) by a devolução of %s, kept", cents, h.asked.Ref, h.status,
				h.amount, h.fillTo, h.asked.EndToEndID, e2e)
			var r pix.Refund
			r, err = capturePart(s, e2e, cents, h.id.String())
			switch {
			case h.status != pix.HoldActive:
				want = pix.ErrHoldEnded
			case h.amount == 0 || !h.fills || cents > h.amount || h.asked.EndToEndID != e2e:
				want = pix.ErrHoldNotCapturable
			default:
				h.amount -= cents
				h.fillTo -= cents
				m.balance[h.asked.AccountID] -= cents
				m.held[h.asked.AccountID] -= cents
				m.refunds = append(m.refunds, &modelRefund{id: r.ID, e2e: h.asked.EndToEndID, amount: cents, account: h.asked.AccountID, kept: h})
			}
		case n < 80 && len(m.holds) > 0: // a devolução that captures a hold
			op = "capture"
			h := m.someHold(rnd, true)
			e2e, cents := h.asked.EndToEndID, h.amount
			if e2e == "" {
				e2e = m.pix[pick(len(m.pix))].e2e
			}
			if pick(8) == 0 {
				cents++
			}
			what = fmt.Sprintf("capture %s (%s, %d of %q) by a devolução of %d of %s", h.asked.Ref, h.status, h.amount, h.asked.EndToEndID, cents, e2e)
			var r pix.Refund
			r, err = captureRefund(s, e2e, cents, h.id)
			switch {
			case h.status != pix.HoldActive:
				want = pix.ErrHoldEnded
			case h.amount == 0:
				op = "capture of nothing"
				want = pix.ErrHoldNotCapturable
			case h.asked.EndToEndID != e2e || h.amount != cents:
				want = pix.ErrHoldNotCapturable
			default:
				require.LessOrEqual(t, cents, m.left(e2e, h), "the model: a hold fits its PIX")
				h.status = pix.HoldCaptured
				m.balance[h.asked.AccountID] -= cents
				m.held[h.asked.AccountID] -= cents
				m.refunds = append(m.refunds, &modelRefund{id: r.ID, e2e: e2e, amount: cents, account: h.asked.AccountID})
			}
		case n < 92: // a devolução the customer asks for
			op = "devolução"
			p := m.pix[pick(len(m.pix))]
			cents := amount(p.credit)
			what = fmt.Sprintf("devolução of %d of %s (%d credited, %d left)", cents, p.e2e, p.credit, m.left(p.e2e, nil))
			var r pix.Refund
			r, err = refund(t, s, p.e2e, cents, anyone)
			switch {
			case cents > m.left(p.e2e, nil):
				want = pix.ErrRefundExceedsCredit
			case cents > m.available(p.account):
				want = pix.ErrInsufficientFunds
			default:
				m.balance[p.account] -= cents
				m.refunds = append(m.refunds, &modelRefund{id: r.ID, e2e: p.e2e, amount: cents, account: p.account})
			}
		default: // a devolução the PSP did not make
			op = "reversal"
			var open []*modelRefund
			for _, r := range m.refunds {
				if !r.reversed {
					open = append(open, r)
				}
			}
			if len(open) == 0 {
				continue
			}
			r := open[pick(len(open))]
			for _, o := range open {
				if o.kept != nil && o.kept.status == pix.HoldActive && pick(2) == 0 {
					r = o // a kept hold's part, often: its reversal is the one that differs
				}
			}
			what = fmt.Sprintf("reverse the devolução %s of %d", r.id, r.amount)
			_, err = refundsaga.NewStore(s).ReverseRefund(ctx, r.id, "NAO_REALIZADO", false)
			r.reversed = true
			m.balance[r.account] += r.amount
			back := r.amount
			if h := r.kept; h != nil && h.status == pix.HoldActive {
				// The part goes back to the hold it was captured of first.
				op = "reversal into its hold"
				h.amount += r.amount
				h.fillTo += r.amount
				m.held[r.account] += r.amount
				back = 0
			}
			if m.raise(r.e2e, nil, back) > 0 { // its PIX's room back first raises the PIX's holds cut short
				op = "reversal that raises"
			}
			m.fill(r.account, back) // money back fills as a credit does (FillHolds)
		}
		if want == nil {
			require.NoError(t, err, "step %d, seed %d: %s", step, seed, what)
			seen[op]++
		} else {
			require.ErrorIs(t, err, want, "step %d, seed %d: %s", step, seed, what)
			seen[op+": "+want.Error()]++
		}
		m.check(t, s, fmt.Sprintf("after step %d, seed %d: %s", step, seed, what))
		if step%25 == 24 {
			dbtest.RequireBooks(t, s)
		}
	}
	dbtest.RequireBooks(t, s)
	t.Logf("seed %d, %d steps: %v", seed, steps, seen)
	return seen
}

// someHold is a hold of the history, an active one (of a PIX, when
// ofPIX) three times out of four when there is one.
func (m *moneyModel) someHold(rnd *rand.Rand, ofPIX bool) *modelHold {
	var active []*modelHold
	for _, h := range m.holds {
		if h.status == pix.HoldActive && (!ofPIX || h.asked.EndToEndID != "") {
			active = append(active, h)
		}
	}
	if len(active) > 0 && rnd.IntN(4) > 0 {
		return active[rnd.IntN(len(active))]
	}
	return m.holds[rnd.IntN(len(m.holds))]
}

// someFillingHold is a hold that fills, active and holding something,
// three times out of four when there is one, else any hold.
func (m *moneyModel) someFillingHold(rnd *rand.Rand) *modelHold {
	var filling []*modelHold
	for _, h := range m.holds {
		if h.status == pix.HoldActive && h.fills && h.amount > 0 && h.asked.EndToEndID != "" {
			filling = append(filling, h)
		}
	}
	if len(filling) > 0 && rnd.IntN(4) > 0 {
		return filling[rnd.IntN(len(filling))]
	}
	return m.someHold(rnd, true)
}

// holdStep asks for a hold: a new one (of an account or of a PIX, whole or
// up to, now and then for the wrong account), or one whose ref is taken
// (the same request, a lost answer asked again; or another request).
// It says which: "hold", or "hold that fills" for a hold made that fills.
func (m *moneyModel) holdStep(s *db.Store, rnd *rand.Rand) (op, what string, err, want error) {
	op = "hold"
	if len(m.holds) > 0 && rnd.IntN(6) == 0 {
		h := m.holds[rnd.IntN(len(m.holds))]
		asked := h.asked
		if rnd.IntN(2) == 0 {
			asked.AmountCents++
			want = pix.ErrHoldRefReused
		}
		what = fmt.Sprintf("hold again %s (%d)", asked.Ref, asked.AmountCents)
		got, created, err := hold(s, asked)
		if want == nil && err == nil && (created || got.ID != h.id.String() || got.Status != h.status || got.AmountCents != h.amount) {
			err = fmt.Errorf("the ref's hold again: created %v, %s %s of %d, want %s %s of %d", created, got.ID, got.Status,
				got.AmountCents, h.id, h.status, h.amount)
		}
		return op, what, err, want
	}
	accounts := []string{"acc-0", "acc-1", "acc-2"}
	asked := db.NewHold{Ref: uuid.NewString(), AccountID: accounts[rnd.IntN(len(accounts))], AmountCents: 1 + rnd.Int64N(6_000),
		UpTo: rnd.IntN(2) == 0, Kind: "cautionary_block"}
	if asked.FillFromCredits = asked.UpTo && rnd.IntN(2) == 0; asked.FillFromCredits {
		asked.AmountCents *= 4 // more than is available, often: later credits fill it
	}
	room := int64(-1)
	if rnd.IntN(5) < 3 {
		p := m.pix[rnd.IntN(len(m.pix))]
		asked.EndToEndID = p.e2e
		if rnd.IntN(8) > 0 {
			asked.AccountID = p.account
		}
		room = m.left(p.e2e, nil)
	}
	what = fmt.Sprintf("hold %+v (room %d, available %d)", asked, room, m.available(asked.AccountID))
	got, created, err := hold(s, asked)
	available := m.available(asked.AccountID)
	if asked.FillFromCredits && m.filling(asked.AccountID) {
		available = 0 // holds that fill take money oldest first
	}
	amount := asked.AmountCents
	if asked.UpTo && room >= 0 {
		amount = min(amount, room)
	}
	var fillTo, short int64
	if asked.FillFromCredits {
		fillTo, short = amount, asked.AmountCents-amount
	}
	if asked.UpTo {
		amount = min(amount, available)
	}
	switch {
	case asked.EndToEndID != "" && m.pixOf(asked.EndToEndID).account != asked.AccountID:
		want = pix.ErrPixNotCredited
	case room >= 0 && (amount > room || (room == 0 && !asked.FillFromCredits)):
		want = pix.ErrHoldExceedsCredit
	case (amount > available || amount < 1) && !asked.FillFromCredits:
		want = pix.ErrInsufficientFunds
	default:
		if err == nil && (!created || got.AmountCents != amount || (got.FillToCents != nil) != asked.FillFromCredits ||
			(got.FillToCents != nil && *got.FillToCents != fillTo)) {
			err = fmt.Errorf("held %d filling to %v (created %v), the model %d filling to %d", got.AmountCents, got.FillToCents,
				created, amount, fillTo)
		}
		if err == nil {
			m.holds = append(m.holds, &modelHold{id: uuid.MustParse(got.ID), asked: asked, amount: amount, fillTo: fillTo,
				short: short, fills: asked.FillFromCredits, status: pix.HoldActive})
			m.held[asked.AccountID] += amount
			switch {
			case asked.FillFromCredits && room == 0:
				op = "hold that fills of a PIX wholly taken"
			case asked.FillFromCredits:
				op = "hold that fills"
			}
		}
	}
	return op, what, err, want
}

// check compares every account and every hold with the model.
func (m *moneyModel) check(t *testing.T, s *db.Store, when string) {
	t.Helper()
	for id, balance := range m.balance {
		a := account(t, s, id)
		require.Equal(t, [3]int64{balance, m.held[id], balance - m.held[id]},
			[3]int64{a.BalanceCents, a.HeldCents, a.AvailableCents}, "%s: %s's balance, held, available", when, id)
	}
	rows, err := s.Pool().Query(context.Background(),
		`SELECT id, status || ' ' || amount_cents || ' ' || COALESCE(fill_to_cents::text, '-') || ' ' || fill_short_cents FROM pix_holds`)
	require.NoError(t, err)
	got := map[uuid.UUID]string{}
	var id uuid.UUID
	var status string
	_, err = pgx.ForEachRow(rows, []any{&id, &status}, func() error {
		got[id] = status
		return nil
	})
	require.NoError(t, err)
	want := map[uuid.UUID]string{}
	for _, h := range m.holds {
		fillTo := "-"
		if h.fills {
			fillTo = strconv.FormatInt(h.fillTo, 10)
		}
		want[h.id] = fmt.Sprintf("%s %d %s %d", h.status, h.amount, fillTo, h.short)
	}
	require.Equal(t, want, got, "%s: the holds", when)
}

// shrinkStep shrinks a hold in place (db.Shrink) to at most an amount
// around what it holds: "shrink" when it changed, "shrink of nothing" when
// it was within it or ended; a ValidationError for a hold of a whole
// amount, or one that does not fill shrunk to 0.
func (m *moneyModel) shrinkStep(s *db.Store, rnd *rand.Rand) (op, what string, err error) {
	h := m.someHold(rnd, false)
	to := rnd.Int64N(max(h.amount, h.fillTo) + 2)
	what = fmt.Sprintf("shrink %s (%s, %d filling to %d) to %d", h.asked.Ref, h.status, h.amount, h.fillTo, to)
	got, shrunk, err := shrink(s, h.id.String(), to)
	within := h.amount <= to && (!h.fills || h.fillTo+h.short <= to)
	switch {
	case h.status != pix.HoldActive || (within && h.asked.UpTo && (h.fills || to > 0)):
		if err == nil && shrunk {
			err = fmt.Errorf("shrunk %s, the model: nothing to shrink", got.ID)
		}
		return "shrink of nothing", what, err
	case !h.asked.UpTo || (!h.fills && to < 1):
		if errors.As(err, new(*pix.ValidationError)) {
			return "shrink: invalid", what, nil
		}
		return "shrink: invalid", what, fmt.Errorf("the model: refused; got %v (shrunk %v)", err, shrunk)
	}
	if err == nil && !shrunk {
		err = fmt.Errorf("not shrunk %s, the model: shrunk", got.ID)
	}
	if err == nil {
		freed, took := h.amount-min(h.amount, to), h.taken()
		m.held[h.asked.AccountID] -= freed
		h.amount = min(h.amount, to)
		if h.fills {
			h.short = min(h.fillTo+h.short, to) - min(h.fillTo, to)
			h.fillTo = min(h.fillTo, to)
		}
		m.raise(h.asked.EndToEndID, h, took-h.taken()) // its PIX's room back first raises the PIX's holds cut short
		if m.fill(h.asked.AccountID, freed) > 0 {      // first to the holds that lack
			return "shrink that fills", what, nil
		}
	}
	return "shrink", what, err
}
