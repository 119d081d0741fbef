package db_test

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/db/dbtest"
	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/saga/reconcile"
	refundsaga "github.com/pixbank/pix/saga/refund"
	"github.com/pixbank/pix/saga/transfer"
)

// The money API's tests (db/holds.go, docs/design.md I11): each call's
// happy path and refusals, idempotency on the ref, answers lost and asked
// again. The races are in holds_race_test.go, the randomized history
// against a model in holds_model_test.go.

// hold runs db.Hold in a transaction of its own, as a saga's activity
// would.
func hold(s *db.Store, h db.NewHold) (out pix.Hold, created bool, err error) {
	err = db.InTx(context.Background(), s.Pool(), func(tx pgx.Tx) error {
		out, created, err = db.Hold(context.Background(), tx, h)
		return err
	})
	return out, created, err
}

// release runs db.Release in a transaction of its own.
func release(s *db.Store, id string, reason string) (out pix.Hold, released bool, err error) {
	err = s.InTx(context.Background(), func(tx pgx.Tx) error {
		out, released, err = db.Release(context.Background(), tx, uuid.MustParse(id), reason)
		return err
	})
	return out, released, err
}

// captureRefund records a devolução of amount of the PIX that captures the
// hold id (uuid.Nil: none) through db.RecordRefund, as a saga hands one
// over: in its own transaction, without an Idempotency-Key.
func captureRefund(s *db.Store, e2e string, amount int64, holdID uuid.UUID) (out pix.Refund, err error) {
	err = db.InTx(context.Background(), s.Pool(), func(tx pgx.Tx) error {
		out, err = db.RecordRefund(context.Background(), tx, db.NewRefund{ID: pix.NewRefundID(), Hold: holdID,
			RefundRequest: pix.RefundRequest{EndToEndID: e2e, AmountCents: amount, Reason: "bloqueio devolvido"}}, nil, "test-saga")
		return err
	})
	return out, err
}

func account(t *testing.T, s *db.Store, id string) pix.Account {
	t.Helper()
	a, err := s.GetAccount(context.Background(), id)
	require.NoError(t, err)
	return a
}

// requireMoney checks an account's balance and held amount, and that its
// available balance is the one less the other.
func requireMoney(t *testing.T, s *db.Store, id string, balance, held int64) {
	t.Helper()
	a := account(t, s, id)
	require.Equal(t, [3]int64{balance, held, balance - held}, [3]int64{a.BalanceCents, a.HeldCents, a.AvailableCents},
		"%s: balance, held, available", id)
}

func countHolds(t *testing.T, s *db.Store) int {
	t.Helper()
	var n int
	require.NoError(t, s.Pool().QueryRow(context.Background(), `SELECT count(*) FROM pix_holds`).Scan(&n))
	return n
}

func block(ref, account, e2e string, amount int64) db.NewHold {
	return db.NewHold{Ref: ref, AccountID: account, EndToEndID: e2e, AmountCents: amount, Kind: "cautionary_block", Reason: "suspeita de fraude"}
}

