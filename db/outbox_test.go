package db_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/db/dbtest"
	"github.com/pixbank/pix/internal/broker"
	"github.com/pixbank/pix/internal/broker/eventschema"
	"github.com/pixbank/pix/internal/pix"
	refundsaga "github.com/pixbank/pix/saga/refund"
	"github.com/pixbank/pix/saga/transfer"
)

type outboxRow struct {
	ID, AggregateType, AggregateID, Type string
	Payload                              map[string]any
}

// events validates events against their JSON Schemas (docs/events.md).
var events = sync.OnceValues(eventschema.New)

// outboxRows are the outbox's rows in commit order, each checked against
// its type's JSON Schema as the relay would publish it: what the tests
// write is what the consumers are promised.
func outboxRows(t *testing.T, s *db.Store) []outboxRow {
	t.Helper()
	v, err := events()
	require.NoError(t, err)
	rows, err := s.Pool().Query(context.Background(), `SELECT id, seq, aggregate_type, aggregate_id, event_type, payload, created_at FROM outbox_events ORDER BY seq`)
	require.NoError(t, err)
	defer rows.Close()
	var out []outboxRow
	for rows.Next() {
		var e broker.Envelope
		var payload []byte
		require.NoError(t, rows.Scan(&e.ID, &e.Seq, &e.AggregateType, &e.AggregateID, &e.Type, &payload, &e.OccurredAt))
		e.Data = payload
		message, err := json.Marshal(e)
		require.NoError(t, err)
		require.NoError(t, v.Message(message), "%s", message)
		r := outboxRow{ID: e.ID, AggregateType: e.AggregateType, AggregateID: e.AggregateID, Type: e.Type}
		require.NoError(t, json.Unmarshal(payload, &r.Payload))
		out = append(out, r)
	}
	require.NoError(t, rows.Err())
	return out
}

