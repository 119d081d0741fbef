package scheduled_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/db/dbtest"
	"github.com/pixbank/pix/internal/durable/rows"
	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/saga/scheduled"
	"github.com/pixbank/pix/saga/transfer"
)

const ispb = "12345678"

type fixture struct {
	t      *testing.T
	s      *db.Store
	store  *scheduled.Store
	keys   db.KeyPolicy
	render func(scheduled.Scheduled) ([]byte, error)
}

func newFixture(t *testing.T) *fixture {
	if testing.Short() {
		t.Skip("needs PostgreSQL")
	}
	return fixtureOn(t, dbtest.New(t))
}

// fixtureOn is the fixture over s (a test's database: dbtest.NewClockBehind).
func fixtureOn(t *testing.T, s *db.Store) *fixture {
	return &fixture{t: t, s: s, store: scheduled.NewStore(s), keys: dbtest.Keys,
		render: func(s scheduled.Scheduled) ([]byte, error) { return json.Marshal(s) }}
}

func (f *fixture) account(id string, balance int64) {
	_, err := f.s.CreateAccount(context.Background(), db.NewAccount{ID: id, OwnerName: "Maria", OpeningBalanceCents: balance})
	require.NoError(f.t, err)
}

func (f *fixture) balance(id string) int64 {
	a, err := f.s.GetAccount(context.Background(), id)
	require.NoError(f.t, err)
	return a.BalanceCents
}

// schedule records a scheduled PIX of amount from account, due at runAt.
func (f *fixture) schedule(account string, amount int64, runAt time.Time) scheduled.Scheduled {
	ctx := context.Background()
	res := dbtest.Reserve(f.t, f.s, "sub-1")
	out, err := f.store.Create(ctx, *res, scheduled.New{ID: uuid.New(),
		TransferRequest: pix.TransferRequest{AccountID: account, AmountCents: amount, PixKey: "joao@example.com", Description: "aluguel"},
		ScheduledFor:    runAt.Format(time.DateOnly), RunAt: runAt}, f.render)
	require.NoError(f.t, err)
	return out
}

func (f *fixture) events(aggregateID string) []map[string]any {
	var out []map[string]any
	for _, e := range dbtest.OutboxEvents(f.t, f.s, "pix_scheduled", aggregateID) {
		var payload map[string]any
		require.NoError(f.t, json.Unmarshal(e.Payload, &payload))
		payload["event_type"] = e.Type
		out = append(out, payload)
	}
	return out
}

// booksBalance: the books as I2, I9 and I11 hold them
// (dbtest.RequireBooks).
func (f *fixture) booksBalance() {
	f.t.Helper()
	dbtest.RequireBooks(f.t, f.s)
}

// Scheduling debits nothing; on its date the run debits and hands the
// transfer over, once: an attempt whose answer was lost finds it executed
// and changes nothing, and a cancel after it is refused.
func TestARunDebitsOnceAndHandsOverTheTransfer(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	f.account("acc-1", 20_000)
	s := f.schedule("acc-1", 15_000, time.Now().Add(-time.Minute))
	require.Equal(t, scheduled.StatusScheduled, s.Status)
	require.EqualValues(t, 20_000, f.balance("acc-1"), "nothing debited at creation")

	ran, concluded, err := f.store.Run(ctx, s.ID, ispb)
	require.NoError(t, err)
	require.True(t, concluded)
	require.Equal(t, scheduled.StatusExecuted, ran.Status)
	require.NotNil(t, ran.TransferID)
	require.EqualValues(t, 5_000, f.balance("acc-1"))
	made, err := transfer.NewStore(f.s).GetTransfer(ctx, *ran.TransferID)
	require.NoError(t, err)
	require.Equal(t, pix.TransferDebited, made.Status, "the transfer saga takes it from here")
	require.Equal(t, *ran.EndToEndID, made.EndToEndID)
	require.EqualValues(t, 15_000, made.AmountCents)
	require.Equal(t, "joao@example.com", made.PixKey)

	again, concluded, err := f.store.Run(ctx, s.ID, ispb)
	require.NoError(t, err)
	require.False(t, concluded, "a retried attempt changes nothing")
	require.Equal(t, ran.TransferID, again.TransferID)
	require.EqualValues(t, 5_000, f.balance("acc-1"))

	_, _, err = f.store.Cancel(ctx, s.ID)
	require.ErrorIs(t, err, scheduled.ErrAlreadyRan)

	evs := f.events(s.ID.String())
	require.Len(t, evs, 2)
	require.Equal(t, scheduled.EventCreated, evs[0]["event_type"])
	require.Equal(t, scheduled.EventConcluded, evs[1]["event_type"])
	require.Equal(t, "executed", evs[1]["status"])
	require.Equal(t, ran.TransferID.String(), evs[1]["transfer_id"])
	f.booksBalance()
}