func TestHoldReleaseAndCapture(t *testing.T) {
	ctx := context.Background()
	s := dbtest.NewWithAccount(t, "acc-1", 10_000)
	e2e := dbtest.CreditNth(t, s, 1, "acc-1", 8_000)
	requireMoney(t, s, "acc-1", 18_000, 0)

	// A hold of the account's money, for no PIX: not spendable.
	acc, created, err := hold(s, db.NewHold{Ref: "ops:1", AccountID: "acc-1", AmountCents: 3_000, Kind: "judicial"})
	require.NoError(t, err)
	require.True(t, created)
	require.Equal(t, pix.HoldActive, acc.Status)
	require.EqualValues(t, 3_000, acc.AmountCents)
	require.Nil(t, acc.EndToEndID)
	requireMoney(t, s, "acc-1", 18_000, 3_000)
	require.ErrorIs(t, tryDebit(s, "acc-1", 15_001), pix.ErrInsufficientFunds, "held money is not spendable")
	requireMoney(t, s, "acc-1", 18_000, 3_000)

	// Released: spendable again, once.
	released, ok, err := release(s, acc.ID, "ordem revogada")
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, pix.HoldReleased, released.Status)
	require.Equal(t, "ordem revogada", *released.EndReason)
	require.NotNil(t, released.EndedAt)
	requireMoney(t, s, "acc-1", 18_000, 0)
	again, ok, err := release(s, acc.ID, "de novo")
	require.NoError(t, err)
	require.False(t, ok, "released already: nothing changed")
	require.Equal(t, released, again)
	require.Equal(t, []string{db.EventHoldCreated, db.EventHoldReleased}, dbtest.Events(t, s, db.AggregateHold, acc.ID))

	// A hold of the PIX, captured by its devolução: the held money leaves
	// with the debit, in one transaction.
	blk, created, err := hold(s, block("block:1", "acc-1", e2e, 5_000))
	require.NoError(t, err)
	require.True(t, created)
	require.Equal(t, e2e, *blk.EndToEndID)
	requireMoney(t, s, "acc-1", 18_000, 5_000)
	r, err := captureRefund(s, e2e, 5_000, uuid.MustParse(blk.ID))
	require.NoError(t, err)
	require.Equal(t, pix.RefundDebited, r.Status)
	require.EqualValues(t, 13_000, r.BalanceAfterCents)
	requireMoney(t, s, "acc-1", 13_000, 0)
	got, err := s.GetHold(ctx, uuid.MustParse(blk.ID))
	require.NoError(t, err)
	require.Equal(t, pix.HoldCaptured, got.Status)
	require.Equal(t, r.ID, *got.RefundID)
	require.True(t, r.CreatedAt.Equal(*got.EndedAt), "captured at the devolução's debit")
	require.Equal(t, []string{db.EventHoldCreated, db.EventHoldCaptured}, dbtest.Events(t, s, db.AggregateHold, blk.ID))
	require.Equal(t, []string{db.EventRefundDebited}, dbtest.Events(t, s, db.AggregateRefund, r.ID))

	// The timer that would have released it finds it captured: nothing
	// changes, and it says so.
	late, ok, err := release(s, blk.ID, "72 h")
	require.NoError(t, err)
	require.False(t, ok)
	require.Equal(t, pix.HoldCaptured, late.Status)
	requireMoney(t, s, "acc-1", 13_000, 0)
	require.Equal(t, []string{db.EventHoldCreated, db.EventHoldCaptured}, dbtest.Events(t, s, db.AggregateHold, blk.ID))

	// The devolução's own saga goes on as any: reversed, the money comes
	// back available; the hold stays captured (it ends once).
	_, err = refundsaga.NewStore(s).ReverseRefund(ctx, r.ID, "NAO_REALIZADO", false)
	require.NoError(t, err)
	requireMoney(t, s, "acc-1", 18_000, 0)
	got, err = s.GetHold(ctx, uuid.MustParse(blk.ID))
	require.NoError(t, err)
	require.Equal(t, pix.HoldCaptured, got.Status)
	dbtest.RequireBooks(t, s)
}

// tryDebit runs one transfer under a fresh key: the debit path every
// outgoing PIX takes.
func tryDebit(s *db.Store, account string, amount int64) error {
	ctx := context.Background()
	res, _, err := s.ReserveKey(ctx, "test-caller", uuid.New(), "h", dbtest.Keys)
	if err != nil {
		return err
	}
	_, err = transfer.NewStore(s).CreateTransfer(ctx, *res, newTransfer(account, amount), render)
	return err
}

