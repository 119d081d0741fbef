package db_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/db/dbtest"
	"github.com/pixbank/pix/internal/pix"
	refundsaga "github.com/pixbank/pix/saga/refund"
)

// A hold's fill-until (db.NewHold.FillUntil; issue 37): from that instant
// on, by the database's clock, an inflow fills it no more, in the inflow's
// own statement. Before, the fence was its holder's (saga/med's
// stopFilling, in the report's next transaction): a credit between the
// instant and that transaction filled the hold.

// dbNow is the database's clock (db.Now), read now.
func dbNow(t *testing.T, s *db.Store) time.Time {
	t.Helper()
	now, err := db.Now(context.Background(), s.Pool())
	require.NoError(t, err)
	return now
}

// emptyAccount is a store whose account acc-1 is opened empty, and an
// instant an hour ahead of the database's clock.
func emptyAccount(t *testing.T) (s *db.Store, ahead time.Time) {
	t.Helper()
	s = dbtest.New(t)
	dbtest.OpenAccount(t, s, "acc-1", 0)
	return s, dbNow(t, s).Add(time.Hour)
}

// fillsUntil is a hold of the account (of no PIX) that fills to amount from
// later inflows, until until (zero: none).
func fillsUntil(ref, account string, amount int64, until time.Time) db.NewHold {
	return db.NewHold{Ref: ref, AccountID: account, AmountCents: amount, UpTo: true, FillFromCredits: true, FillUntil: until,
		Kind: "med", Reason: "notificação de infração"}
}

// A credit after a hold's fill-until adds nothing to it, and what the hold
// lacks is left to the holds after it in the order (a newer hold takes the
// credit); a hold made after it takes what is available at once, the
// older one no longer lacking (AccountLacking). Before the instant it fills,
// as any. Seen failing on the old Fill (the old hold took the 4,000: held
// 4,000 by the first hold, 0 by the second).
func TestACreditAfterAHoldsFillUntilAddsNothingToIt(t *testing.T) {
	s, ahead := emptyAccount(t)
	ctx := context.Background()
	open, _, err := hold(s, fillsUntil("med:open", "acc-1", 1_000, ahead))
	require.NoError(t, err)
	require.NotNil(t, open.FillUntil)
	require.True(t, open.FillUntil.Equal(ahead.Truncate(time.Microsecond)))
	dbtest.CreditNth(t, s, 1, "acc-1", 1_000)
	requireHold(t, s, open.ID, 1_000, 1_000, pix.HoldActive)

	passed := dbNow(t, s) // before the credit's statements: past for them
	old, _, err := hold(s, fillsUntil("med:old", "acc-1", 5_000, passed))
	require.NoError(t, err)
	newer, _, err := hold(s, fillsUntil("med:newer", "acc-1", 3_000, ahead))
	require.NoError(t, err)
	requireHold(t, s, newer.ID, 0, 3_000, pix.HoldActive)

	dbtest.CreditNth(t, s, 2, "acc-1", 4_000)
	requireHold(t, s, old.ID, 0, 5_000, pix.HoldActive)
	requireHold(t, s, newer.ID, 3_000, 3_000, pix.HoldActive)
	requireMoney(t, s, "acc-1", 5_000, 4_000)

	// A hold made now takes what is available: the old one lacks nothing
	// any more.
	last, _, err := hold(s, fillsUntil("med:last", "acc-1", 2_000, ahead))
	require.NoError(t, err)
	requireHold(t, s, last.ID, 1_000, 2_000, pix.HoldActive)
	requireMoney(t, s, "acc-1", 5_000, 5_000)
	h, err := s.GetHold(ctx, uuid.MustParse(old.ID))
	require.NoError(t, err)
	require.Equal(t, int64(0), h.AmountCents, "what it held stays: nothing")
}

