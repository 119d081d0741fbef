//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/pixbank/pix/cmd/pixd/app"
	"github.com/pixbank/pix/internal/config"
	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/internal/runconf"
	"github.com/pixbank/pix/internal/tooling/pspsim"
	"github.com/pixbank/pix/internal/tooling/temporaltest"
	"github.com/pixbank/pix/saga/reconcile"
	"github.com/pixbank/pix/saga/retention"
	"github.com/pixbank/pix/saga/transfer"
)

// sendPix posts a transfer under an Idempotency-Key and returns the answer.
func (s *stack) sendPix(key, account string, amount int64, pixKey string) reply {
	s.t.Helper()
	return s.requestWith(http.MethodPost, "/pix", http.Header{"Idempotency-Key": {key}},
		map[string]any{"account_id": account, "amount_cents": amount, "pix_key": pixKey})
}

// waitTransfer waits until the transfer reaches want.
func (s *stack) waitTransfer(id, want string, within time.Duration) pix.Transfer {
	s.t.Helper()
	var t pix.Transfer
	s.awaitSaga(transferSaga(id), within, fmt.Sprintf("transfer %s did not become %s", id, want), func() bool {
		var err error
		t, err = transfer.NewStore(s.store).GetTransfer(context.Background(), uuid.MustParse(id))
		require.NoError(s.t, err)
		return t.Status == want
	})
	return t
}

// transferSaga is the saga of the transfer id, as explainSaga reads it.
func transferSaga(id string) sagaRun {
	return sagaRun{WorkflowID: transfer.WorkflowID(id), Family: runconf.Transfers, Row: `SELECT to_jsonb(t)::text FROM pix_transfers t WHERE id = $1::uuid`, Key: id}
}

func (s *stack) refunds(id string) int {
	s.t.Helper()
	var n int
	require.NoError(s.t, s.store.Pool().QueryRow(context.Background(),
		`SELECT count(*) FROM pix_transfer_refunds WHERE transfer_id = $1`, id).Scan(&n))
	return n
}

func TestTransferSettles(t *testing.T) {
	s := newStack(t, shared, nil)
	s.openAccount("acc-1", 100_000)
	r := s.sendPix(uuid.NewString(), "acc-1", 15_000, "maria@example.com")
	require.Equal(t, http.StatusCreated, r.Status, "%v", r.Body)
	id := r.Body["id"].(string)

	tr := s.waitTransfer(id, pix.TransferSettled, 30*time.Second)
	require.NotNil(t, tr.SubmittedAt)
	require.NotNil(t, tr.SettledAt)
	require.EqualValues(t, 85_000, s.balance("acc-1"))
	at, ok := s.psp.Transfer(tr.EndToEndID)
	require.True(t, ok, "the PSP has the transfer under its end_to_end_id")
	require.EqualValues(t, 15_000, at.AmountCents)
	require.Zero(t, s.refunds(id))

	got := s.request(http.MethodGet, "/pix/transfers/"+id, nil)
	require.Equal(t, "settled", got.Body["status"])
	s.assertBooksBalance()
}

func TestRejectedTransferIsRefundedOnce(t *testing.T) {
	s := newStack(t, shared, nil)
	s.openAccount("acc-1", 100_000)
	require.NoError(t, s.psp.SetBehavior("closed@example.com", pspsim.Behavior{Mode: pspsim.ModeReject, Reason: "receiver account closed"}))
	require.NoError(t, s.psp.SetBehavior("late@example.com", pspsim.Behavior{Mode: pspsim.ModeRejectLater, Reason: "fraud suspected"}))

	now := s.sendPix(uuid.NewString(), "acc-1", 15_000, "closed@example.com")
	later := s.sendPix(uuid.NewString(), "acc-1", 2_550, "late@example.com")
	require.Equal(t, http.StatusCreated, now.Status)
	require.Equal(t, http.StatusCreated, later.Status)
	require.EqualValues(t, 100_000-15_000-2_550, later.Body["balance_after_cents"])

	rejected := s.waitTransfer(now.Body["id"].(string), pix.TransferRefunded, 30*time.Second)
	require.Equal(t, "receiver account closed", *rejected.FailureReason)
	require.Nil(t, rejected.SubmittedAt, "rejected at submission: never submitted")
	lateRejected := s.waitTransfer(later.Body["id"].(string), pix.TransferRefunded, 30*time.Second)
	require.Equal(t, "fraud suspected", *lateRejected.FailureReason)
	require.NotNil(t, lateRejected.SubmittedAt, "rejected at settlement, after the submission")

	require.EqualValues(t, 100_000, s.balance("acc-1"), "the balance is restored exactly")
	require.Equal(t, 1, s.refunds(now.Body["id"].(string)))
	require.Equal(t, 1, s.refunds(later.Body["id"].(string)))
	s.assertBooksBalance()
}

