package catchup_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/converter"
	"golang.org/x/sync/errgroup"

	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/db/dbtest"
	"github.com/pixbank/pix/internal/config"
	"github.com/pixbank/pix/internal/durable"
	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/internal/psp"
	"github.com/pixbank/pix/internal/runconf"
	"github.com/pixbank/pix/internal/tooling/temporaltest"
	"github.com/pixbank/pix/saga"
	"github.com/pixbank/pix/saga/catchup"
	"github.com/pixbank/pix/saga/registry"
	"github.com/pixbank/pix/worker"
	"github.com/pixbank/pix/workflows"
)

// pspRecordOf is a PSP whose record (GET /pix) holds PIX it never
// notified, one page a listing; it counts the listings that hold each.
type pspRecordOf struct {
	mu       sync.Mutex
	items    map[string]json.RawMessage
	listings map[string]int
}

func (p *pspRecordOf) ListReceived(_ context.Context, q psp.ReceivedQuery) (psp.ReceivedPage, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := psp.ReceivedPage{Page: q.Page, Pages: 1}
	for id, item := range p.items {
		out.Items = append(out.Items, item)
		p.listings[id]++
	}
	out.TotalItems = len(out.Items)
	return out, nil
}

func (p *pspRecordOf) listed(id string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.listings[id]
}

// A PIX the PSP never notified, found in its record by the Schedule's
// runs, is credited, once, however many runs list it again; the Schedule
// is deleted when the catch-up is turned off.
func TestPSPCatchUpCreditsAPixNeverNotified(t *testing.T) {
	store := catchup.NewStore(dbtest.New(t))
	srv := temporaltest.StartT(t)
	c := srv.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	log := slog.New(slog.NewJSONHandler(io.Discard, nil))
	queues := runconf.TaskQueuesFor(fmt.Sprintf("pix-credit-catchup%d", time.Now().UnixNano()))

	_, err := store.CreateAccount(ctx, db.NewAccount{ID: "acc-never-notified", OwnerName: "N", OpeningBalanceCents: 1000})
	require.NoError(t, err)
	_, err = store.CreatePixKey(ctx, db.NewPixKey{Key: "never-notified@example.com", KeyType: "email", AccountID: "acc-never-notified"})
	require.NoError(t, err)
	id := fmt.Sprintf("E%031d", time.Now().UnixNano()%1e15)
	record := &pspRecordOf{listings: map[string]int{}, items: map[string]json.RawMessage{
		id: json.RawMessage(fmt.Sprintf(`{"endToEndId":%q,"chave":"never-notified@example.com","valor":"12.34","horario":%q,"infoPagador":"sem webhook"}`,
			id, time.Now().UTC().Format(time.RFC3339))),
	}}

	// Every saga as pixd has it, but the catch-up listing the record above.
	schedules := workflows.ScheduleSync{DataConverter: converter.GetDefaultDataConverter(), Log: log}
	env := saga.Env{Store: store.Store, Queues: queues, Log: log, Schedules: schedules}
	sagas := slices.Clone(registry.All)
	for i := range sagas {
		if sagas[i].Name == catchup.Saga.Name {
			sagas[i].Deps = func(saga.Env) any {
				return &catchup.Activities{Store: store, PSP: record, Overlap: 10 * time.Minute, Lookback: time.Hour, Logger: log}
			}
		}
	}
	runCtx, stop := context.WithCancel(ctx)
	var g errgroup.Group
	g.Go(func() error { return worker.Run(runCtx, worker.New(c, sagas, env, worker.Options{})...) })
	g.Go(func() error { return store.RunWaker(runCtx, log) })
	credits := durable.New(store, workflows.CreditSource(store.InboxQueue(), queues.Credits, runconf.DefaultRetrySettings(),
		workflows.CreditInputListingVersion(config.Default().CreditListingInInput)), c, durable.Options{PollInterval: time.Second, BatchSize: 10, Concurrency: 2,
		RecheckAfter: time.Minute, RecheckMax: time.Minute, RetryMaxDelay: time.Second}, log)
	g.Go(func() error { return credits.Run(runCtx) })
	defer func() {
		stop()
		require.NoError(t, g.Wait())
	}()

	require.NoError(t, catchup.EnsureSchedule(ctx, c, schedules, queues, time.Second))
	require.Eventually(t, func() bool {
		credit, err := store.GetCredit(ctx, id)
		return err == nil && credit.Status == pix.StatusDone
	}, time.Minute, 100*time.Millisecond, "the PIX the PSP never notified is credited by the catch-up")
	var first time.Time
	require.Eventually(t, func() bool {
		until, ok, err := store.CoveredUntil(ctx)
		first = until
		return err == nil && ok
	}, time.Minute, 100*time.Millisecond, "the run that stored it records its window")
	// Later runs list it again (the overlap): a duplicate each time.
	listed := record.listed(id)
	require.Eventually(t, func() bool {
		until, _, err := store.CoveredUntil(ctx)
		return err == nil && until.After(first) && record.listed(id) >= listed+2
	}, time.Minute, 100*time.Millisecond, "the Schedule goes on covering")

	account, err := store.GetAccount(ctx, "acc-never-notified")
	require.NoError(t, err)
	require.EqualValues(t, 1000+1234, account.BalanceCents, "credited once")
	var credited int
	require.NoError(t, store.Pool().QueryRow(ctx, "SELECT count(*) FROM pix_credits WHERE end_to_end_id = $1", id).Scan(&credited))
	require.Equal(t, 1, credited)
	var pspName string
	require.NoError(t, store.Pool().QueryRow(ctx, "SELECT psp FROM inbox_messages WHERE end_to_end_id = $1", id).Scan(&pspName))
	require.Equal(t, catchup.PSPName, pspName)

	// PSP_CATCHUP_INTERVAL=0: the Schedule is gone; asked again, nothing fails.
	require.NoError(t, catchup.EnsureSchedule(ctx, c, schedules, queues, 0))
	_, err = c.ScheduleClient().GetHandle(ctx, catchup.ScheduleID(queues.Base)).Describe(ctx)
	var notFound *serviceerror.NotFound
	require.Truef(t, errors.As(err, &notFound), "the schedule is deleted: %T %v", err, err)
	require.NoError(t, catchup.EnsureSchedule(ctx, c, schedules, queues, 0))
}
