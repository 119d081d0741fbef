package scheduled_test

// Attacks on the scheduled PIX from outside its happy paths: who may ask,
// stale dispatchers, the gauges. Each test states the rule it holds the
// saga to. A finding outside saga/scheduled is proved by a test that
// skips unless PIX_ATTACK_UNFIXED=1 (it fails until the package named in
// it is fixed), so that the package's suite stays green meanwhile.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/api"
	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/internal/durable/rows"
	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/saga"
	"github.com/pixbank/pix/saga/sagatest"
	"github.com/pixbank/pix/saga/scheduled"
	"github.com/pixbank/pix/saga/transfer"
)

// keysOf counts the Idempotency-Keys a caller holds: what a request left
// behind.
func (f *fixture) keysOf(caller string) int {
	var n int
	require.NoError(f.t, f.s.Pool().QueryRow(context.Background(),
		`SELECT count(*) FROM idempotency_keys WHERE caller = $1`, caller).Scan(&n))
	return n
}

// Who may move money is settled before anything is written, whatever else
// is wrong with the request: a POST for an account the token does not
// grant is 403 and leaves no key behind, its date wrong or not (a date is
// no reason to look at the key of a request the caller may not make).
func TestAPostForAnotherAccountIsForbiddenWhateverItsDate(t *testing.T) {
	now := time.Date(2026, 12, 2, 13, 0, 0, 0, time.UTC)
	a := newAPI(t, now)
	for _, date := range []string{"2026-12-24", "2026-12-01", "2027-12-03", "24/12/2026"} {
		status, refused := a.Call(http.MethodPost, "/pix/scheduled", "joao", uuid.NewString(),
			map[string]any{"account_id": "acc-maria", "amount_cents": 100, "pix_key": "k", "scheduled_for": date})
		require.Equal(t, http.StatusForbidden, status, "%s: %v", date, refused)
		require.Equal(t, "forbidden_account", sagatest.Code(refused), date)
	}
	require.Zero(t, a.f.keysOf("joao"), "a forbidden request leaves no key behind")
	list, err := a.f.store.List(context.Background(), "acc-maria", "", nil, 10)
	require.NoError(t, err)
	require.Empty(t, list)

	// Its own account, a wrong date: the refusal is the key's answer, as
	// before, and replayed.
	key := uuid.NewString()
	body := map[string]any{"account_id": "acc-maria", "amount_cents": 100, "pix_key": "k", "scheduled_for": "2026-12-01"}
	status, refused := a.Call(http.MethodPost, "/pix/scheduled", "maria", key, body)
	require.Equal(t, http.StatusUnprocessableEntity, status)
	require.Equal(t, "invalid_request", sagatest.Code(refused))
	status, again := a.Call(http.MethodPost, "/pix/scheduled", "maria", key, body)
	require.Equal(t, http.StatusUnprocessableEntity, status)
	require.Equal(t, refused, again, "the key replays its refusal")
	require.Equal(t, 1, a.f.keysOf("maria"))
}

// A dispatcher that claimed the row before its run concluded it, and
// records its start after: the row stays out of the queue (no run started
// again for a concluded row), and a run started by that stale claim finds
// it concluded and debits nothing.
func TestAStaleClaimNeitherReopensNorRunsAConcludedRow(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	f.account("acc-1", 20_000)
	s := f.schedule("acc-1", 15_000, time.Now().Add(-time.Minute))
	q := f.store.Queue()
	claimed, err := q.Claim(ctx, 10, time.Minute)
	require.NoError(t, err)
	require.Len(t, claimed, 1)

	ran, concluded, err := f.store.Run(ctx, s.ID, ispb)
	require.NoError(t, err)
	require.True(t, concluded)
	require.Equal(t, scheduled.StatusExecuted, ran.Status)

	for _, began := range []bool{true, false} {
		started, open := claimed, []rows.Due(nil)
		if !began {
			started, open = nil, claimed
		}
		require.NoError(t, q.MarkDispatched(ctx, started, open, rows.Recheck{After: time.Minute, Max: 15 * time.Minute}))
		var due *time.Time
		require.NoError(t, f.s.Pool().QueryRow(ctx, `SELECT dispatch_due_at FROM pix_scheduled WHERE id = $1`, s.ID).Scan(&due))
		require.Nil(t, due, "a concluded row stays out of the queue")
	}
	again, err := q.Claim(ctx, 10, time.Minute)
	require.NoError(t, err)
	require.Empty(t, again)

	// The run the stale claim started (ALLOW_DUPLICATE after the first
	// completed): its RunScheduled changes nothing.
	acts := &scheduled.Activities{Store: f.store, BankISPB: ispb, Log: slog.New(slog.NewJSONHandler(io.Discard, nil))}
	out, err := acts.RunScheduled(ctx, s.ID.String())
	require.NoError(t, err)
	require.Equal(t, ran.TransferID, out.TransferID)
	require.EqualValues(t, 5_000, f.balance("acc-1"))
	f.booksBalance()
}