// PSP timeouts and 503s are retried with backoff; the PSP sees several
// submissions and creates one transfer.
func TestTransientPSPFailuresSubmitOnce(t *testing.T) {
	s := newStack(t, shared, func(c *config.Config) { c.PSPTimeout = 300 * time.Millisecond })
	s.openAccount("acc-1", 100_000)
	require.NoError(t, s.psp.SetBehavior("slow@example.com", pspsim.Behavior{Mode: pspsim.ModeTimeout, Times: 2, Delay: 5 * time.Second}))
	require.NoError(t, s.psp.SetBehavior("flaky@example.com", pspsim.Behavior{Mode: pspsim.ModeFail, Times: 3}))

	slow := s.sendPix(uuid.NewString(), "acc-1", 1_000, "slow@example.com")
	flaky := s.sendPix(uuid.NewString(), "acc-1", 2_000, "flaky@example.com")
	slowT := s.waitTransfer(slow.Body["id"].(string), pix.TransferSettled, 60*time.Second)
	flakyT := s.waitTransfer(flaky.Body["id"].(string), pix.TransferSettled, 60*time.Second)

	at, ok := s.psp.Transfer(slowT.EndToEndID)
	require.True(t, ok)
	require.GreaterOrEqual(t, at.Received, 3, "two timed-out submissions, then one answered")
	at, ok = s.psp.Transfer(flakyT.EndToEndID)
	require.True(t, ok)
	require.GreaterOrEqual(t, at.Received, 4, "three 503s, then one accepted")
	require.EqualValues(t, 97_000, s.balance("acc-1"))
	s.assertBooksBalance()
}

// The worker dies while its submission hangs at the PSP; another worker
// finishes the saga, once.
func TestWorkerKilledMidSagaFinishesOnce(t *testing.T) {
	s := newStack(t, shared, func(c *config.Config) { c.PSPTimeout = 20 * time.Second })
	s.openAccount("acc-1", 100_000)
	require.NoError(t, s.psp.SetBehavior("hang@example.com", pspsim.Behavior{Mode: pspsim.ModeTimeout, Times: 1, Delay: 60 * time.Second}))

	r := s.sendPix(uuid.NewString(), "acc-1", 7_000, "hang@example.com")
	require.Equal(t, http.StatusCreated, r.Status)
	id := r.Body["id"].(string)
	tr, err := transfer.NewStore(s.store).GetTransfer(context.Background(), uuid.MustParse(id))
	require.NoError(t, err)
	s.awaitSaga(transferSaga(id), 20*time.Second, "the submission reached the PSP", func() bool { _, ok := s.psp.Transfer(tr.EndToEndID); return ok })

	s.killWorker()
	require.Equal(t, pix.TransferDebited, s.waitTransfer(id, pix.TransferDebited, time.Second).Status)
	s.startWorker()

	s.waitTransfer(id, pix.TransferSettled, 90*time.Second)
	at, _ := s.psp.Transfer(tr.EndToEndID)
	require.GreaterOrEqual(t, at.Received, 2, "submitted again by the new worker")
	require.EqualValues(t, 93_000, s.balance("acc-1"), "debited once, never refunded")
	require.Zero(t, s.refunds(id))
	s.assertBooksBalance()
}

// Temporal is down between the debit's commit and the saga's start: the
// transfer waits, and its saga runs once Temporal is back.
func TestTransferSurvivesTemporalOutage(t *testing.T) {
	srv := temporaltest.StartT(t)
	s := newStack(t, srv, nil)
	s.openAccount("acc-1", 100_000)

	srv.Stop()
	key := uuid.NewString()
	r := s.sendPix(key, "acc-1", 15_000, "maria@example.com")
	require.Equal(t, http.StatusCreated, r.Status, "the debit does not wait for Temporal")
	id := r.Body["id"].(string)
	time.Sleep(time.Second) // the dispatcher tries, fails, and backs off
	require.Equal(t, pix.TransferDebited, s.waitTransfer(id, pix.TransferDebited, time.Second).Status)
	require.True(t, s.sendPix(key, "acc-1", 15_000, "maria@example.com").Status == http.StatusCreated, "replayed while Temporal is down")

	require.NoError(t, srv.Restart())
	s.waitTransfer(id, pix.TransferSettled, 90*time.Second)
	require.EqualValues(t, 85_000, s.balance("acc-1"))
	s.assertBooksBalance()
}