// At the boundary instant: a hold whose fill-until is the inflow
// statement's own start takes nothing; one a microsecond later fills. Both
// are set and the Fill run in one top-level statement (a function), whose
// statement_timestamp() every statement in it shares, so the instant is
// exact. Seen failing on the old Fill (the first hold took 3,000, the
// second 1,000).
func TestAHoldTakesNothingFromItsFillUntilOn(t *testing.T) {
	s, ahead := emptyAccount(t)
	ctx := context.Background()
	at, _, err := hold(s, fillsUntil("med:at", "acc-1", 3_000, ahead))
	require.NoError(t, err)
	before, _, err := hold(s, fillsUntil("med:before", "acc-1", 3_000, ahead))
	require.NoError(t, err)

	require.NoError(t, db.InTx(ctx, s.Pool(), func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `CREATE FUNCTION pg_temp.fill_at_the_instant(at uuid, before uuid, fill text, account text, cents bigint)
			RETURNS void LANGUAGE plpgsql AS $$
			BEGIN
				UPDATE pix_holds SET fill_until = statement_timestamp() WHERE id = at;
				UPDATE pix_holds SET fill_until = statement_timestamp() + interval '1 microsecond' WHERE id = before;
				UPDATE accounts SET balance_cents = balance_cents + cents WHERE id = account;
				EXECUTE fill USING 'credit'::text, 'E00000000000000000000000000000001'::text, account, cents, ''::text;
			END $$`); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `SELECT pg_temp.fill_at_the_instant($1, $2, $3, $4, $5)`, at.ID, before.ID, db.FillSQL(), "acc-1", int64(4_000))
		return err
	}))
	requireHold(t, s, at.ID, 0, 3_000, pix.HoldActive)
	requireHold(t, s, before.ID, 3_000, 3_000, pix.HoldActive)
	requireMoney(t, s, "acc-1", 4_000, 3_000)
}

// A hold made without a fill-until (before migration 0063, or by an older
// build during a rolling upgrade) is given one by its holder
// (db.SetFillUntil), once: never moved after; a hold that does not fill
// takes none; a hold made with one is the same hold asked again with it,
// and one made without it is the same hold whatever is asked (an older
// build's ref).
func TestAFillUntilIsSetOnceOnAHoldMadeWithout(t *testing.T) {
	s := dbtest.New(t)
	ctx := context.Background()
	dbtest.OpenAccount(t, s, "acc-1", 0)
	legacy, _, err := hold(s, fillsUntil("med:legacy", "acc-1", 1_000, time.Time{}))
	require.NoError(t, err)
	require.Nil(t, legacy.FillUntil)
	again, created, err := hold(s, fillsUntil("med:legacy", "acc-1", 1_000, time.Now().Add(time.Hour)))
	require.NoError(t, err)
	require.False(t, created)
	require.Equal(t, legacy.ID, again.ID)

	set := func(id string, until time.Time) (pix.Hold, bool) {
		var h pix.Hold
		var changed bool
		require.NoError(t, s.InTx(ctx, func(tx pgx.Tx) (err error) {
			h, changed, err = db.SetFillUntil(ctx, tx, uuid.MustParse(id), until)
			return err
		}))
		return h, changed
	}
	passed := dbNow(t, s)
	h, changed := set(legacy.ID, passed)
	require.True(t, changed)
	require.True(t, h.FillUntil.Equal(passed.Truncate(time.Microsecond)))
	h, changed = set(legacy.ID, passed.Add(time.Hour))
	require.False(t, changed, "never moved")
	require.True(t, h.FillUntil.Equal(passed.Truncate(time.Microsecond)))
	dbtest.CreditNth(t, s, 1, "acc-1", 1_000)
	requireHold(t, s, legacy.ID, 0, 1_000, pix.HoldActive)

	_, _, err = hold(s, fillsUntil("med:legacy", "acc-1", 1_000, time.Time{}))
	require.ErrorIs(t, err, pix.ErrHoldRefReused, "set: asked without one, it is another hold")

	blocked, _, err := hold(s, block("block:1", "acc-1", "", 500))
	require.NoError(t, err)
	h, changed = set(blocked.ID, passed)
	require.False(t, changed, "a hold that does not fill")
	require.Nil(t, h.FillUntil)

	_, _, err = hold(s, db.NewHold{Ref: "x", AccountID: "acc-1", AmountCents: 1, UpTo: true, FillUntil: passed, Kind: "med"})
	var invalid *pix.ValidationError
	require.ErrorAs(t, err, &invalid, "a fill-until without fill_from_credits")
}