// The balance short on the date: failed with the reason, an event, nothing
// debited, no transfer.
func TestARunWithoutFundsFailsAndDebitsNothing(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	f.account("acc-1", 1_000)
	s := f.schedule("acc-1", 15_000, time.Now())

	ran, concluded, err := f.store.Run(ctx, s.ID, ispb)
	require.NoError(t, err)
	require.True(t, concluded)
	require.Equal(t, scheduled.StatusFailed, ran.Status)
	require.Equal(t, "insufficient_funds", *ran.FailureReason)
	require.Nil(t, ran.TransferID)
	require.EqualValues(t, 1_000, f.balance("acc-1"))
	evs := f.events(s.ID.String())
	require.Len(t, evs, 2)
	require.Equal(t, "failed", evs[1]["status"])
	require.Equal(t, "insufficient_funds", evs[1]["failure_reason"])

	_, _, err = f.store.Cancel(ctx, s.ID)
	require.ErrorIs(t, err, scheduled.ErrAlreadyRan, "it ran, though it failed")
	f.booksBalance()
}

// Money held on the date (a cautionary block, a MED) is not the run's to
// spend (I11): the run fails as with the balance short, although the
// balance covers it; nothing is debited and the hold stays.
func TestARunSparesHeldMoney(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	f.account("acc-1", 20_000)
	s := f.schedule("acc-1", 15_000, time.Now())
	require.NoError(t, db.InTx(ctx, f.s.Pool(), func(tx pgx.Tx) error {
		_, _, err := db.Hold(ctx, tx, db.NewHold{Ref: "judicial:1", AccountID: "acc-1", AmountCents: 5_001, Kind: "judicial"})
		return err
	}))

	ran, concluded, err := f.store.Run(ctx, s.ID, ispb)
	require.NoError(t, err)
	require.True(t, concluded)
	require.Equal(t, scheduled.StatusFailed, ran.Status)
	require.Equal(t, "insufficient_funds", *ran.FailureReason)
	a, err := f.s.GetAccount(ctx, "acc-1")
	require.NoError(t, err)
	require.Equal(t, [2]int64{20_000, 5_001}, [2]int64{a.BalanceCents, a.HeldCents})
	f.booksBalance()
}

// A cancel before the date: cancelled, asked again the same answer, and
// the run then debits nothing.
func TestACancelBeforeTheDateStopsTheRun(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	f.account("acc-1", 20_000)
	s := f.schedule("acc-1", 15_000, time.Now().AddDate(0, 0, 30))

	c, cancelled, err := f.store.Cancel(ctx, s.ID)
	require.NoError(t, err)
	require.True(t, cancelled)
	require.Equal(t, scheduled.StatusCancelled, c.Status)
	c, cancelled, err = f.store.Cancel(ctx, s.ID)
	require.NoError(t, err, "a cancel whose answer was lost, asked again")
	require.False(t, cancelled)
	require.Equal(t, scheduled.StatusCancelled, c.Status)

	ran, concluded, err := f.store.Run(ctx, s.ID, ispb)
	require.NoError(t, err)
	require.False(t, concluded)
	require.Equal(t, scheduled.StatusCancelled, ran.Status)
	require.EqualValues(t, 20_000, f.balance("acc-1"))
	require.Len(t, f.events(s.ID.String()), 2, "created, concluded: one conclusion")

	_, _, err = f.store.Cancel(ctx, uuid.New())
	require.ErrorIs(t, err, scheduled.ErrNotFound)
	_, _, err = f.store.Run(ctx, uuid.New(), ispb)
	require.ErrorIs(t, err, scheduled.ErrNotFound)
}

// A cancel at the same instant as the date: whichever takes the row
// first decides, the other sees its decision, and the money follows the
// row, for every one of many races.
func TestACancelRacingTheRunAgreesWithTheRow(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	const n, amount = 40, 100
	f.account("acc-1", n*amount)
	ids := make([]uuid.UUID, n)
	for i := range ids {
		ids[i] = f.schedule("acc-1", amount, time.Now()).ID
	}
	type outcome struct {
		run                scheduled.Scheduled
		ranNow             bool
		cancel             scheduled.Scheduled
		cancelled, refused bool
		runErr, cancelErr  error
	}
	outcomes := make([]outcome, n)
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Add(2)
		go func() {
			defer wg.Done()
			outcomes[i].run, outcomes[i].ranNow, outcomes[i].runErr = f.store.Run(ctx, id, ispb)
		}()
		go func() {
			defer wg.Done()
			var err error
			outcomes[i].cancel, outcomes[i].cancelled, err = f.store.Cancel(ctx, id)
			outcomes[i].refused = errors.Is(err, scheduled.ErrAlreadyRan)
			if !outcomes[i].refused {
				outcomes[i].cancelErr = err
			}
		}()
	}
	wg.Wait()
	var executed int64
	for i, o := range outcomes {
		require.NoError(t, o.runErr, "run %d", i)
		require.NoError(t, o.cancelErr, "cancel %d", i)
		final, err := f.store.Get(ctx, ids[i])
		require.NoError(t, err)
		switch final.Status {
		case scheduled.StatusExecuted:
			executed++
			require.True(t, o.ranNow && o.refused && !o.cancelled, "%d: executed, so the run won and the cancel was refused: %+v", i, o)
		case scheduled.StatusCancelled:
			require.True(t, o.cancelled && !o.ranNow && o.run.Status == scheduled.StatusCancelled, "%d: cancelled, so the cancel won: %+v", i, o)
		default:
			t.Fatalf("%d: ended %s", i, final.Status)
		}
	}
	require.EqualValues(t, n*amount-executed*amount, f.balance("acc-1"))
	f.booksBalance()
	t.Logf("%d of %d runs won the race", executed, n)
}

