package db_test

import (
	"context"
	"errors"
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
	err1 = first(ctx, tx1)
	conn, err := s.Pool().Acquire(ctx)
	require.NoError(t, err)
	defer conn.Release()
	var pid uint32
	require.NoError(t, conn.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid))
	done := make(chan error, 1)
	go func() {
		done <- pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error { return second(ctx, tx) })
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
	s := dbtest.New(t)
	openAccount(t, s, "acc-1", 10_000)
	var a, b pix.Hold
	err1, err2 := race(t, s, holdCall(block("a", "acc-1", "", 10_000), &a),
		holdCall(db.NewHold{Ref: "b", AccountID: "acc-1", AmountCents: 10_000, UpTo: true, Kind: "med"}, &b))
	require.NoError(t, err1)
	require.ErrorIs(t, err2, pix.ErrInsufficientFunds, "up to, with nothing left")
	requireMoney(t, s, "acc-1", 10_000, 10_000)
	requireBooks(t, s)
}

// A hold and a transfer's debit at once on the last money, in both
// orders: one of them wins.
func TestRaceAHoldAndADebit(t *testing.T) {
	t.Run("the hold first", func(t *testing.T) {
		s := dbtest.New(t)
		openAccount(t, s, "acc-1", 10_000)
		var h pix.Hold
		err1, err2 := race(t, s, holdCall(block("a", "acc-1", "", 6_000), &h), transferCall("acc-1", 6_000))
		require.NoError(t, err1)
		require.ErrorIs(t, err2, pix.ErrInsufficientFunds)
		requireMoney(t, s, "acc-1", 10_000, 6_000)
		requireBooks(t, s)
	})
	t.Run("the debit first", func(t *testing.T) {
		s := dbtest.New(t)
		openAccount(t, s, "acc-1", 10_000)
		var h pix.Hold
		err1, err2 := race(t, s, transferCall("acc-1", 6_000), holdCall(block("a", "acc-1", "", 6_000), &h))
		require.NoError(t, err1)
		require.ErrorIs(t, err2, pix.ErrInsufficientFunds)
		requireMoney(t, s, "acc-1", 4_000, 0)
		requireBooks(t, s)
	})
}

// A release and a capture of one hold at once, in both orders: the hold
// ends once, as the first says.
func TestRaceAReleaseAndACapture(t *testing.T) {
	setUp := func(t *testing.T) (*db.Store, string, uuid.UUID) {
		s := dbtest.New(t)
		openAccount(t, s, "acc-1", 0)
		e2e := creditPIX(t, s, 1, "acc-1", 10_000)
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
		requireBooks(t, s)
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
		requireBooks(t, s)
	})
}

// A devolução of a PIX and a hold of that PIX at once, in both orders:
// together they would exceed the PIX's credit, so one of them is refused
// (the account could pay both).
func TestRaceADevolucaoAndAHoldOfOnePIX(t *testing.T) {
	setUp := func(t *testing.T) (*db.Store, string) {
		s := dbtest.New(t)
		openAccount(t, s, "acc-1", 50_000)
		return s, creditPIX(t, s, 1, "acc-1", 10_000)
	}
	t.Run("the devolução first", func(t *testing.T) {
		s, e2e := setUp(t)
		var h pix.Hold
		err1, err2 := race(t, s, refundCall(e2e, 6_000, nil), holdCall(block("block:1", "acc-1", e2e, 6_000), &h))
		require.NoError(t, err1)
		require.ErrorIs(t, err2, pix.ErrHoldExceedsCredit)
		requireMoney(t, s, "acc-1", 54_000, 0)
		requireBooks(t, s)
	})
	t.Run("the hold first", func(t *testing.T) {
		s, e2e := setUp(t)
		var h pix.Hold
		err1, err2 := race(t, s, holdCall(block("block:1", "acc-1", e2e, 6_000), &h), refundCall(e2e, 6_000, nil))
		require.NoError(t, err1)
		require.ErrorIs(t, err2, pix.ErrRefundExceedsCredit, "the held part of the PIX is not the customer's to return")
		requireMoney(t, s, "acc-1", 60_000, 6_000)
		requireBooks(t, s)
	})
}

// Many holds and debits at once, free-running, on an account that can pay
// half of them: exactly half win, whichever they are.
func TestManyHoldsAndDebitsAtOnce(t *testing.T) {
	ctx := context.Background()
	s := dbtest.New(t)
	openAccount(t, s, "acc-1", 5_000)
	const n = 10
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		call := transferCall("acc-1", 1_000)
		if i%2 == 0 {
			call = holdCall(block("block:"+string(rune('a'+i)), "acc-1", "", 1_000), new(pix.Hold))
		}
		wg.Go(func() {
			errs[i] = db.InTx(ctx, s.Pool(), func(tx pgx.Tx) error { return call(ctx, tx) })
		})
	}
	wg.Wait()
	won := 0
	for i, err := range errs {
		switch {
		case err == nil:
			won++
		case errors.Is(err, pix.ErrInsufficientFunds):
		default:
			t.Fatalf("call %d: %v", i, err)
		}
	}
	require.Equal(t, 5, won)
	a := account(t, s, "acc-1")
	require.Zero(t, a.AvailableCents)
	requireBooks(t, s)
}