// An older build, which knows no fill_until, reads and writes holds as
// before against the schema that has it (its statements name their
// columns; a column it does not know, as AddLaterColumns adds to this
// build's, is left to its default): made, filled, shrunk, released.
func TestHoldsWorkWithAColumnAddedAfterTheBuild(t *testing.T) {
	s := dbtest.New(t)
	ctx := context.Background()
	dbtest.AddLaterColumns(t, s, "pix_holds")
	dbtest.OpenAccount(t, s, "acc-1", 0)
	h, _, err := hold(s, fillsUntil("med:1", "acc-1", 3_000, time.Time{}))
	require.NoError(t, err)
	dbtest.CreditNth(t, s, 1, "acc-1", 2_000)
	requireHold(t, s, h.ID, 2_000, 3_000, pix.HoldActive)
	require.NoError(t, s.InTx(ctx, func(tx pgx.Tx) error {
		_, _, err := db.Shrink(ctx, tx, uuid.MustParse(h.ID), 1_000, "")
		return err
	}))
	requireHold(t, s, h.ID, 1_000, 1_000, pix.HoldActive)
	_, released, err := release(s, h.ID, "")
	require.NoError(t, err)
	require.True(t, released)
	requireMoney(t, s, "acc-1", 2_000, 0)
}

// A devolução captured in part of a hold kept (NewRefund.KeepHold), reversed
// after the hold's fill-until: its money is not restored into the hold (it
// would be held from the customer when no inflow fills that hold any more,
// until its holder ends it); the part stays unrestored, the PIX's room it
// took is free again, and the money flows as any reversal's: to the
// account's holds that still fill, then available. The books exact
// throughout: balance, held = the active holds, available = balance -
// held. Seen failing on the old Restore (the hold took the 6,000 back:
// held 6,000 by it, 0 by the other).
func TestAReversalAfterAHoldsFillUntilRestoresNothingIntoIt(t *testing.T) {
	ctx := context.Background()
	s, reported, h := heldPIX(t, 4_000)
	requireHold(t, s, h.ID, 6_000, 10_000, pix.HoldActive)
	r, err := capturePart(s, reported, 0, h.ID)
	require.NoError(t, err)
	requireHold(t, s, h.ID, 0, 4_000, pix.HoldActive)
	other, _, err := hold(s, fillsUntil("med:other", "acc-1", 50_000, dbNow(t, s).Add(time.Hour)))
	require.NoError(t, err)
	requireMoney(t, s, "acc-1", 0, 0)
	_, err = s.Pool().Exec(ctx, `UPDATE pix_holds SET fill_until = statement_timestamp() - interval '1 microsecond' WHERE id = $1`, h.ID)
	require.NoError(t, err)

	_, err = refundsaga.NewStore(s).ReverseRefund(ctx, r.ID, "NAO_REALIZADO", false)
	require.NoError(t, err)
	requireHold(t, s, h.ID, 0, 4_000, pix.HoldActive)
	requireHold(t, s, other.ID, 6_000, 50_000, pix.HoldActive)
	requireMoney(t, s, "acc-1", 6_000, 6_000)
	require.Empty(t, eventsOf(t, s, db.EventHoldRestored))
	var restoredAt *time.Time
	require.NoError(t, s.Pool().QueryRow(ctx, `SELECT restored_at FROM pix_hold_parts WHERE refund_id = $1`, r.ID).Scan(&restoredAt))
	require.Nil(t, restoredAt, "the part is not restored")
	require.NoError(t, db.InTx(ctx, s.Pool(), func(tx pgx.Tx) error {
		restored, err := db.RestoreHold(ctx, tx, r.ID)
		require.Equal(t, int64(0), restored, "nor later")
		return err
	}))
	dbtest.RequireBooks(t, s)

	// Nothing else fills: the money is available. The PIX's room is its
	// 10,000 less what the expired hold still fills to (4,000): a
	// devolução of the 6,000 the reversal freed is made, a cent more is
	// refused.
	_, _, err = release(s, other.ID, "")
	require.NoError(t, err)
	requireMoney(t, s, "acc-1", 6_000, 0)
	_, err = refund(t, s, reported, 6_001, anyone)
	require.ErrorIs(t, err, pix.ErrRefundExceedsCredit)
	_, err = refund(t, s, reported, 6_000, anyone)
	require.NoError(t, err)
	requireMoney(t, s, "acc-1", 0, 0)
	dbtest.RequireBooks(t, s)
}