// The queue serves a new scheduled PIX to its dispatcher at once (its run
// starts and sleeps), and a run started is not rechecked before its time:
// a PIX 30 days ahead costs no start until then.
func TestTheQueueDoesNotRecheckASleepingRunBeforeItsTime(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	f.account("acc-1", 20_000)
	runAt := time.Now().AddDate(0, 0, 30)
	s := f.schedule("acc-1", 15_000, runAt)

	q := f.store.Queue()
	claimed, err := q.Claim(ctx, 10, time.Minute)
	require.NoError(t, err)
	require.Len(t, claimed, 1)
	require.Equal(t, s.ID.String(), claimed[0].Key)
	require.Equal(t, "scheduled", claimed[0].Status)
	require.NoError(t, q.MarkDispatched(ctx, claimed, nil, rows.Recheck{After: time.Minute, Max: 15 * time.Minute}))

	var due time.Time
	require.NoError(t, f.s.Pool().QueryRow(ctx, `SELECT dispatch_due_at FROM pix_scheduled WHERE id = $1`, s.ID).Scan(&due))
	require.False(t, due.Before(runAt.Add(-time.Second)), "rechecked at %s, before its time %s", due, runAt)

	_, _, err = f.store.Cancel(ctx, s.ID)
	require.NoError(t, err)
	var open bool
	require.NoError(t, f.s.Pool().QueryRow(ctx, `SELECT dispatch_due_at IS NOT NULL FROM pix_scheduled WHERE id = $1`, s.ID).Scan(&open))
	require.False(t, open, "a concluded row leaves the queue")
}

// A missing or closed account is refused at creation, nothing written.
func TestCreationRefusesAMissingAccount(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	res := dbtest.Reserve(t, f.s, "sub-1")
	_, err := f.store.Create(ctx, *res, scheduled.New{ID: uuid.New(),
		TransferRequest: pix.TransferRequest{AccountID: "nobody", AmountCents: 1, PixKey: "k"},
		ScheduledFor:    time.Now().Format(time.DateOnly), RunAt: time.Now()}, f.render)
	require.ErrorIs(t, err, pix.ErrAccountNotFound)
	list, err := f.store.List(ctx, "nobody", "", nil, 10)
	require.NoError(t, err)
	require.Empty(t, list)
}

// Only the run's timer says when: a run asked long before its run_at
// debits nothing and fails (retried), the row still scheduled.
func TestARunAskedEarlyDebitsNothing(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	f.account("acc-1", 20_000)
	s := f.schedule("acc-1", 15_000, time.Now().Add(time.Hour))
	_, _, err := f.store.Run(ctx, s.ID, ispb)
	require.ErrorContains(t, err, "not yet")
	got, err := f.store.Get(ctx, s.ID)
	require.NoError(t, err)
	require.Equal(t, scheduled.StatusScheduled, got.Status)
	require.EqualValues(t, 20_000, f.balance("acc-1"))
}

// An account holds at most its limit of scheduled PIX still to run, even
// asked at once; one cancelled or run frees its place.
func TestAnAccountHoldsAtMostItsLimit(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	f.account("acc-1", 20_000)
	limited := f.store.WithMaxPending(3)
	create := func() error {
		res := dbtest.Reserve(t, f.s, "sub-1")
		_, err := limited.Create(ctx, *res, scheduled.New{ID: uuid.New(),
			TransferRequest: pix.TransferRequest{AccountID: "acc-1", AmountCents: 100, PixKey: "k"},
			ScheduledFor:    time.Now().Format(time.DateOnly), RunAt: time.Now().AddDate(0, 0, 1)}, f.render)
		return err
	}
	errs := make([]error, 8)
	var wg sync.WaitGroup
	for i := range errs {
		wg.Go(func() { errs[i] = create() })
	}
	wg.Wait()
	var made int
	for _, err := range errs {
		if err == nil {
			made++
			continue
		}
		require.ErrorIs(t, err, scheduled.ErrLimitReached)
	}
	require.Equal(t, 3, made, "8 asked at once, 3 allowed")
	list, err := limited.List(ctx, "acc-1", scheduled.StatusScheduled, nil, 10)
	require.NoError(t, err)
	require.Len(t, list, 3)

	_, _, err = limited.Cancel(ctx, list[0].ID)
	require.NoError(t, err)
	require.NoError(t, create(), "a cancelled one frees its place")
	require.ErrorIs(t, create(), scheduled.ErrLimitReached)
}