// The gauges are read from PostgreSQL at each scrape: the PIX still to
// run, those more than OverdueAfter past their time, and the cancels
// whose run's wake-up is pending for more than WakeLateAfter.
func TestTheGaugesCountPendingAndOverdue(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	f.account("acc-1", 20_000)
	f.schedule("acc-1", 100, time.Now().AddDate(0, 0, 3))
	f.schedule("acc-1", 100, time.Now().Add(-time.Hour))
	cancelled := f.schedule("acc-1", 100, time.Now().Add(-time.Hour))
	_, _, err := f.store.Cancel(ctx, cancelled.ID)
	require.NoError(t, err)

	pending, overdue, wakesLate, err := f.store.Pending(ctx, scheduled.OverdueAfter, scheduled.WakeLateAfter)
	require.NoError(t, err)
	require.EqualValues(t, 2, pending)
	require.EqualValues(t, 1, overdue)
	require.EqualValues(t, 0, wakesLate, "the cancel's wake-up is pending, not late yet")
	// A wake-up pending for longer than WakeLateAfter counts.
	_, err = f.s.Pool().Exec(ctx, `UPDATE pix_scheduled_cancel_wakes SET created_at = now() - interval '6 minutes' WHERE scheduled_id = $1`, cancelled.ID)
	require.NoError(t, err)
	_, _, wakesLate, err = f.store.Pending(ctx, scheduled.OverdueAfter, scheduled.WakeLateAfter)
	require.NoError(t, err)
	require.EqualValues(t, 1, wakesLate, "a cancel whose run was not woken for 6 minutes")

	reg := prometheus.NewPedanticRegistry()
	for _, c := range scheduled.Saga.Collectors(saga.Env{Store: f.s, Log: slog.New(slog.NewJSONHandler(io.Discard, nil))}) {
		if c != nil {
			require.NoError(t, reg.Register(c))
		}
	}
	n, err := testutil.GatherAndCount(reg, "pix_scheduled_pending", "pix_scheduled_overdue", "pix_scheduled_cancel_wakes_late")
	require.NoError(t, err)
	require.Equal(t, 3, n)
}

// Finding outside saga/scheduled (api: the Idempotency-Key layer): a key
// is the caller's across routes and its fingerprint is the body alone, so
// the same key and body sent to another route that moves money replays the
// first route's answer as the second's: POST /pix answers 201, replayed,
// with a scheduled PIX's body (status scheduled, nothing debited) as if
// the transfer were made. The rule: a key used for another operation is
// idempotency_key_reused (422), never another operation's answer.
func TestAKeyOfAScheduledPixIsNoTransfersAnswer(t *testing.T) {
	now := time.Now()
	f := newFixture(t)
	h := &scheduled.Handlers{Store: f.store, Keys: f.s, Temporal: &sagatest.Signals{}, Settings: scheduled.Settings{Hour: 6},
		Log: sagatest.Discard(), Now: func() time.Time { return now }}
	a := sagatest.NewAPI(t, f.s, sagatest.Options{Deps: api.Deps{Keys: f.keys},
		Callers: sagatest.Callers{"maria": sagatest.Customer("maria", "acc-maria")},
		Sagas:   []api.SagaHTTP{(&transfer.Handlers{Store: transfer.NewStore(f.s), BankISPB: ispb}).HTTP(), h.HTTP()}})
	f.account("acc-maria", 50_000)

	key := uuid.NewString()
	body := map[string]any{"account_id": "acc-maria", "amount_cents": 15000, "pix_key": "joao@example.com",
		"scheduled_for": now.AddDate(0, 0, 10).Format(time.DateOnly)}
	status, created := a.Call(http.MethodPost, "/pix/scheduled", "maria", key, body)
	require.Equal(t, http.StatusCreated, status, "%v", created)

	status, answer := a.Call(http.MethodPost, "/pix", "maria", key, body)
	require.NotEqual(t, http.StatusCreated, status, "POST /pix answered a scheduled PIX as its transfer: %v", answer)
	require.Equal(t, "idempotency_key_reused", sagatest.Code(answer))
	require.EqualValues(t, 50_000, f.balance("acc-maria"))

	// The other way: a transfer's key on POST /pix/scheduled.
	key = uuid.NewString()
	transfer := map[string]any{"account_id": "acc-maria", "amount_cents": 100, "pix_key": "joao@example.com"}
	status, sent := a.Call(http.MethodPost, "/pix", "maria", key, transfer)
	require.Equal(t, http.StatusCreated, status, "%v", sent)
	status, answer = a.Call(http.MethodPost, "/pix/scheduled", "maria", key, transfer)
	require.Equal(t, http.StatusUnprocessableEntity, status, "POST /pix/scheduled answered a transfer as its scheduled PIX: %v", answer)
	require.Equal(t, "idempotency_key_reused", sagatest.Code(answer))
}