// A credit that waits for the account's lock while a hold's fill-until
// passes fills nothing into it: the fence is read at the Fill statement's
// start, after the lock (statement_timestamp()), not at the credit's
// transaction's start. The hold's fill-until is a second ahead of the
// database's clock; another transaction holds the account's lock; the
// credit starts and waits for it (dbtest.WaitBlockedBy) before the
// fill-until; the lock is let go after it. Seen failing with the fence
// (the Fill's and the credit's probe's) read at the transaction's start
// (now(): the hold took the 2,000).
func TestACreditBlockedPastAHoldsFillUntilTakesNothing(t *testing.T) {
	s, _ := emptyAccount(t)
	ctx := context.Background()
	// 5 s: the set-up below (a key, a receive, a lock, the credit
	// blocked) must end before the fill-until on a loaded machine too.
	until := dbNow(t, s).Add(5 * time.Second)
	h, _, err := hold(s, fillsUntil("med:1", "acc-1", 2_000, until))
	require.NoError(t, err)

	e2e := dbtest.E2EID(1)
	_, err = s.CreatePixKey(ctx, db.NewPixKey{Key: "acc-1@example.com", KeyType: "email", AccountID: "acc-1"})
	require.NoError(t, err)
	_, err = s.Receive(ctx, dbtest.Notice(e2e, "acc-1", 2_000))
	require.NoError(t, err)

	locker, err := s.Pool().Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = locker.Rollback(ctx) }()
	_, err = locker.Exec(ctx, `SELECT 1 FROM accounts WHERE id = 'acc-1' FOR UPDATE`)
	require.NoError(t, err)
	credited := make(chan error, 1)
	go func() {
		_, err := s.Credit(ctx, e2e, 1, 1)
		credited <- err
	}()
	dbtest.WaitBlockedBy(t, s, locker.Conn().PgConn().PID())
	require.True(t, dbNow(t, s).Before(until), "the credit waits before the fill-until")
	require.Eventually(t, func() bool { return !dbNow(t, s).Before(until) }, 10*time.Second, 20*time.Millisecond)
	require.NoError(t, locker.Commit(ctx))
	require.NoError(t, <-credited)
	requireHold(t, s, h.ID, 0, 2_000, pix.HoldActive)
	requireMoney(t, s, "acc-1", 2_000, 0)
	dbtest.RequireBooks(t, s)
}

