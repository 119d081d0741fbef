package db_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/db/dbtest"
	"github.com/pixbank/pix/internal/pix"
)

type outboxRow struct {
	AggregateType, AggregateID, Type string
	Payload                          map[string]any
}

func outboxRows(t *testing.T, s *db.Store) []outboxRow {
	t.Helper()
	rows, err := s.Pool().Query(context.Background(), `SELECT aggregate_type, aggregate_id, event_type, payload FROM outbox_events ORDER BY seq`)
	require.NoError(t, err)
	defer rows.Close()
	var out []outboxRow
	for rows.Next() {
		var r outboxRow
		var payload []byte
		require.NoError(t, rows.Scan(&r.AggregateType, &r.AggregateID, &r.Type, &payload))
		require.NoError(t, json.Unmarshal(payload, &r.Payload))
		out = append(out, r)
	}
	require.NoError(t, rows.Err())
	return out
}

func TestCreditWritesItsEventInItsTransaction(t *testing.T) {
	ctx := context.Background()
	s := dbtest.New(t)
	openAccount(t, s, "acc-1", 100)
	n := note(e2eID(1), "acc-1", 15000)
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
	s := dbtest.New(t)
	openAccount(t, s, "acc-1", 0)
	n := note(e2eID(1), "acc-1", 100)
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
	require.EqualValues(t, 0, balance(t, s, "acc-1"))
}

func TestFailedCreditAndTransferStepsWriteEvents(t *testing.T) {
	ctx := context.Background()
	s := dbtest.New(t)
	n := note(e2eID(1), "acc-none", 100)
	_, err := s.Receive(ctx, n)
	require.NoError(t, err)
	_, err = s.MarkFailed(ctx, n.EndToEndID, 1, 5, "AccountNotFound: account not found: acc-none")
	require.NoError(t, err)
	_, err = s.MarkFailed(ctx, n.EndToEndID, 1, 5, "again")
	require.NoError(t, err)

	openAccount(t, s, "acc-1", 10_000)
	settled := debit(t, s, "acc-1", 1_000)
	_, err = s.SettleTransfer(ctx, uuid.MustParse(settled.ID))
	require.NoError(t, err)
	_, err = s.SettleTransfer(ctx, uuid.MustParse(settled.ID))
	require.NoError(t, err)
	refunded := debit(t, s, "acc-1", 2_000)
	_, err = s.RefundTransfer(ctx, uuid.MustParse(refunded.ID), "receiver account closed")
	require.NoError(t, err)
	_, err = s.RefundTransfer(ctx, uuid.MustParse(refunded.ID), "receiver account closed")
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
	tr, err := s.GetTransfer(context.Background(), uuid.MustParse(id))
	require.NoError(t, err)
	return tr
}