// Every event type, written by the statement that makes its change, matches
// its JSON Schema: a credit's to an account and an API Pix one's to an
// unknown key failing, a transfer settled and one refunded, a devolução
// returned and one reversed, holds released, captured and filled, shrunk,
// captured in part and given a part back, one cut short raised, one that
// did not fill made one that fills.
func TestEveryEventTypeMatchesItsSchema(t *testing.T) {
	ctx := context.Background()
	s := dbtest.NewWithAccount(t, "acc-1", 100_000)
	credited := dbtest.CreditNth(t, s, 1, "acc-1", 20_000)
	for i, n := range []pix.Notification{dbtest.Notice(dbtest.E2EID(2), "acc-none", 100), apiPixNote(dbtest.E2EID(3), "+5511999990000", "", 2500),
		apiPixNote(dbtest.E2EID(4), "", "nosuchcharge", 100)} {
		_, err := s.Receive(ctx, n)
		require.NoError(t, err)
		_, err = s.MarkFailed(ctx, n.EndToEndID, 1, i+1, "not creditable")
		require.NoError(t, err)
	}
	settled := debit(t, s, "acc-1", 1_000)
	_, err := transfer.NewStore(s).SettleTransfer(ctx, uuid.MustParse(settled.ID))
	require.NoError(t, err)
	refunded := debit(t, s, "acc-1", 2_000)
	_, err = transfer.NewStore(s).RefundTransfer(ctx, uuid.MustParse(refunded.ID), "receiver account closed")
	require.NoError(t, err)
	returned, err := refund(t, s, credited, 4_000, anyone)
	require.NoError(t, err)
	_, err = refundsaga.NewStore(s).MarkRefundReturned(ctx, returned.ID, "")
	require.NoError(t, err, "no rtr_id: null")
	reversed, err := refund(t, s, credited, 6_000, anyone)
	require.NoError(t, err)
	_, err = refundsaga.NewStore(s).MarkRefundRequested(ctx, reversed.ID, "D12345678202611291200000000000001")
	require.NoError(t, err)
	_, err = refundsaga.NewStore(s).ReverseRefund(ctx, reversed.ID, "conta encerrada", false)
	require.NoError(t, err)
	_, err = refundsaga.NewStore(s).CreateRefund(ctx, *dbtest.Reserve(t, s, "test-caller"), db.NewRefund{ID: pix.NewRefundID(),
		RefundRequest: pix.RefundRequest{EndToEndID: credited, AmountCents: 1}}, anyone, renderRefund)
	require.NoError(t, err, "no reason: null")
	released, _, err := hold(s, db.NewHold{Ref: "judicial:1", AccountID: "acc-1", AmountCents: 500, Kind: "judicial"})
	require.NoError(t, err, "no PIX, no reason: null")
	_, _, err = release(s, released.ID, "")
	require.NoError(t, err, "no reason: null")
	captured, _, err := hold(s, block("block:1", "acc-1", credited, 700))
	require.NoError(t, err)
	_, err = captureRefund(s, credited, 700, uuid.MustParse(captured.ID))
	require.NoError(t, err)
	kept, _, err := hold(s, med("med:1", "acc-1", credited, 2_000))
	require.NoError(t, err)
	err = s.InTx(ctx, func(tx pgx.Tx) error {
		_, _, err := db.Shrink(ctx, tx, uuid.MustParse(kept.ID), 1_500, "")
		return err
	})
	require.NoError(t, err, "no reason: null")
	part, err := capturePart(s, credited, 1_000, kept.ID)
	require.NoError(t, err)
	_, err = refundsaga.NewStore(s).ReverseRefund(ctx, part.ID, "NAO_REALIZADO", false)
	require.NoError(t, err)
	cut := dbtest.CreditNth(t, s, 6, "acc-1", 1_000) // a MED cut short by a block of its PIX, raised when the block ends
	blocked, _, err := hold(s, block("block:2", "acc-1", cut, 600))
	require.NoError(t, err)
	_, _, err = hold(s, med("med:2", "acc-1", cut, 1_000))
	require.NoError(t, err)
	_, _, err = release(s, blocked.ID, "")
	require.NoError(t, err)
	old := dbtest.CreditNth(t, s, 7, "acc-1", 400) // a MED's hold made before holds filled, made one that fills
	legacy, _, err := hold(s, db.NewHold{Ref: "med:3", AccountID: "acc-1", EndToEndID: old, AmountCents: 400, UpTo: true, Kind: "med"})
	require.NoError(t, err)
	err = db.InTx(ctx, s.Pool(), func(tx pgx.Tx) error {
		_, _, err := db.MakeFilling(ctx, tx, uuid.MustParse(legacy.ID), 400, "")
		return err
	})
	require.NoError(t, err, "no reason: null")
	dbtest.OpenAccount(t, s, "acc-2", 0)
	_, _, err = hold(s, db.NewHold{Ref: "judicial:2", AccountID: "acc-2", AmountCents: 500, UpTo: true, FillFromCredits: true, Kind: "judicial"})
	require.NoError(t, err, "nothing available: a hold of 0 that fills")
	dbtest.CreditNth(t, s, 5, "acc-2", 300)

	written := map[string]int{}
	for _, e := range outboxRows(t, s) { // each checked against its schema
		written[e.Type]++
	}
	for typ := range db.EventTypes {
		require.Positive(t, written[typ], "no %s written", typ)
	}
	require.Equal(t, 3, written[db.EventCreditFailed])
}

func TestCreditWritesItsEventInItsTransaction(t *testing.T) {
	ctx := context.Background()
	s := dbtest.NewWithAccount(t, "acc-1", 100)
	n := dbtest.Notice(dbtest.E2EID(1), "acc-1", 15000)
	_, err := s.Receive(ctx, n)
	require.NoError(t, err)
	require.Empty(t, outboxRows(t, s), "receiving moves no money")

	_, err = s.Credit(ctx, n.EndToEndID, 1, 1)
	require.NoError(t, err)
	_, err = s.Credit(ctx, n.EndToEndID, 1, 2)
	require.NoError(t, err)
	events := outboxRows(t, s)
	require.Len(t, events, 1, "one event, however often the credit runs")
	e := events[0]
	require.Equal(t, db.EventCreditSettled, e.Type)
	require.Equal(t, db.AggregateCredit, e.AggregateType)
	require.Equal(t, n.EndToEndID, e.AggregateID)
	require.EqualValues(t, 1, e.Payload["schema_version"])
	require.Equal(t, "acc-1", e.Payload["account_id"])
	require.EqualValues(t, 15000, e.Payload["amount_cents"])
	require.EqualValues(t, 15100, e.Payload["balance_after_cents"])
	require.NotEmpty(t, e.Payload["credited_at"])
}