func TestHoldUpTo(t *testing.T) {
	s, e2e := spentPIX(t, 7_000)

	// MED: hold up to the PIX's amount, or what the account has if less.
	med := db.NewHold{Ref: "med:1", AccountID: "acc-1", EndToEndID: e2e, AmountCents: 10_000, UpTo: true, Kind: "med"}
	h, created, err := hold(s, med)
	require.NoError(t, err)
	require.True(t, created)
	require.EqualValues(t, 10_000, h.AskedCents)
	require.EqualValues(t, 3_000, h.AmountCents, "what the account had")
	require.True(t, h.UpTo)
	requireMoney(t, s, "acc-1", 3_000, 3_000)

	// The account's next credit: held up to what the PIX has left.
	dbtest.CreditNth(t, s, 2, "acc-1", 9_000)
	next, _, err := hold(s, db.NewHold{Ref: "med:1:credit:2", AccountID: "acc-1", EndToEndID: e2e, AmountCents: 9_000, UpTo: true, Kind: "med"})
	require.NoError(t, err)
	require.EqualValues(t, 7_000, next.AmountCents, "the PIX's 10,000 less the 3,000 held")
	requireMoney(t, s, "acc-1", 12_000, 10_000)
	_, _, err = hold(s, db.NewHold{Ref: "med:1:credit:3", AccountID: "acc-1", EndToEndID: e2e, AmountCents: 1, UpTo: true, Kind: "med"})
	require.ErrorIs(t, err, pix.ErrHoldExceedsCredit, "the PIX is held whole")

	// Up to, with nothing available: refused, nothing held.
	_, _, err = hold(s, db.NewHold{Ref: "other", AccountID: "acc-1", AmountCents: 5_000, UpTo: true, Kind: "judicial"})
	require.NoError(t, err, "2,000 available")
	_, _, err = hold(s, db.NewHold{Ref: "other:2", AccountID: "acc-1", AmountCents: 5_000, UpTo: true, Kind: "judicial"})
	require.ErrorIs(t, err, pix.ErrInsufficientFunds)
	requireMoney(t, s, "acc-1", 12_000, 12_000)
	dbtest.RequireBooks(t, s)
}