// An attempt of RunScheduled whose commit's answer was lost (PostgreSQL
// committed, the attempt failed): the next attempt finds the PIX
// concluded. The worker's log still names the PIX as it concluded, with
// its end_to_end_id: the line the lost attempt would have written.
func TestARunWhoseAnswerWasLostIsStillLogged(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	f.account("acc-1", 20_000)
	s := f.schedule("acc-1", 15_000, time.Now().Add(-time.Minute))
	ran, concluded, err := f.store.Run(ctx, s.ID, ispb) // the attempt whose answer was lost
	require.NoError(t, err)
	require.True(t, concluded)

	var logged bytes.Buffer
	acts := &scheduled.Activities{Store: f.store, BankISPB: ispb, Log: slog.New(slog.NewJSONHandler(&logged, nil))}
	out, err := acts.RunScheduled(ctx, s.ID.String())
	require.NoError(t, err)
	require.Equal(t, scheduled.StatusExecuted, out.Status)
	var line map[string]any
	require.NoError(t, json.Unmarshal(logged.Bytes(), &line), "one line: %q", logged.String())
	require.Equal(t, s.ID.String(), line["scheduled_id"])
	require.Equal(t, *ran.EndToEndID, line["end_to_end_id"])
	require.Equal(t, "executed", line["status"])
	require.EqualValues(t, 5_000, f.balance("acc-1"))
}

// Runs and POST /pix's debits of one account at the same instant: each
// takes the account's lock after its own row's (runs) or alone (transfers),
// so none deadlocks or surfaces a collision, the balance never goes below
// zero, and the books balance.
func TestRunsAndTransfersOfOneAccountAtOnce(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	const n, amount = 20, 1_000
	f.account("acc-1", n*amount+n*amount/2) // not every one can be debited
	ids := make([]uuid.UUID, n)
	for i := range ids {
		ids[i] = f.schedule("acc-1", amount, time.Now()).ID
	}
	var wg sync.WaitGroup
	errs := make(chan error, 2*n)
	for i := range n {
		wg.Add(2)
		go func() {
			defer wg.Done()
			_, _, err := f.store.Run(ctx, ids[i], ispb)
			errs <- err
		}()
		go func() {
			defer wg.Done()
			res, _, err := f.s.ReserveKey(ctx, "sub-1", uuid.New(), "hash", f.keys)
			if err == nil {
				_, err = transfer.NewStore(f.s).CreateTransfer(ctx, *res, db.NewTransfer{ID: uuid.New(), EndToEndID: pix.NewEndToEndID(ispb, time.Now()),
					TransferRequest: pix.TransferRequest{AccountID: "acc-1", AmountCents: amount, PixKey: "k"}},
					func(pix.Transfer) ([]byte, error) { return []byte(`{}`), nil })
			}
			if errors.Is(err, pix.ErrInsufficientFunds) {
				err = nil
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.GreaterOrEqual(t, f.balance("acc-1"), int64(0))
	for _, id := range ids {
		s, err := f.store.Get(ctx, id)
		require.NoError(t, err)
		require.Contains(t, []string{scheduled.StatusExecuted, scheduled.StatusFailed}, s.Status)
	}
	f.booksBalance()
}

// Cancel signals at the very instant of the timer, and a burst of them
// before it: the run reads its row as often as it is woken, runs the PIX
// once, at its time, and ends as RunScheduled says (the row decides).
func TestSignalsAtTheTimersInstantRunItOnce(t *testing.T) {
	env := newEnv(t)
	id := uuid.New()
	runAt := start.AddDate(0, 0, 2)
	env.OnActivity(a.LoadScheduled, mock.Anything, id.String()).Return(row(id, scheduled.StatusScheduled, runAt), nil)
	for _, after := range []time.Duration{time.Hour, time.Hour, time.Hour, runAt.Sub(start), runAt.Sub(start)} {
		env.RegisterDelayedCallback(func() { env.SignalWorkflow(scheduled.CancelSignal, nil) }, after)
	}
	var ranAt time.Time
	env.OnActivity(a.RunScheduled, mock.Anything, id.String()).Run(func(mock.Arguments) { ranAt = env.Now() }).
		Return(row(id, scheduled.StatusCancelled, runAt), nil).Once()

	env.ExecuteWorkflow(scheduled.WorkflowName, scheduled.Input{ID: id.String()})

	require.Equal(t, scheduled.StatusCancelled, result(t, env).Status, "the row's word")
	require.False(t, ranAt.Before(runAt), "ran at %s, before %s", ranAt, runAt)
}
