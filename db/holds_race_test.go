package db_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/db/dbtest"
	"github.com/pixbank/pix/internal/pix"
)

// The money API's races (I11): two calls at once on the same money, each
// ending with one winner and the books exact. Each race is run in both
// orders, deterministically: the first call's transaction does its work
// and stays open while the second runs beside it; the first commits once
// the second waits for a lock it holds (or has ended: a version without
// the lock need not wait, and then decides on what it read before the
// first committed). Each fails on a version without the lock it is about
// (docs/design.md, "Lock order").

type moneyCall func(ctx context.Context, tx pgx.Tx) error

// race runs first in a transaction left open, then second in a
// transaction of its own on another connection, and commits first once
// second waits for a lock first holds, or has ended. It returns each
// one's error; first's transaction is rolled back when it failed.
func race(t *testing.T, s *db.Store, first, second moneyCall) (err1, err2 error) {
	t.Helper()
	ctx := context.Background()
	tx1, err := s.Pool().Begin(ctx)
	require.NoError(t, err)
	err1 = first(ctx, db.NotingFills(tx1))
	conn, err := s.Pool().Acquire(ctx)
	require.NoError(t, err)
	defer conn.Release()
	var pid uint32
	require.NoError(t, conn.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid))
	done := make(chan error, 1)
	go func() {
		done <- pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error { return second(ctx, db.NotingFills(tx)) })
	}()
	ended, waited := false, false
	for deadline := time.Now().Add(10 * time.Second); !ended && !waited; {
		select {
		case err2 = <-done:
			ended = true
			continue
		default:
		}
		require.NoError(t, s.Pool().QueryRow(ctx, `SELECT cardinality(pg_blocking_pids($1)) > 0`, pid).Scan(&waited))
		require.True(t, time.Now().Before(deadline), "the second call neither waited for a lock nor ended within 10 s")
		time.Sleep(2 * time.Millisecond)
	}
	if err1 == nil {
		require.NoError(t, tx1.Commit(ctx))
	} else {
		require.NoError(t, tx1.Rollback(ctx))
	}
	if !ended {
		err2 = <-done
	}
	t.Logf("the second call waited for the first's lock: %v; first: %v; second: %v", waited, err1, err2)
	return err1, err2
}

func holdCall(h db.NewHold, out *pix.Hold) moneyCall {
	return func(ctx context.Context, tx pgx.Tx) (err error) {
		*out, _, err = db.Hold(ctx, tx, h)
		return err
	}
}

// transferCall debits and hands over a transfer, as a saga does (the
// scheduled PIX's run).
func transferCall(account string, amount int64) moneyCall {
	return func(ctx context.Context, tx pgx.Tx) error {
		d, err := db.DebitAccount(ctx, tx, account, amount)
		if err != nil {
			return err
		}
		_, err = db.RecordTransfer(ctx, tx, newTransfer(account, amount), nil, "test-saga", d)
		return err
	}
}

func refundCall(e2e string, amount int64, holdID *uuid.UUID) moneyCall {
	return func(ctx context.Context, tx pgx.Tx) error {
		nr := db.NewRefund{ID: pix.NewRefundID(), RefundRequest: pix.RefundRequest{EndToEndID: e2e, AmountCents: amount}}
		if holdID != nil {
			nr.Hold = *holdID
		}
		_, err := db.RecordRefund(ctx, tx, nr, nil, "test-saga")
		return err
	}
}

func releaseCall(id *uuid.UUID, released *bool) moneyCall {
	return func(ctx context.Context, tx pgx.Tx) (err error) {
		var h pix.Hold
		h, *released, err = db.Release(ctx, tx, *id, "72 h")
		if err == nil && !*released && h.Status != pix.HoldCaptured {
			return errors.New("a release that did not release found the hold " + h.Status)
		}
		return err
	}
}

// Two holds at once on the last available money: the first holds it, the
// second is refused.
func TestRaceTwoHoldsOnTheLastMoney(t *testing.T) {
	s := dbtest.NewWithAccount(t, "acc-1", 10_000)
	var a, b pix.Hold
	err1, err2 := race(t, s, holdCall(block("a", "acc-1", "", 10_000), &a),
		holdCall(db.NewHold{Ref: "b", AccountID: "acc-1", AmountCents: 10_000, UpTo: true, Kind: "med"}, &b))
	require.NoError(t, err1)
	require.ErrorIs(t, err2, pix.ErrInsufficientFunds, "up to, with nothing left")
	requireMoney(t, s, "acc-1", 10_000, 10_000)
	dbtest.RequireBooks(t, s)
}