func TestHoldRefusals(t *testing.T) {
	ctx := context.Background()
	s := dbtest.NewWithAccount(t, "acc-1", 1_000)
	dbtest.OpenAccount(t, s, "acc-2", 50_000)
	dbtest.OpenAccount(t, s, "acc-closed", 50_000)
	require.NoError(t, s.CloseAccount(ctx, "acc-closed"))
	e2e := dbtest.CreditNth(t, s, 1, "acc-1", 10_000)

	for name, h := range map[string]db.NewHold{
		"no ref":         {AccountID: "acc-1", AmountCents: 1, Kind: "med"},
		"a ref too long": {Ref: string(make([]byte, 201)), AccountID: "acc-1", AmountCents: 1, Kind: "med"},
		"no account":     {Ref: "r", AmountCents: 1, Kind: "med"},
		"no amount":      {Ref: "r", AccountID: "acc-1", Kind: "med"},
		"a bad kind":     {Ref: "r", AccountID: "acc-1", AmountCents: 1, Kind: "Bloqueio Cautelar"},
		"a bad PIX":      {Ref: "r", AccountID: "acc-1", EndToEndID: "E1", AmountCents: 1, Kind: "med"},
		"a reason too long": {Ref: "r", AccountID: "acc-1", AmountCents: 1, Kind: "med",
			Reason: string(make([]rune, 141))},
	} {
		_, _, err := hold(s, h)
		var invalid *pix.ValidationError
		require.ErrorAs(t, err, &invalid, name)
	}
	refusals := []struct {
		name string
		hold db.NewHold
		want error
	}{
		{"an unknown account", block("r1", "acc-none", "", 1), pix.ErrAccountNotFound},
		{"a closed account", block("r2", "acc-closed", "", 1), pix.ErrAccountClosed},
		{"beyond the available balance", block("r3", "acc-1", "", 11_001), pix.ErrInsufficientFunds},
		{"a PIX never credited", block("r4", "acc-1", dbtest.E2EID(99), 1), pix.ErrPixNotCredited},
		{"another account's PIX", block("r5", "acc-2", e2e, 1), pix.ErrPixNotCredited},
		{"beyond the PIX's credit", block("r6", "acc-2", dbtest.CreditNth(t, s, 2, "acc-2", 500), 501), pix.ErrHoldExceedsCredit},
	}
	for _, c := range refusals {
		_, _, err := hold(s, c.hold)
		require.ErrorIs(t, err, c.want, c.name)
		require.True(t, pix.IsRefusal(err), c.name)
	}
	require.Zero(t, countHolds(t, s), "a refusal holds nothing")

	// The PIX's devoluções and holds share its credit.
	_, err := refund(t, s, e2e, 4_000, anyone)
	require.NoError(t, err)
	_, _, err = hold(s, block("r7", "acc-1", e2e, 6_001))
	require.ErrorIs(t, err, pix.ErrHoldExceedsCredit, "4,000 returned already")
	first, _, err := hold(s, block("r8", "acc-1", e2e, 6_000))
	require.NoError(t, err)
	_, err = refund(t, s, e2e, 1, anyone)
	require.ErrorIs(t, err, pix.ErrRefundExceedsCredit, "the rest of the PIX is held: no devolução spends it")

	// Release and capture refusals.
	_, _, err = release(s, uuid.NewString(), "")
	require.ErrorIs(t, err, pix.ErrHoldNotFound)
	_, err = captureRefund(s, e2e, 6_000, uuid.New())
	require.ErrorIs(t, err, pix.ErrHoldNotFound)
	_, err = captureRefund(s, e2e, 5_999, uuid.MustParse(first.ID))
	require.ErrorIs(t, err, pix.ErrHoldNotCapturable, "a devolução of another amount than the hold")
	other := dbtest.CreditNth(t, s, 3, "acc-1", 6_000)
	_, err = captureRefund(s, other, 6_000, uuid.MustParse(first.ID))
	require.ErrorIs(t, err, pix.ErrHoldNotCapturable, "a devolução of another PIX")
	accountHold, _, err := hold(s, block("r9", "acc-1", "", 100))
	require.NoError(t, err)
	_, err = captureRefund(s, e2e, 100, uuid.MustParse(accountHold.ID))
	require.ErrorIs(t, err, pix.ErrHoldNotCapturable, "a hold of no PIX")
	_, _, err = release(s, first.ID, "")
	require.NoError(t, err)
	_, err = captureRefund(s, e2e, 6_000, uuid.MustParse(first.ID))
	require.ErrorIs(t, err, pix.ErrHoldEnded, "a released hold is not captured")
	second, _, err := hold(s, block("r10", "acc-1", e2e, 3_000))
	require.NoError(t, err)
	_, err = captureRefund(s, e2e, 3_000, uuid.MustParse(second.ID))
	require.NoError(t, err)
	_, err = captureRefund(s, e2e, 3_000, uuid.MustParse(second.ID))
	require.ErrorIs(t, err, pix.ErrHoldEnded, "a hold is captured once")
	dbtest.RequireBooks(t, s)
}

// Every debit path checks the available balance under the one debit lock:
// a transfer and a devolução refused on held money, although the balance
// covers them (the scheduled PIX's is in saga/scheduled).
func TestEveryDebitSparesHeldMoney(t *testing.T) {
	s := dbtest.NewWithAccount(t, "acc-1", 0)
	e2e := dbtest.CreditNth(t, s, 1, "acc-1", 10_000)
	_, _, err := hold(s, block("judicial:1", "acc-1", "", 9_000))
	require.NoError(t, err)

	require.ErrorIs(t, tryDebit(s, "acc-1", 1_001), pix.ErrInsufficientFunds)
	_, err = refund(t, s, e2e, 1_001, anyone)
	require.ErrorIs(t, err, pix.ErrInsufficientFunds, "the PIX is not held, but the account's money is")
	_, err = captureRefund(s, e2e, 1_001, uuid.Nil)
	require.ErrorIs(t, err, pix.ErrInsufficientFunds)
	err = db.InTx(context.Background(), s.Pool(), func(tx pgx.Tx) error {
		_, err := db.DebitAccount(context.Background(), tx, "acc-1", 1_001)
		return err
	})
	require.ErrorIs(t, err, pix.ErrInsufficientFunds)
	require.NoError(t, tryDebit(s, "acc-1", 1_000), "the available balance, to the centavo")
	requireMoney(t, s, "acc-1", 9_000, 9_000)
	dbtest.RequireBooks(t, s)
}