// A hold past its fill-until is not raised (RaiseFillTo) when its PIX gets
// room back, the same rule as Fill: no inflow fills it any more, so the
// room raised into it would be reserved of the PIX for nothing (a block or
// a devolução of the PIX refused, pix.ErrHoldExceedsCredit, for room no
// hold will ever hold), and what it is short of stays short. The money
// freed is the customer's, and the room the PIX's: a new block of it takes
// both. Seen failing on the old RaiseFillTo (issue 37, review R5 LOW-1: the
// hold was raised to 10,000 and the new block refused).
func TestAHoldPastItsFillUntilIsNotRaised(t *testing.T) {
	s, reported := spentPIX(t, 0)
	ctx := context.Background()
	blocked, _, err := hold(s, block("block:1", "acc-1", reported, 6_000))
	require.NoError(t, err)
	h := fillsUntil("med:1", "acc-1", 10_000, dbNow(t, s).Add(time.Hour))
	h.EndToEndID = reported
	m, _, err := hold(s, h)
	require.NoError(t, err)
	requireHold(t, s, m.ID, 4_000, 4_000, pix.HoldActive)
	require.Equal(t, int64(6_000), fillShort(t, s, m.ID))
	// Its fill-until passes (as a report's return_until does).
	_, err = s.Pool().Exec(ctx, `UPDATE pix_holds SET fill_until = statement_timestamp() - interval '1 second' WHERE id = $1`, m.ID)
	require.NoError(t, err)

	_, released, err := release(s, blocked.ID, "block 72h")
	require.NoError(t, err)
	require.True(t, released)
	requireHold(t, s, m.ID, 4_000, 4_000, pix.HoldActive)
	require.Equal(t, int64(6_000), fillShort(t, s, m.ID), "short stays: nothing fills it any more")
	require.Empty(t, eventsOf(t, s, "pix.hold.fill_raised"))
	requireMoney(t, s, "acc-1", 10_000, 4_000)

	again, _, err := hold(s, block("block:2", "acc-1", reported, 6_000))
	require.NoError(t, err, "the room freed is the PIX's again")
	require.Equal(t, int64(6_000), again.AmountCents)
	requireMoney(t, s, "acc-1", 10_000, 10_000)
	dbtest.RequireBooks(t, s)
}

// pastAndLacking is a PIX of acc-1 of 10,000 of which 7,000 was spent, its
// first MED's hold (3,000 of 10,000) past its fill-until, lacking, and a
// second MED of it cut short of all of it by the first (0 of 0, 10,000
// short), then a credit of 20,000 (E2EID(2)) that fills neither: the
// first fills no more and the second lacks nothing.
func pastAndLacking(t *testing.T) (s *db.Store, first, second pix.Hold) {
	t.Helper()
	s, reported := spentPIX(t, 7_000)
	first, _, err := hold(s, med("med:1", "acc-1", reported, 10_000))
	require.NoError(t, err)
	requireHold(t, s, first.ID, 3_000, 10_000, pix.HoldActive)
	_, err = s.Pool().Exec(context.Background(), `UPDATE pix_holds SET fill_until = statement_timestamp() - interval '1 second' WHERE id = $1`, first.ID)
	require.NoError(t, err)
	second, _, err = hold(s, med("med:2", "acc-1", reported, 10_000)) // the PIX's room all the first's: short
	require.NoError(t, err)
	requireHold(t, s, second.ID, 0, 0, pix.HoldActive)
	dbtest.CreditNth(t, s, 2, "acc-1", 20_000)
	requireMoney(t, s, "acc-1", 23_000, 3_000)
	dbtest.RequireNoHoldLacksWhileAvailable(t, s, "before")
	return s, first, second
}

// requireFilledOnce says the hold id was filled by source once, by cents,
// with one pix.hold.filled event that says so.
func requireFilledOnce(t *testing.T, s *db.Store, id string, source db.FillSource, cents int64) {
	t.Helper()
	require.Equal(t, map[string]int64{source.ID: cents}, fillsFrom(t, s, id, source.Kind))
	var filled []int64
	for _, e := range dbtest.OutboxEvents(t, s, db.AggregateHold, id) {
		if e.Type != db.EventHoldFilled {
			continue
		}
		var p struct {
			SourceKind  string `json:"source_kind"`
			SourceID    string `json:"source_id"`
			FilledCents int64  `json:"filled_cents"`
		}
		require.NoError(t, json.Unmarshal(e.Payload, &p))
		require.Equal(t, [2]string{source.Kind, source.ID}, [2]string{p.SourceKind, p.SourceID})
		filled = append(filled, p.FilledCents)
	}
	require.Equal(t, []int64{cents}, filled, "one pix.hold.filled event")
}