// A hold and a transfer's debit at once on the last money, in both
// orders: one of them wins.
func TestRaceAHoldAndADebit(t *testing.T) {
	t.Run("the hold first", func(t *testing.T) {
		s := dbtest.NewWithAccount(t, "acc-1", 10_000)
		var h pix.Hold
		err1, err2 := race(t, s, holdCall(block("a", "acc-1", "", 6_000), &h), transferCall("acc-1", 6_000))
		require.NoError(t, err1)
		require.ErrorIs(t, err2, pix.ErrInsufficientFunds)
		requireMoney(t, s, "acc-1", 10_000, 6_000)
		dbtest.RequireBooks(t, s)
	})
	t.Run("the debit first", func(t *testing.T) {
		s := dbtest.NewWithAccount(t, "acc-1", 10_000)
		var h pix.Hold
		err1, err2 := race(t, s, transferCall("acc-1", 6_000), holdCall(block("a", "acc-1", "", 6_000), &h))
		require.NoError(t, err1)
		require.ErrorIs(t, err2, pix.ErrInsufficientFunds)
		requireMoney(t, s, "acc-1", 4_000, 0)
		dbtest.RequireBooks(t, s)
	})
}

// A release and a capture of one hold at once, in both orders: the hold
// ends once, as the first says.
func TestRaceAReleaseAndACapture(t *testing.T) {
	setUp := func(t *testing.T) (*db.Store, string, uuid.UUID) {
		s, e2e := spentPIX(t, 0)
		h, _, err := hold(s, block("block:1", "acc-1", e2e, 4_000))
		require.NoError(t, err)
		return s, e2e, uuid.MustParse(h.ID)
	}
	t.Run("the release first", func(t *testing.T) {
		s, e2e, id := setUp(t)
		var released bool
		err1, err2 := race(t, s, releaseCall(&id, &released), refundCall(e2e, 4_000, &id))
		require.NoError(t, err1)
		require.True(t, released)
		require.ErrorIs(t, err2, pix.ErrHoldEnded, "a released hold is not captured")
		requireMoney(t, s, "acc-1", 10_000, 0)
		dbtest.RequireBooks(t, s)
	})
	t.Run("the capture first", func(t *testing.T) {
		s, e2e, id := setUp(t)
		var released bool
		err1, err2 := race(t, s, refundCall(e2e, 4_000, &id), releaseCall(&id, &released))
		require.NoError(t, err1)
		require.NoError(t, err2)
		require.False(t, released, "captured first: the release changes nothing, and says so")
		h, err := s.GetHold(context.Background(), id)
		require.NoError(t, err)
		require.Equal(t, pix.HoldCaptured, h.Status)
		requireMoney(t, s, "acc-1", 6_000, 0)
		dbtest.RequireBooks(t, s)
	})
}

// A devolução of a PIX and a hold of that PIX at once, in both orders:
// together they would exceed the PIX's credit, so one of them is refused
// (the account could pay both).
func TestRaceADevolucaoAndAHoldOfOnePIX(t *testing.T) {
	setUp := func(t *testing.T) (*db.Store, string) {
		s := dbtest.NewWithAccount(t, "acc-1", 50_000)
		return s, dbtest.CreditNth(t, s, 1, "acc-1", 10_000)
	}
	t.Run("the devolução first", func(t *testing.T) {
		s, e2e := setUp(t)
		var h pix.Hold
		err1, err2 := race(t, s, refundCall(e2e, 6_000, nil), holdCall(block("block:1", "acc-1", e2e, 6_000), &h))
		require.NoError(t, err1)
		require.ErrorIs(t, err2, pix.ErrHoldExceedsCredit)
		requireMoney(t, s, "acc-1", 54_000, 0)
		dbtest.RequireBooks(t, s)
	})
	t.Run("the hold first", func(t *testing.T) {
		s, e2e := setUp(t)
		var h pix.Hold
		err1, err2 := race(t, s, holdCall(block("block:1", "acc-1", e2e, 6_000), &h), refundCall(e2e, 6_000, nil))
		require.NoError(t, err1)
		require.ErrorIs(t, err2, pix.ErrRefundExceedsCredit, "the held part of the PIX is not the customer's to return")
		requireMoney(t, s, "acc-1", 60_000, 6_000)
		dbtest.RequireBooks(t, s)
	})
}