func TestHoldIsIdempotentOnItsRef(t *testing.T) {
	s := dbtest.NewWithAccount(t, "acc-1", 0)
	dbtest.OpenAccount(t, s, "acc-2", 0)
	e2e := dbtest.CreditNth(t, s, 1, "acc-1", 10_000)
	asked := db.NewHold{Ref: "block:7", AccountID: "acc-1", EndToEndID: e2e, AmountCents: 20_000, UpTo: true, Kind: "cautionary_block", Reason: "r"}
	first, created, err := hold(s, asked)
	require.NoError(t, err)
	require.True(t, created)
	require.EqualValues(t, 10_000, first.AmountCents)

	// The answer was lost: the same call again is the same hold, nothing
	// changed, even though the account can now hold more.
	dbtest.CreditNth(t, s, 2, "acc-1", 10_000)
	for range 2 {
		again, created, err := hold(s, asked)
		require.NoError(t, err)
		require.False(t, created)
		require.Equal(t, first, again)
	}
	requireMoney(t, s, "acc-1", 20_000, 10_000)
	require.Equal(t, []string{db.EventHoldCreated}, dbtest.Events(t, s, db.AggregateHold, first.ID))

	// The same ref with any other field is a refusal.
	for name, change := range map[string]func(*db.NewHold){
		"another amount":  func(h *db.NewHold) { h.AmountCents = 10_000 },
		"not up to":       func(h *db.NewHold) { h.UpTo = false },
		"another kind":    func(h *db.NewHold) { h.Kind = "med" },
		"another reason":  func(h *db.NewHold) { h.Reason = "" },
		"no PIX":          func(h *db.NewHold) { h.EndToEndID = "" },
		"another account": func(h *db.NewHold) { h.AccountID, h.EndToEndID = "acc-2", "" },
	} {
		other := asked
		change(&other)
		_, _, err := hold(s, other)
		require.ErrorIs(t, err, pix.ErrHoldRefReused, name)
	}
	// Even after the hold ended: a ref names one hold, for ever.
	_, _, err = release(s, first.ID, "")
	require.NoError(t, err)
	ended, created, err := hold(s, asked)
	require.NoError(t, err)
	require.False(t, created)
	require.Equal(t, pix.HoldReleased, ended.Status, "the ref's hold, as it is: not a new one")
	requireMoney(t, s, "acc-1", 20_000, 0)
	require.Equal(t, 1, countHolds(t, s))
	dbtest.RequireBooks(t, s)
}

// A call whose commit's answer was lost, asked again: a release, and a
// devolução with its capture (the devolução's key layer replays the
// answer; the capture is not made twice).
func TestLostAnswersAskedAgain(t *testing.T) {
	ctx := context.Background()
	s, e2e := spentPIX(t, 0)
	h, _, err := hold(s, block("block:1", "acc-1", e2e, 4_000))
	require.NoError(t, err)

	// The release committed, its answer lost, the activity retried.
	_, released, err := release(s, h.ID, "sinal")
	require.NoError(t, err)
	require.True(t, released)
	again, released, err := release(s, h.ID, "sinal")
	require.NoError(t, err)
	require.False(t, released)
	require.Equal(t, pix.HoldReleased, again.Status)
	requireMoney(t, s, "acc-1", 10_000, 0)
	require.Equal(t, []string{db.EventHoldCreated, db.EventHoldReleased}, dbtest.Events(t, s, db.AggregateHold, h.ID))

	// A devolução that captures a hold, behind the Idempotency-Key layer:
	// its retry replays the answer; the hold is captured once.
	h2, _, err := hold(s, block("block:2", "acc-1", e2e, 4_000))
	require.NoError(t, err)
	key := uuid.New()
	res, _, err := s.ReserveKey(ctx, "test-caller", key, "h", dbtest.Keys)
	require.NoError(t, err)
	nr := db.NewRefund{ID: pix.NewRefundID(), Hold: uuid.MustParse(h2.ID), RefundRequest: pix.RefundRequest{EndToEndID: e2e, AmountCents: 4_000}}
	r, err := refundsaga.NewStore(s).CreateRefund(ctx, *res, nr, anyone, renderRefund)
	require.NoError(t, err)
	_, replay, err := s.ReserveKey(ctx, "test-caller", key, "h", dbtest.Keys)
	require.NoError(t, err)
	require.NotNil(t, replay, "the key's answer, replayed")
	require.Contains(t, string(replay.Body), r.ID)
	// A saga that asks RecordRefund again without looking at its own row
	// is refused: the hold ended with the first.
	_, err = captureRefund(s, e2e, 4_000, uuid.MustParse(h2.ID))
	require.ErrorIs(t, err, pix.ErrHoldEnded)
	requireMoney(t, s, "acc-1", 6_000, 0)
	dbtest.RequireBooks(t, s)
}

