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