// Many holds and debits at once, free-running, on an account that can pay
// half of them: exactly half win, whichever they are.
func TestManyHoldsAndDebitsAtOnce(t *testing.T) {
	ctx := context.Background()
	s := dbtest.NewWithAccount(t, "acc-1", 5_000)
	errs := atOnce(10, func(i int) error {
		call := transferCall("acc-1", 1_000)
		if i%2 == 0 {
			call = holdCall(block("block:"+string(rune('a'+i)), "acc-1", "", 1_000), new(pix.Hold))
		}
		return db.InTx(ctx, s.Pool(), func(tx pgx.Tx) error { return call(ctx, tx) })
	})()
	require.Equal(t, 5, winners(t, errs, pix.ErrInsufficientFunds))
	a := account(t, s, "acc-1")
	require.Zero(t, a.AvailableCents)
	dbtest.RequireBooks(t, s)
}

// pausedCredit receives the PIX dbtest.E2EID(n) of amount to account and credits
// it (Store.Credit, in a goroutine), paused once it holds the account's
// lock: a trigger makes its pix_credits insert, in its Credit statement,
// wait for an advisory lock the test holds. It returns once the credit
// waits there. resume lets it go and returns its outcome and how many
// times its transaction ran (a sequence: nextval outlives a rollback): 1,
// unless a deadlock or a serialization failure made it run again.
func pausedCredit(t *testing.T, s *db.Store, n int, account string, amount int64) (resume func() (db.CreditOutcome, int64, error)) {
	t.Helper()
	ctx := context.Background()
	key := 1 + rand.Int64N(1<<62) // the test database is shared: a key of this test's own
	holder, err := s.Pool().Acquire(ctx)
	require.NoError(t, err)
	_, err = holder.Exec(ctx, `SELECT pg_advisory_lock($1)`, key)
	require.NoError(t, err)
	_, err = s.Pool().Exec(ctx, fmt.Sprintf(`
		CREATE SEQUENCE credit_tries;
		CREATE FUNCTION pause_credit() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN PERFORM nextval('credit_tries'); PERFORM pg_advisory_xact_lock_shared(%d); RETURN NEW; END $$;
		CREATE TRIGGER pause_credit BEFORE INSERT ON pix_credits FOR EACH ROW EXECUTE FUNCTION pause_credit();`, key))
	require.NoError(t, err)
	n1 := dbtest.Notice(dbtest.E2EID(n), account, amount)
	_, err = s.Receive(ctx, n1)
	require.NoError(t, err)
	done := inBackground(func() (db.CreditOutcome, error) { return s.Credit(ctx, n1.EndToEndID, 1, 1) })
	require.Eventually(t, func() bool {
		var waits bool
		require.NoError(t, s.Pool().QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted
			AND ((classid::bigint << 32) | objid::bigint) = $1)`, key).Scan(&waits))
		return waits
	}, 10*time.Second, 2*time.Millisecond, "the credit never reached its insert")
	return func() (db.CreditOutcome, int64, error) {
		_, err := holder.Exec(ctx, `SELECT pg_advisory_unlock($1)`, key)
		require.NoError(t, err)
		holder.Release()
		r := <-done
		var tries int64
		require.NoError(t, s.Pool().QueryRow(ctx, `SELECT last_value FROM credit_tries`).Scan(&tries))
		_, err = s.Pool().Exec(ctx, `DROP TRIGGER pause_credit ON pix_credits`)
		require.NoError(t, err)
		return r.val, tries, r.err
	}
}

// creditBehind receives the PIX dbtest.E2EID(n) of amount to account and starts
// its credit (Store.Credit, in a goroutine), and returns once the credit
// waits for a lock tx holds (what: what that is, if it never does); done
// is the credit's error.
func creditBehind(t *testing.T, s *db.Store, tx pgx.Tx, n int, account string, amount int64, what string) (e2e string, done <-chan error) {
	t.Helper()
	ctx := context.Background()
	var pid uint32
	require.NoError(t, tx.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid))
	pixNote := dbtest.Notice(dbtest.E2EID(n), account, amount)
	_, err := s.Receive(ctx, pixNote)
	require.NoError(t, err)
	out := make(chan error, 1)
	go func() {
		_, err := s.Credit(ctx, pixNote.EndToEndID, 1, 1)
		out <- err
	}()
	require.Eventually(t, func() bool {
		var blocked bool
		require.NoError(t, s.Pool().QueryRow(ctx,
			`SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE $1 = ANY (pg_blocking_pids(pid)))`, pid).Scan(&blocked))
		return blocked
	}, 10*time.Second, 2*time.Millisecond, "the credit never waited for "+what)
	return pixNote.EndToEndID, out
}

// whileWaiting runs call in a transaction of its own, tried once (a
// deadlock is its error, not retried), on a connection of its own, and
// returns once it waits for a lock; wait returns its error.
func whileWaiting(t *testing.T, s *db.Store, call moneyCall) (wait func() error) {
	t.Helper()
	ctx := context.Background()
	conn, err := s.Pool().Acquire(ctx)
	require.NoError(t, err)
	var pid uint32
	require.NoError(t, conn.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid))
	done := make(chan error, 1)
	go func() {
		done <- pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error { return call(ctx, db.NotingFills(tx)) })
	}()
	require.Eventually(t, func() bool {
		var waits bool
		require.NoError(t, s.Pool().QueryRow(ctx, `SELECT cardinality(pg_blocking_pids($1)) > 0`, pid).Scan(&waits))
		return waits
	}, 10*time.Second, 2*time.Millisecond, "the call never waited for a lock")
	return func() error {
		defer conn.Release()
		return <-done
	}
}

// A credit that fills a hold, and a release of that hold at once: the
// credit holds the account's lock when the release comes. The release
// waits for the account before it locks the hold (the lock order), so the
// credit fills the hold, commits, and the release then releases what the
// hold holds; a release that locked the hold first would wait in a cycle
// with the credit's fill (a deadlock: one of them aborted, and run again).
func TestRaceACreditFillingAHoldAndItsRelease(t *testing.T) {
	s, _, h := heldPIX(t, 9_000)
	id := uuid.MustParse(h.ID)

	resume := pausedCredit(t, s, 2, "acc-1", 4_000)
	var released bool
	wait := whileWaiting(t, s, releaseCall(&id, &released))
	out, tries, err := resume()
	require.NoError(t, err)
	require.True(t, out.Credited)
	require.NoError(t, wait(), "the release: no deadlock")
	require.EqualValues(t, 1, tries, "the credit ran once: no deadlock, no retry")
	require.True(t, released)
	requireHold(t, s, h.ID, 5_000, 10_000, pix.HoldReleased) // filled by the credit, then released
	requireMoney(t, s, "acc-1", 5_000, 0)
	dbtest.RequireBooks(t, s)
}

// A credit that fills a hold, and a devolução capturing that hold at
// once: the capture decides on the hold as the credit left it (the
// account's lock, then the hold's), so the amount it asked, the hold's
// before the fill, is no longer the hold's: refused, nothing changed;
// asked again with the hold's amount, it captures it.
func TestRaceACreditFillingAHoldAndItsCapture(t *testing.T) {
	s, reported, h := heldPIX(t, 9_000)
	id := uuid.MustParse(h.ID)

	resume := pausedCredit(t, s, 2, "acc-1", 4_000)
	wait := whileWaiting(t, s, refundCall(reported, 1_000, &id))
	_, tries, err := resume()
	require.NoError(t, err)
	require.ErrorIs(t, wait(), pix.ErrHoldNotCapturable, "the hold holds 5,000 now")
	require.EqualValues(t, 1, tries, "the credit ran once: no deadlock, no retry")
	requireHold(t, s, h.ID, 5_000, 10_000, pix.HoldActive)
	_, err = captureRefund(s, reported, 5_000, id)
	require.NoError(t, err)
	requireMoney(t, s, "acc-1", 0, 0)
	dbtest.RequireBooks(t, s)
}

// A hold that fills and a credit to its account at once, in both orders:
// a credit committed before the hold is money the hold takes as available;
// one after it fills it. Either way the hold holds the same.
func TestRaceAFillingHoldAndACredit(t *testing.T) {
	t.Run("the credit first", func(t *testing.T) {
		s, reported := spentPIX(t, 10_000)
		resume := pausedCredit(t, s, 2, "acc-1", 4_000)
		var h pix.Hold
		wait := whileWaiting(t, s, holdCall(med("med:1", "acc-1", reported, 10_000), &h))
		_, tries, err := resume()
		require.NoError(t, err)
		require.NoError(t, wait())
		require.EqualValues(t, 1, tries)
		requireHold(t, s, h.ID, 4_000, 10_000, pix.HoldActive)
		require.Empty(t, fillsOf(t, s, h.ID), "the credit came before the hold: available when it was made")
		requireMoney(t, s, "acc-1", 4_000, 4_000)
		dbtest.RequireBooks(t, s)
	})
	t.Run("the hold first", func(t *testing.T) {
		s, reported := spentPIX(t, 10_000)
		ctx := context.Background()
		tx, err := s.Pool().Begin(ctx)
		require.NoError(t, err)
		h, _, err := db.Hold(ctx, tx, med("med:1", "acc-1", reported, 10_000))
		require.NoError(t, err)
		require.Zero(t, h.AmountCents)
		credited, done := creditBehind(t, s, tx, 2, "acc-1", 4_000, "the hold's transaction")
		require.NoError(t, tx.Commit(ctx))
		require.NoError(t, <-done)
		requireHold(t, s, h.ID, 4_000, 10_000, pix.HoldActive)
		require.Equal(t, map[string]int64{credited: 4_000}, fillsOf(t, s, h.ID), "the credit after the hold fills it")
		requireMoney(t, s, "acc-1", 4_000, 4_000)
		dbtest.RequireBooks(t, s)
	})
}

// holdHistory is a free-running history of money calls on the books of
// accounts, each of which, opened empty, received PIX of 10,000 (reported,
// the ones the holds are about) and spent some: workers run steps calls
// each at once, each call drawn by a seeded rand, each money call tried
// once (a deadlock or a serialization failure is its error), each credit's
// transaction counted (credit_tries: Store.Credit runs one again after a
// deadlock).
type holdHistory struct {
	s        *db.Store
	reported map[string][]string
	mu       sync.Mutex
	n        int // the PIX received so far: dbtest.E2EID(n)
	holds    []pix.Hold
	credits  int
	refusals map[string]int
}

func newHoldHistory(t *testing.T, accounts []string, pixes int, spent int64) *holdHistory {
	t.Helper()
	h := &holdHistory{s: dbtest.New(t), reported: map[string][]string{}, refusals: map[string]int{}}
	for _, a := range accounts {
		dbtest.OpenAccount(t, h.s, a, 0)
		for range pixes {
			h.n++
			h.reported[a] = append(h.reported[a], dbtest.CreditNth(t, h.s, h.n, a, 10_000))
		}
		debit(t, h.s, a, spent)
	}
	_, err := h.s.Pool().Exec(context.Background(), `
		CREATE SEQUENCE credit_tries;
		CREATE FUNCTION count_credit() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN PERFORM nextval('credit_tries'); RETURN NEW; END $$;
		CREATE TRIGGER count_credit BEFORE INSERT ON pix_credits FOR EACH ROW EXECUTE FUNCTION count_credit();`)
	require.NoError(t, err)
	return h
}

// once runs call in a transaction of its own, tried once: a deadlock is
// its error here.
func (h *holdHistory) once(ctx context.Context, call moneyCall) error {
	return db.InTxForTest(ctx, h.s, 1, func(tx pgx.Tx) error { return call(ctx, tx) })
}

// credit receives a new PIX of 1 to most to account and credits it.
func (h *holdHistory) credit(ctx context.Context, rnd *rand.Rand, account string, most int64) error {
	h.mu.Lock()
	h.n++
	id := h.n
	h.credits++
	h.mu.Unlock()
	nt := dbtest.Notice(dbtest.E2EID(id), account, 1+rnd.Int64N(most))
	_, err := h.s.Receive(ctx, nt)
	if err == nil {
		_, err = h.s.Credit(ctx, nt.EndToEndID, 1, 1)
	}
	return err
}

// hold makes a hold (once), and keeps it for the steps that end holds.
func (h *holdHistory) hold(ctx context.Context, nh db.NewHold) error {
	var made pix.Hold
	err := h.once(ctx, holdCall(nh, &made))
	if err == nil {
		h.mu.Lock()
		h.holds = append(h.holds, made)
		h.mu.Unlock()
	}
	return err
}

// someHold is one of the holds made so far, if any.
func (h *holdHistory) someHold(rnd *rand.Rand) (pix.Hold, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.holds) == 0 {
		return pix.Hold{}, false
	}
	return h.holds[rnd.IntN(len(h.holds))], true
}

// run runs the history: each of workers runs steps calls of step, its
// rand seeded with its number and seed; an error that is one of refusals
// (or a *pix.ValidationError, when invalid) is a refusal, counted; any
// other fails the test. Then each credit's transaction must have run once: no
// deadlock, no serialization failure.
func (h *holdHistory) run(t *testing.T, workers, steps int, seed uint64, invalid bool, refusals []error, step func(rnd *rand.Rand) error) {
	t.Helper()
	errs := make(chan error, workers*steps)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			rnd := rand.New(rand.NewPCG(uint64(w), seed))
			for range steps {
				err := step(rnd)
				var v *pix.ValidationError
				for _, r := range refusals {
					if errors.Is(err, r) {
						h.mu.Lock()
						h.refusals[r.Error()]++
						h.mu.Unlock()
						err = nil
					}
				}
				if invalid && errors.As(err, &v) {
					h.mu.Lock()
					h.refusals["invalid"]++
					h.mu.Unlock()
					err = nil
				}
				if err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("a call failed: %v", err)
	}
	var tries int64
	require.NoError(t, h.s.Pool().QueryRow(context.Background(), `SELECT last_value FROM credit_tries`).Scan(&tries))
	require.EqualValues(t, h.credits, tries, "each credit's transaction ran once: no deadlock, no serialization failure")
	t.Logf("%d credits, %d holds; refusals: %v", h.credits, len(h.holds), h.refusals)
	dbtest.RequireBooks(t, h.s)
}

// TestHoldHistoriesUnderConcurrency runs free-running histories of the
// money API's calls on holds (holdHistory): every call succeeds or is a
// refusal the money API names, no transaction meets a deadlock or a
// serialization failure, the books are exact after, and none of what a
// history's wrongs (a query each, counting what must not be) finds is.
//
//   - fills: credits, holds that fill, releases, captures and debits of
//     two accounts: each hold holds what it was made with and what its
//     fills added, never more than it fills to, and no credit gave more
//     than it brought.
//   - raises: releases and shrinks that raise the MEDs of their PIX
//     (RaiseFillTo) and fill from what is available (fillFromAvailable),
//     credits that fill, new holds (blocks of the reported PIX and of none,
//     MEDs), MEDs' fill-untils passing, and debits on ONE account: each
//     hold holds what it was made with, filled and shrunk, one event per
//     fill; no PIX's holds and devoluções take more than its credit; no
//     hold lacks while money is available (issue 37, attack review B;
//     review MED-1: a MED past its fill-until released raised another
//     beyond the money it freed).
func TestHoldHistoriesUnderConcurrency(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name     string
		accounts []string
		// Each account's PIX credited at the start, and what it spends
		// then (little available: the MEDs' holds lack).
		pixes          int
		spent          int64
		workers, steps int
		seed           uint64
		invalid        bool
		refusals       []error
		prepare        func(t *testing.T, h *holdHistory)
		step           func(h *holdHistory, rnd *rand.Rand, account string) error
		wrongs         map[string]string
		check          func(t *testing.T, h *holdHistory)
	}{
		{
			name: "fills", accounts: []string{"acc-1", "acc-2"}, pixes: 5, spent: 50_000, workers: 6, steps: 30, seed: 37,
			refusals: []error{pix.ErrHoldExceedsCredit, pix.ErrHoldNotCapturable, pix.ErrHoldEnded, pix.ErrInsufficientFunds},
			prepare: func(t *testing.T, h *holdHistory) {
				// The first hold of each account that fills, which nothing
				// ends: the first credits fill it.
				for _, a := range []string{"acc-1", "acc-2"} {
					first, _, err := hold(h.s, med("med:first:"+a, a, h.reported[a][4], 10_000))
					require.NoError(t, err)
					require.Zero(t, first.AmountCents)
				}
			},
			step: func(h *holdHistory, rnd *rand.Rand, account string) error {
				switch k := rnd.IntN(10); {
				case k < 4: // a PIX received
					return h.credit(ctx, rnd, account, 3_000)
				case k < 6: // a MED's hold
					return h.hold(ctx, med(uuid.NewString(), account, h.reported[account][rnd.IntN(4)], 1+rnd.Int64N(5_000)))
				case k < 7: // its release (once: a hold that ended is returned as it is)
					if held, ok := h.someHold(rnd); ok {
						return h.once(ctx, func(ctx context.Context, tx pgx.Tx) error {
							_, _, err := db.Release(ctx, tx, uuid.MustParse(held.ID), "DISAGREED")
							return err
						})
					}
				case k < 9: // its capture, of what it held when read
					if held, ok := h.someHold(rnd); ok {
						id := uuid.MustParse(held.ID)
						held, err := h.s.GetHold(ctx, id)
						if err != nil {
							return err
						}
						return h.once(ctx, refundCall(*held.EndToEndID, held.AmountCents, &id))
					}
				default: // a PIX sent
					return tryDebit(h.s, account, 1+rnd.Int64N(2_000))
				}
				return nil
			},
			wrongs: map[string]string{
				"a hold that holds other than it was made with and filled": `
					SELECT count(*) FROM pix_holds h
					WHERE h.amount_cents <> (SELECT (e.payload->>'amount_cents')::bigint FROM outbox_events e
					                         WHERE e.aggregate_id = h.id::text AND e.event_type = 'pix.hold.created')
					                      + (SELECT COALESCE(sum(f.amount_cents), 0) FROM pix_hold_fills f WHERE f.hold_id = h.id)
					   OR h.amount_cents > h.fill_to_cents`,
				"a credit that filled more than it brought": `
					SELECT count(*) FROM pix_credits c
					WHERE c.amount_cents < (SELECT COALESCE(sum(f.amount_cents), 0) FROM pix_hold_fills f WHERE f.source_kind = 'credit' AND f.source_id = c.end_to_end_id)`,
			},
			check: func(t *testing.T, h *holdHistory) {
				var fills, filledEvents int
				require.NoError(t, h.s.Pool().QueryRow(ctx, `SELECT (SELECT count(*) FROM pix_hold_fills),
					(SELECT count(*) FROM outbox_events WHERE event_type = 'pix.hold.filled')`).Scan(&fills, &filledEvents))
				t.Logf("%d fills", fills)
				require.Positive(t, fills, "no credit filled a hold: the history proves nothing of the fills")
				require.Equal(t, fills, filledEvents, "one event per fill")
				outboxRows(t, h.s) // each event as its schema says
			},
		},
		{
			name: "raises", accounts: []string{"acc-1"}, pixes: 3, spent: 25_000, workers: 6, steps: 60, seed: 53, invalid: true,
			refusals: []error{pix.ErrHoldExceedsCredit, pix.ErrInsufficientFunds},
			step: func(h *holdHistory, rnd *rand.Rand, account string) error {
				if err := raisesStep(ctx, h, rnd, account); err != nil {
					return err
				}
				// After every step, as every transaction leaves it (one
				// statement: one snapshot of what committed).
				var lacking int
				if err := h.s.Pool().QueryRow(ctx, lacksWhileAvailable).Scan(&lacking); err != nil {
					return err
				}
				if lacking > 0 {
					return fmt.Errorf("%d holds lack while money is available", lacking)
				}
				return nil
			},
			wrongs: map[string]string{
				"a hold that holds other than it was made with and filled": `
					SELECT count(*) FROM pix_holds h
					WHERE h.amount_cents <> (SELECT (e.payload->>'amount_cents')::bigint FROM outbox_events e
					                         WHERE e.aggregate_id = h.id::text AND e.event_type = 'pix.hold.created')
					                      + (SELECT COALESCE(sum(f.amount_cents), 0) FROM pix_hold_fills f WHERE f.hold_id = h.id)
					                      - (SELECT COALESCE(sum((e.payload->>'released_cents')::bigint), 0) FROM outbox_events e
					                         WHERE e.aggregate_id = h.id::text AND e.event_type = 'pix.hold.shrunk')
					   OR h.amount_cents > h.fill_to_cents`,
				"a fill without its event, or an event without its fill": `
					SELECT abs((SELECT count(*) FROM pix_hold_fills) - (SELECT count(*) FROM outbox_events WHERE event_type = 'pix.hold.filled'))`,
				// Before its fill-until: one past it lacks nothing (no inflow
				// fills it), and a raise of another beyond the money its
				// release or shrink frees fills from what is available.
				"a hold that lacks while money is available": lacksWhileAvailable,
				"a PIX whose holds and devoluções take more than its credit": `
					SELECT count(*) FROM pix_credits c
					WHERE c.amount_cents < (SELECT COALESCE(sum(COALESCE(h.fill_to_cents, h.amount_cents)), 0) FROM pix_holds h
					                        WHERE h.end_to_end_id = c.end_to_end_id AND h.status = 'active')
					                     + (SELECT COALESCE(sum(r.amount_cents), 0) FROM pix_refunds r
					                        WHERE r.end_to_end_id = c.end_to_end_id AND r.status <> 'reversed')`,
			},
			check: func(t *testing.T, h *holdHistory) {
				var fills, raised int
				require.NoError(t, h.s.Pool().QueryRow(ctx, `SELECT (SELECT count(*) FROM pix_hold_fills WHERE source_kind IN ('hold_release','hold_shrink')),
					(SELECT count(*) FROM outbox_events WHERE event_type = 'pix.hold.fill_raised')`).Scan(&fills, &raised))
				t.Logf("%d fills from freed money, %d raises", fills, raised)
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHoldHistory(t, tc.accounts, tc.pixes, tc.spent)
			if tc.prepare != nil {
				tc.prepare(t, h)
			}
			h.run(t, tc.workers, tc.steps, tc.seed, tc.invalid, tc.refusals, func(rnd *rand.Rand) error {
				account := tc.accounts[0]
				if len(tc.accounts) > 1 {
					account = tc.accounts[rnd.IntN(len(tc.accounts))]
				}
				return tc.step(h, rnd, account)
			})
			for why, query := range tc.wrongs {
				var wrong int
				require.NoError(t, h.s.Pool().QueryRow(ctx, query).Scan(&wrong))
				require.Zero(t, wrong, why)
			}
			tc.check(t, h)
		})
	}
}

// A return in parts (the hold that fills read under its locks, captured,
// and the next hold that fills for the rest, in one transaction) and a
// credit to the account at once: the credit waits for the return, then
// fills the next hold; the captured one took exactly what it held.
func TestRaceAReturnInPartsAndACredit(t *testing.T) {
	ctx := context.Background()
	s, reported, h := heldPIX(t, 7_000)

	tx, err := s.Pool().Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	held, err := db.LockHold(ctx, tx, uuid.MustParse(h.ID))
	require.NoError(t, err)
	_, done := creditBehind(t, s, tx, 2, "acc-1", 5_000, "the return")
	_, err = db.RecordRefund(ctx, tx, db.NewRefund{ID: pix.NewRefundID(), Hold: uuid.MustParse(h.ID),
		RefundRequest: pix.RefundRequest{EndToEndID: reported, AmountCents: held.AmountCents}}, nil, "med")
	require.NoError(t, err)
	next, _, err := db.Hold(ctx, tx, med("med:1:part:2", "acc-1", reported, 10_000-held.AmountCents))
	require.NoError(t, err)
	require.NoError(t, tx.Commit(ctx))
	require.NoError(t, <-done)

	requireHold(t, s, h.ID, 3_000, 10_000, pix.HoldCaptured)
	requireHold(t, s, next.ID, 5_000, 7_000, pix.HoldActive)
	requireMoney(t, s, "acc-1", 5_000, 5_000)
	dbtest.RequireBooks(t, s)
}

// lacksWhileAvailable counts the holds that lack, before their fill-until,
// while their account has money available: none, after every transaction.
const lacksWhileAvailable = `
	SELECT count(*) FROM pix_holds h WHERE h.status = 'active' AND h.amount_cents < h.fill_to_cents
	AND (h.fill_until IS NULL OR statement_timestamp() < h.fill_until)
	AND EXISTS (SELECT 1 FROM accounts a WHERE a.id = h.account_id AND a.balance_cents - a.held_cents > 0)`

// raisesStep is a step of the raises history (TestHoldHistoriesUnderConcurrency).
func raisesStep(ctx context.Context, h *holdHistory, rnd *rand.Rand, account string) error {
	reported := h.reported[account]
	switch k := rnd.IntN(14); {
	case k < 2:
		return h.credit(ctx, rnd, account, 1_500)
	case k >= 12: // a MED's fill-until passes: it lacks nothing more, its room stays reserved
		if held, ok := h.someHold(rnd); ok && held.FillToCents != nil {
			_, err := h.s.Pool().Exec(ctx, `UPDATE pix_holds SET fill_until = statement_timestamp() - interval '1 microsecond'
				WHERE id = $1 AND fill_until IS NULL`, held.ID)
			return err
		}
	case k < 5:
		nh := med(uuid.NewString(), account, reported[rnd.IntN(len(reported))], 1+rnd.Int64N(6_000))
		if rnd.IntN(3) == 0 {
			nh = db.NewHold{Ref: uuid.NewString(), AccountID: account, AmountCents: 1 + rnd.Int64N(3_000), UpTo: true, Kind: "cautionary_block"}
			if rnd.IntN(2) == 0 { // a block of a reported PIX: its MEDs are cut short, and raised when it ends
				nh.EndToEndID = reported[rnd.IntN(len(reported))]
			}
		}
		return h.hold(ctx, nh)
	case k < 7:
		if held, ok := h.someHold(rnd); ok {
			return h.once(ctx, func(ctx context.Context, tx pgx.Tx) error {
				_, _, err := db.Release(ctx, tx, uuid.MustParse(held.ID), "x")
				return err
			})
		}
	case k < 10:
		if held, ok := h.someHold(rnd); ok {
			return h.once(ctx, func(ctx context.Context, tx pgx.Tx) error {
				_, _, err := db.Shrink(ctx, tx, uuid.MustParse(held.ID), rnd.Int64N(3_000)+1, "x")
				return err
			})
		}
	default:
		return tryDebit(h.s, account, 1+rnd.Int64N(3_000))
	}
	return nil
}