func TestRolledBackCreditWritesNoEvent(t *testing.T) {
	ctx := context.Background()
	s := dbtest.NewWithAccount(t, "acc-1", 0)
	n := dbtest.Notice(dbtest.E2EID(1), "acc-1", 100)
	_, err := s.Receive(ctx, n)
	require.NoError(t, err)
	// The credit's statement fails after its event was inserted.
	_, err = s.Pool().Exec(ctx, `
		CREATE FUNCTION fail_done() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN RAISE EXCEPTION 'injected failure'; END $$;
		CREATE TRIGGER fail_done BEFORE UPDATE ON inbox_messages FOR EACH ROW WHEN (NEW.status = 'done') EXECUTE FUNCTION fail_done();`)
	require.NoError(t, err)
	_, err = s.Credit(ctx, n.EndToEndID, 1, 1)
	require.ErrorContains(t, err, "injected failure")
	require.Empty(t, outboxRows(t, s))
	require.EqualValues(t, 0, dbtest.Balance(t, s, "acc-1"))
}

func TestFailedCreditAndTransferStepsWriteEvents(t *testing.T) {
	ctx := context.Background()
	s := dbtest.New(t)
	n := dbtest.Notice(dbtest.E2EID(1), "acc-none", 100)
	_, err := s.Receive(ctx, n)
	require.NoError(t, err)
	_, err = s.MarkFailed(ctx, n.EndToEndID, 1, 5, "AccountNotFound: account not found: acc-none")
	require.NoError(t, err)
	_, err = s.MarkFailed(ctx, n.EndToEndID, 1, 5, "again")
	require.NoError(t, err)

	dbtest.OpenAccount(t, s, "acc-1", 10_000)
	settled := debit(t, s, "acc-1", 1_000)
	_, err = transfer.NewStore(s).SettleTransfer(ctx, uuid.MustParse(settled.ID))
	require.NoError(t, err)
	_, err = transfer.NewStore(s).SettleTransfer(ctx, uuid.MustParse(settled.ID))
	require.NoError(t, err)
	refunded := debit(t, s, "acc-1", 2_000)
	_, err = transfer.NewStore(s).RefundTransfer(ctx, uuid.MustParse(refunded.ID), "receiver account closed")
	require.NoError(t, err)
	_, err = transfer.NewStore(s).RefundTransfer(ctx, uuid.MustParse(refunded.ID), "receiver account closed")
	require.NoError(t, err)

	events := outboxRows(t, s)
	var types []string
	for _, e := range events {
		types = append(types, e.Type)
	}
	require.Equal(t, []string{
		db.EventCreditFailed,
		db.EventTransferDebited, db.EventTransferSettled,
		db.EventTransferDebited, db.EventTransferRefunded,
	}, types, "one event per state change, in commit order; repeated steps write none")
	require.Equal(t, "AccountNotFound: account not found: acc-none", events[0].Payload["reason"])
	require.Equal(t, settled.ID, events[1].AggregateID)
	require.EqualValues(t, 9_000, events[1].Payload["balance_after_cents"])
	require.Equal(t, "receiver account closed", events[4].Payload["reason"])
	require.EqualValues(t, 9_000, events[4].Payload["balance_after_cents"], "the refund restored the 2,000")
	require.Equal(t, pix.TransferRefunded, mustTransfer(t, s, refunded.ID).Status)
}

func mustTransfer(t *testing.T, s *db.Store, id string) pix.Transfer {
	t.Helper()
	tr, err := transfer.NewStore(s).GetTransfer(context.Background(), uuid.MustParse(id))
	require.NoError(t, err)
	return tr
}