// The worker creates the retention's Temporal Schedule; a run of it
// deletes the expired idempotency keys and the old done inbox rows, and
// keeps the others. A PSP redelivery of a cleaned-up PIX is still a
// duplicate, credited once.
func TestRetentionSchedule(t *testing.T) {
	ctx := context.Background()
	s := newStack(t, shared, nil)
	s.openAccount("acc-1", 100_000)
	old := webhook{pixID(), "acc-1", 700}
	require.Equal(t, http.StatusAccepted, s.post(old).Status)
	s.waitStatus(old.EndToEndID, pix.StatusDone, 30*time.Second)
	_, err := s.store.Pool().Exec(ctx, `UPDATE inbox_messages SET processed_at = now() - interval '31 days' WHERE end_to_end_id = $1`, old.EndToEndID)
	require.NoError(t, err)
	live := uuid.NewString()
	require.Equal(t, http.StatusCreated, s.sendPix(live, "acc-1", 100, "k").Status)
	var expired []string
	for range 5 {
		k := uuid.NewString()
		expired = append(expired, k)
		require.Equal(t, http.StatusCreated, s.sendPix(k, "acc-1", 100, "k").Status)
	}
	_, err = s.store.Pool().Exec(ctx, `UPDATE idempotency_keys SET expires_at = now() - interval '1 minute' WHERE key = ANY($1::uuid[])`, expired)
	require.NoError(t, err)

	require.NoError(t, s.schedule(retention.ScheduleID(s.cfg.TemporalTaskQueue)).Trigger(ctx, client.ScheduleTriggerOptions{}))

	require.Eventually(t, func() bool {
		var n int
		require.NoError(t, s.store.Pool().QueryRow(ctx, `SELECT count(*) FROM idempotency_keys`).Scan(&n))
		return n == 1
	}, 30*time.Second, 100*time.Millisecond, "the expired keys are deleted, the live one kept")
	require.Equal(t, http.StatusCreated, s.sendPix(live, "acc-1", 100, "k").Status)
	require.Eventually(t, func() bool {
		var n int
		require.NoError(t, s.store.Pool().QueryRow(ctx, `SELECT count(*) FROM inbox_messages WHERE end_to_end_id = $1`, old.EndToEndID).Scan(&n))
		return n == 0
	}, 30*time.Second, 100*time.Millisecond, "the old done inbox row is deleted")

	r := s.post(old)
	require.Equal(t, http.StatusAccepted, r.Status)
	require.Equal(t, map[string]any{"end_to_end_id": old.EndToEndID, "status": "done", "duplicate": true}, r.Body)
	time.Sleep(500 * time.Millisecond)
	require.Equal(t, 1, s.creditRows(old.EndToEndID))
	require.EqualValues(t, 100_000+700-600, s.balance("acc-1"), "no second credit; the live key replayed: no new debit")
	s.assertBooksBalance()
}

// The worker creates the reconciliation's Temporal Schedule. A run over
// books that balance reports zero differences; a run after a balance was
// corrupted reports it loudly (metric, failed run) and changes no money.
func TestReconcileScheduleReportsACorruptedBalance(t *testing.T) {
	ctx := context.Background()
	s := newStack(t, shared, nil)
	s.openAccount("acc-1", 1_000)
	id := pixID()
	require.Equal(t, http.StatusAccepted, s.post(webhook{id, "acc-1", 500}).Status)
	s.waitStatus(id, pix.StatusDone, 30*time.Second)

	require.NoError(t, s.reconcileNow())
	require.Zero(t, s.metric("pix_reconcile_differences{unbalanced_accounts}"))

	_, err := s.store.Pool().Exec(ctx, `UPDATE accounts SET balance_cents = balance_cents + 1 WHERE id = 'acc-1'`)
	require.NoError(t, err)
	require.ErrorContains(t, s.reconcileNow(), "the books do not balance: 1 unbalanced accounts")
	require.EqualValues(t, 1, s.metric("pix_reconcile_differences{unbalanced_accounts}"))
	require.EqualValues(t, 1_501, s.balance("acc-1"), "reconcile never fixes money")
}

// reconcileNow triggers the worker's reconciliation Schedule, waits for the
// run it starts, and returns the run's error.
func (s *stack) reconcileNow() error {
	s.t.Helper()
	ctx := context.Background()
	handle := s.schedule(reconcile.ScheduleID(s.cfg.TemporalTaskQueue))
	before := s.metric("pix_reconcile_last_run_timestamp_seconds")
	require.NoError(s.t, handle.Trigger(ctx, client.ScheduleTriggerOptions{}))
	require.Eventually(s.t, func() bool { return s.metric("pix_reconcile_last_run_timestamp_seconds") > before },
		30*time.Second, 100*time.Millisecond, "no reconciliation ran")
	// The activity ran, so the schedule has recorded the run.
	desc, err := handle.Describe(ctx)
	require.NoError(s.t, err)
	recent := desc.Info.RecentActions
	require.NotEmpty(s.t, recent)
	run := recent[len(recent)-1].StartWorkflowResult
	return s.client().GetWorkflow(ctx, run.WorkflowID, run.FirstExecutionRunID).Get(ctx, nil)
}