// Holds are checked by the reconciliation: an account whose held amount
// is not its active holds' sum is reported until it is mended, and so is a
// PIX whose active holds and devoluções exceed its credit.
func TestReconcileReportsHeldThatIsNotItsHolds(t *testing.T) {
	ctx := context.Background()
	s := dbtest.NewWithAccount(t, "acc-1", 10_000)
	dbtest.OpenAccount(t, s, "acc-2", 10_000)
	_, _, err := hold(s, block("block:1", "acc-1", "", 2_000))
	require.NoError(t, err)
	dbtest.RequireBooks(t, s)

	_, err = s.Pool().Exec(ctx, `UPDATE accounts SET held_cents = held_cents + 1 WHERE id = 'acc-1'`)
	require.NoError(t, err)
	_, err = s.Pool().Exec(ctx, `UPDATE accounts SET held_cents = 5 WHERE id = 'acc-2'`)
	require.NoError(t, err)
	for range 2 { // found at every run until mended
		rec, err := reconcile.NewStore(s).Reconcile(ctx)
		require.NoError(t, err)
		require.False(t, rec.Balanced())
		require.Equal(t, []string{"acc-1", "acc-2"}, rec.UnbalancedHolds)
		require.Empty(t, rec.UnbalancedAccounts, "the balances are right")
	}
	_, err = s.Pool().Exec(ctx, `UPDATE accounts SET held_cents = CASE id WHEN 'acc-1' THEN 2000 ELSE 0 END`)
	require.NoError(t, err)
	dbtest.RequireBooks(t, s)

	// A PIX whose holds and devoluções exceed its credit is reported too
	// (the holds written behind the API's back).
	e2e := dbtest.CreditNth(t, s, 1, "acc-2", 1_000)
	_, err = refund(t, s, e2e, 300, anyone)
	require.NoError(t, err)
	h, _, err := hold(s, block("block:2", "acc-2", e2e, 700))
	require.NoError(t, err)
	dbtest.RequireBooks(t, s)
	_, err = s.Pool().Exec(ctx, `UPDATE pix_holds SET amount_cents = 701, asked_cents = 701 WHERE id = $1`, h.ID)
	require.NoError(t, err)
	_, err = s.Pool().Exec(ctx, `UPDATE accounts SET held_cents = held_cents + 1 WHERE id = 'acc-2'`)
	require.NoError(t, err)
	rec, err := reconcile.NewStore(s).Reconcile(ctx)
	require.NoError(t, err)
	require.Equal(t, []string{e2e}, rec.RefundsOverCredit, "300 returned and 701 held of 1,000")
	require.Empty(t, rec.UnbalancedHolds)

	// The database refuses held money that is not there.
	_, err = s.Pool().Exec(ctx, `UPDATE accounts SET held_cents = balance_cents + 1 WHERE id = 'acc-2'`)
	require.ErrorContains(t, err, "accounts_held_within_balance")
	_, err = s.Pool().Exec(ctx, `UPDATE accounts SET held_cents = -1 WHERE id = 'acc-2'`)
	require.ErrorContains(t, err, "accounts_held_within_balance")
}