// A hold raised beyond the money freed (RaiseFillTo: a MED's hold of a PIX
// raised by the room a hold of the same PIX, past its fill-until and
// lacking, frees, what it filled to, beyond the money it frees, what it
// held) fills from what the account has available at once, in the
// release's transaction, as an inflow would: no hold lacks while money is
// available, so the money the MED lacks is neither spendable nor taken by
// a block, and what is left is available to both (review MED-1: the old
// release left the MED lacking 7,000 while 20,000 was available; a block
// of 1 cent was refused while a transfer took all of it). Seen failing on
// the old Release (the second MED held 3,000 of 10,000, 20,000 available).
func TestAHoldRaisedBeyondTheMoneyFreedFillsFromWhatIsAvailable(t *testing.T) {
	s, first, second := pastAndLacking(t)
	_, released, err := release(s, first.ID, "report ended")
	require.NoError(t, err)
	require.True(t, released)
	requireHold(t, s, second.ID, 10_000, 10_000, pix.HoldActive) // raised by 10,000, filled: 3,000 freed, 7,000 available
	requireMoney(t, s, "acc-1", 23_000, 10_000)
	dbtest.RequireNoHoldLacksWhileAvailable(t, s, "after the release")
	requireFilledOnce(t, s, second.ID, db.FillSource{Kind: db.FillByHoldRelease, ID: first.ID}, 10_000)

	_, _, err = hold(s, block("block:1", "acc-1", dbtest.E2EID(2), 13_001))
	require.ErrorIs(t, err, pix.ErrInsufficientFunds, "the money the MED holds")
	require.ErrorIs(t, tryDebit(s, "acc-1", 13_001), pix.ErrInsufficientFunds)
	b, _, err := hold(s, block("block:2", "acc-1", dbtest.E2EID(2), 13_000)) // what is genuinely available
	require.NoError(t, err)
	require.EqualValues(t, 13_000, b.AmountCents)
	require.ErrorIs(t, tryDebit(s, "acc-1", 1), pix.ErrInsufficientFunds, "nothing spendable")
	requireMoney(t, s, "acc-1", 23_000, 23_000)
	dbtest.RequireBooks(t, s)
}

// So is a hold raised by a shrink that frees room and no money (the first
// MED, past its fill-until and lacking, shrunk to what it holds: the 7,000
// of room it stops taking raises the second, which fills them from what
// is available). Seen failing on the old Shrink (the second MED held 0 of
// 7,000, 20,000 available).
func TestAHoldRaisedByAShrinkFillsFromWhatIsAvailable(t *testing.T) {
	s, first, second := pastAndLacking(t)
	require.NoError(t, s.InTx(context.Background(), func(tx pgx.Tx) error {
		_, shrunk, err := db.Shrink(context.Background(), tx, uuid.MustParse(first.ID), 3_000, "closed rejected")
		require.True(t, shrunk)
		return err
	}))
	requireHold(t, s, first.ID, 3_000, 3_000, pix.HoldActive)
	requireHold(t, s, second.ID, 7_000, 7_000, pix.HoldActive)
	requireMoney(t, s, "acc-1", 23_000, 10_000)
	dbtest.RequireNoHoldLacksWhileAvailable(t, s, "after the shrink")
	fills := fillsFrom(t, s, second.ID, db.FillByHoldShrink) // by the shrink's event
	require.Len(t, fills, 1, "one fill, from the shrink")
	for event := range fills {
		requireFilledOnce(t, s, second.ID, db.FillSource{Kind: db.FillByHoldShrink, ID: event}, 7_000)
	}
	require.ErrorIs(t, tryDebit(s, "acc-1", 13_001), pix.ErrInsufficientFunds)
	dbtest.RequireBooks(t, s)
}