// schedule waits until the worker has created the Temporal Schedule id and
// returns its handle.
func (s *stack) schedule(id string) client.ScheduleHandle {
	s.t.Helper()
	ctx := context.Background()
	handle := s.client().ScheduleClient().GetHandle(ctx, id)
	require.Eventually(s.t, func() bool {
		_, err := handle.Describe(ctx)
		return err == nil
	}, 30*time.Second, 100*time.Millisecond, "the worker creates the schedule %s", id)
	return handle
}

// A transfer the PSP accepted (pending) outlives its run's settlement
// timeout; the next run resubmits, and the PSP refuses our credentials for
// a while (401). That says nothing about the transfer: it is never
// refunded, and it settles once the PSP does.
func TestResubmissionRefusedWithExpiredCredentialsIsNeverRefunded(t *testing.T) {
	s := newStack(t, shared, func(c *config.Config) {
		c.DispatchRecheckAfter, c.DispatchRecheckMax = time.Second, time.Second
	}, app.WithSettings(map[string]string{"TRANSFER_SETTLEMENT_TIMEOUT": "1s"}))
	s.openAccount("acc-1", 100_000)
	const key = "expired-creds@example.com"
	require.NoError(t, s.psp.SetBehavior(key, pspsim.Behavior{Mode: pspsim.ModeAccept, SettleAfter: 6 * time.Second}))
	r := s.sendPix(uuid.NewString(), "acc-1", 4_000, key)
	require.Equal(t, http.StatusCreated, r.Status, "%v", r.Body)
	id := r.Body["id"].(string)
	tr := s.waitTransfer(id, pix.TransferSubmitted, 30*time.Second)
	// The PSP holds it pending; from now on it refuses our credentials.
	require.NoError(t, s.psp.SetBehavior(key, pspsim.Behavior{Mode: pspsim.ModeUnauthorized, Times: 3}))

	s.waitTransfer(id, pix.TransferSettled, 90*time.Second)
	at, ok := s.psp.Transfer(tr.EndToEndID)
	require.True(t, ok)
	require.Equal(t, "settled", string(at.Status))
	require.GreaterOrEqual(t, at.Received, 2, "resubmitted after the first run's settlement timeout")
	require.Zero(t, s.refunds(id), "a 401 is about our credentials, never a rejection")
	require.EqualValues(t, 96_000, s.balance("acc-1"))
	require.GreaterOrEqual(t, s.total("pix_psp_attention_total"), 1.0, "every refusal is counted for the alert")
	s.assertBooksBalance()
}

// The PSP takes the transfer and the answer is lost; it answers the
// resubmission 409 (it already has it). The saga asks the status and
// settles; nothing is refunded.
func TestLostAnswerThenConflictAsksTheStatus(t *testing.T) {
	s := newStack(t, shared, func(c *config.Config) { c.PSPRetryInitial = 2 * time.Second; c.PSPRetryMax = 2 * time.Second })
	s.openAccount("acc-1", 100_000)
	const key = "lossy@example.com"
	require.NoError(t, s.psp.SetBehavior(key, pspsim.Behavior{Mode: pspsim.ModeLoseResponse, Times: 1}))
	r := s.sendPix(uuid.NewString(), "acc-1", 3_000, key)
	require.Equal(t, http.StatusCreated, r.Status, "%v", r.Body)
	id := r.Body["id"].(string)
	tr, err := transfer.NewStore(s.store).GetTransfer(context.Background(), uuid.MustParse(id))
	require.NoError(t, err)
	s.awaitSaga(transferSaga(id), 20*time.Second, "the submission reached the PSP", func() bool { _, ok := s.psp.Transfer(tr.EndToEndID); return ok })
	// Before the retry (2 s later): the PSP now treats a resubmission as
	// an error.
	require.NoError(t, s.psp.SetBehavior(key, pspsim.Behavior{Mode: pspsim.ModeDuplicateConflict}))

	s.waitTransfer(id, pix.TransferSettled, 60*time.Second)
	at, _ := s.psp.Transfer(tr.EndToEndID)
	require.GreaterOrEqual(t, at.Received, 2)
	require.Zero(t, s.refunds(id))
	require.EqualValues(t, 97_000, s.balance("acc-1"))
	s.assertBooksBalance()
}
