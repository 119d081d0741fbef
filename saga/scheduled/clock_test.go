package scheduled_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/api"
	"github.com/pixbank/pix/db/dbtest"
	"github.com/pixbank/pix/internal/config"
	"github.com/pixbank/pix/saga"
	"github.com/pixbank/pix/saga/sagatest"
	"github.com/pixbank/pix/saga/scheduled"
)

// Attack review (issue 37, LOW-3): run_at is decided by the database's
// clock, never the worker's. Run compared it with the worker's own
// (time.Until): a worker whose clock runs ahead of the database's ran a
// scheduled PIX early, one behind held it late. Here the database's clock
// is an hour behind the process's (dbtest.NewClockBehind), then an hour
// ahead of it. Seen failing on the old Run (the first PIX executed).
func TestTheDatabasesClockDecidesWhenAScheduledPixRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("needs PostgreSQL")
	}
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		behind time.Duration
		runAt  time.Duration // from the process's now
		runs   bool
	}{
		{name: "the worker's clock ahead: not yet", behind: time.Hour, runAt: -30 * time.Minute},
		{name: "the worker's clock behind: due", behind: -time.Hour, runAt: 30 * time.Minute, runs: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := fixtureOn(t, dbtest.NewClockBehind(t, tc.behind))
			f.account("acc-1", 50_000)
			p := f.schedule("acc-1", 15_000, time.Now().Add(tc.runAt))
			out, concluded, err := f.store.Run(ctx, p.ID, ispb)
			if !tc.runs {
				require.ErrorContains(t, err, "not yet")
				require.Equal(t, int64(50_000), f.balance("acc-1"))
				return
			}
			require.NoError(t, err)
			require.True(t, concluded)
			require.Equal(t, scheduled.StatusExecuted, out.Status)
			require.Equal(t, int64(35_000), f.balance("acc-1"))
			f.booksBalance()
		})
	}
}

// The date a request names is checked by the same clock, the database's,
// not the API's (LOW-3): here the database's is at 23:00 of the day before
// the process's (São Paulo), so that day is still today, and a PIX
// scheduled for it is taken (and runs at once, its hour past). The routes
// as pixd builds them (the descriptor's HTTP). Seen failing on the old
// routes (422, "must be today or later").
func TestTheRoutesCheckTheDateByTheDatabasesClock(t *testing.T) {
	if testing.Short() {
		t.Skip("needs PostgreSQL")
	}
	sp, err := time.LoadLocation("America/Sao_Paulo")
	require.NoError(t, err)
	now := time.Now().In(sp)
	midnight := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, sp)
	s := dbtest.NewClockBehind(t, now.Sub(midnight)+time.Hour)
	h, err := scheduled.Saga.HTTP(saga.Env{Store: s, Log: sagatest.Discard(),
		Lookup: config.LookupIn(map[string]string{scheduled.HourSetting: "6"})})
	require.NoError(t, err)
	a := sagatest.NewAPI(t, s, sagatest.Options{Sagas: []api.SagaHTTP{h}, Deps: api.Deps{Keys: dbtest.Keys},
		Callers: sagatest.Callers{"maria": sagatest.Customer("maria", "acc-maria")}})
	f := fixtureOn(t, s)
	f.account("acc-maria", 50_000)

	yesterday := midnight.AddDate(0, 0, -1).Format(time.DateOnly)
	status, body := a.Call(http.MethodPost, "/pix/scheduled", "maria", uuid.NewString(),
		map[string]any{"account_id": "acc-maria", "amount_cents": 15000, "pix_key": "joao@example.com", "scheduled_for": yesterday})
	require.Equal(t, http.StatusCreated, status, "%v", body)
	require.Equal(t, yesterday, body["scheduled_for"])
}

// Issue 37, attack review r9 MED-1: Run took a scheduled PIX up to a
// minute before its run_at by the database's clock. With
// PIX_SCHEDULED_HOUR at its default 0, run_at is 00:00 São Paulo of the
// date, so that minute is the day before: the PIX debited before its
// date, or failed for good for a balance the date would have covered.
// Run never decides before run_at; "not yet" is retried. Seen failing on
// the old Run (executed 45 seconds before midnight of its date).
func TestAScheduledPixNeverRunsOnTheDayBeforeItsDate(t *testing.T) {
	if testing.Short() {
		t.Skip("needs PostgreSQL")
	}
	ctx := context.Background()
	f := fixtureOn(t, dbtest.New(t))
	sp, err := time.LoadLocation("America/Sao_Paulo")
	require.NoError(t, err)
	date := time.Now().In(sp).AddDate(0, 0, 2).Format(time.DateOnly)
	runAt, err := scheduled.Settings{}.RunAt(date, time.Now())
	require.NoError(t, err)
	require.Equal(t, "00:00:00", runAt.In(sp).Format(time.TimeOnly))
	f.account("acc-1", 20_000)
	p := f.schedule("acc-1", 15_000, runAt)
	require.Equal(t, date, p.ScheduledFor)
	for _, early := range []time.Duration{45 * time.Second, time.Millisecond} {
		at := runAt.Add(-early)
		_, _, err := f.store.WithClock(func() time.Time { return at }).Run(ctx, p.ID, ispb)
		require.ErrorContains(t, err, "not yet", "decided at %s São Paulo, the day before its date %s", at.In(sp).Format(time.DateTime), date)
		got, err := f.store.Get(ctx, p.ID)
		require.NoError(t, err)
		require.Equal(t, scheduled.StatusScheduled, got.Status)
		require.Equal(t, int64(20_000), f.balance("acc-1"))
	}
	out, concluded, err := f.store.WithClock(func() time.Time { return runAt }).Run(ctx, p.ID, ispb)
	require.NoError(t, err)
	require.True(t, concluded)
	require.Equal(t, scheduled.StatusExecuted, out.Status, "at 00:00 of its date")
	require.Equal(t, int64(5_000), f.balance("acc-1"))
	f.booksBalance()
}
