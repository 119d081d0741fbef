package dbtest

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/internal/durable/rows"
	"github.com/pixbank/pix/saga/reconcile"
)

// OpenAccount opens account id with opening as its balance; it must be
// new.
func OpenAccount(t testing.TB, s *db.Store, id string, opening int64) {
	t.Helper()
	created, err := s.CreateAccount(context.Background(), db.NewAccount{ID: id, OwnerName: "Owner " + id, OpeningBalanceCents: opening})
	require.NoError(t, err)
	require.True(t, created, "account %s existed", id)
}

// Balance is account id's balance.
func Balance(t testing.TB, s *db.Store, id string) int64 {
	t.Helper()
	acc, err := s.GetAccount(context.Background(), id)
	require.NoError(t, err)
	return acc.BalanceCents
}

// RequireBooks checks what I2, I9 and I11 say at a commit
// (docs/design.md): the reconciliation balances (every balance its opening
// plus its movements, every held amount its active holds), no available
// balance is negative, and no PIX's devoluções (but the reversed) and
// active holds (a hold that fills from later credits by what it fills to)
// add up to more than its credit. The reconciliation is saga/reconcile's
// (its run is the check of the books), which this package imports: no
// package that saga/reconcile builds on has internal tests using dbtest.
func RequireBooks(t testing.TB, s *db.Store) {
	t.Helper()
	ctx := context.Background()
	rec, err := reconcile.NewStore(s).Reconcile(ctx)
	require.NoError(t, err)
	require.True(t, rec.Balanced(), "%+v", rec)
	var negative, over int
	require.NoError(t, s.Pool().QueryRow(ctx, `SELECT count(*) FROM accounts WHERE balance_cents - held_cents < 0 OR held_cents < 0`).Scan(&negative))
	require.Zero(t, negative, "an account with a negative available balance")
	require.NoError(t, s.Pool().QueryRow(ctx, `
		SELECT count(*) FROM pix_credits c
		WHERE c.amount_cents < (SELECT COALESCE(sum(amount_cents), 0) FROM pix_refunds r WHERE r.end_to_end_id = c.end_to_end_id AND r.status <> 'reversed')
		                     + (SELECT COALESCE(sum(COALESCE(fill_to_cents, amount_cents)), 0) FROM pix_holds h
		                        WHERE h.end_to_end_id = c.end_to_end_id AND h.status = 'active')`).Scan(&over))
	require.Zero(t, over, "a PIX whose devoluções and holds exceed its credit")
}

// RequireNoHoldLacksWhileAvailable checks the rule the holds that fill
// rest on (docs/design.md, I11): no account has money available while one
// of its holds that fill still lacks (active, before its fill_until by the
// database's clock): every inflow fills them first, and so does every
// change that makes one lack (a raise, a hold made filling), in its own
// transaction. at says when (a history's step).
func RequireNoHoldLacksWhileAvailable(t testing.TB, s *db.Store, at string) {
	t.Helper()
	var lacking []string
	rs, err := s.Pool().Query(context.Background(), `
		SELECT h.id::text || ' of ' || h.account_id || ' holds ' || h.amount_cents || ' of ' || h.fill_to_cents
		       || ', ' || (a.balance_cents - a.held_cents) || ' available'
		FROM pix_holds h JOIN accounts a ON a.id = h.account_id
		WHERE h.status = 'active' AND h.amount_cents < h.fill_to_cents
		  AND (h.fill_until IS NULL OR statement_timestamp() < h.fill_until)
		  AND a.balance_cents - a.held_cents > 0`)
	require.NoError(t, err)
	lacking, err = pgx.CollectRows(rs, pgx.RowTo[string])
	require.NoError(t, err)
	require.Empty(t, lacking, "%s: a hold lacks while its account has money available", at)
}

// Event is one event the outbox holds: its type and its payload.
type Event struct {
	Type    string
	Payload json.RawMessage
}

// OutboxEvents are the events the outbox holds for one aggregate (its type
// and id), in order.
func OutboxEvents(t testing.TB, s *db.Store, aggregate, id string) []Event {
	t.Helper()
	rs, err := s.Pool().Query(context.Background(),
		`SELECT event_type, payload FROM outbox_events WHERE aggregate_type = $1 AND aggregate_id = $2 ORDER BY seq`, aggregate, id)
	require.NoError(t, err)
	events, err := pgx.CollectRows(rs, func(row pgx.CollectableRow) (Event, error) {
		var e Event
		return e, row.Scan(&e.Type, &e.Payload)
	})
	require.NoError(t, err)
	return events
}

// Events are the types of the events the outbox holds for one aggregate,
// in order.
func Events(t testing.TB, s *db.Store, aggregate, id string) []string {
	t.Helper()
	var types []string
	for _, e := range OutboxEvents(t, s, aggregate, id) {
		types = append(types, e.Type)
	}
	return types
}

// ClaimState is what a claim of a queue (rows.Due) says of the dispatch of
// a row: its key, its attempts, whether a run was started.
type ClaimState struct {
	Key        string
	Attempts   int
	Dispatched bool
}

// ClaimStates are the claim states of due, in its order.
func ClaimStates(due []rows.Due) []ClaimState {
	out := make([]ClaimState, 0, len(due))
	for _, d := range due {
		out = append(out, ClaimState{d.Key, d.Attempts, d.Dispatched})
	}
	return out
}

// Keys is the tests' Idempotency-Key policy: a key locked a minute while
// its request runs, kept an hour.
var Keys = db.KeyPolicy{LockFor: time.Minute, KeepFor: time.Hour}

// Reserve reserves a fresh Idempotency-Key for caller (Keys): what a
// request's handler holds when it writes its operation.
func Reserve(t testing.TB, s *db.Store, caller string) *db.Reservation {
	t.Helper()
	res, replay, err := s.ReserveKey(context.Background(), caller, uuid.New(), "h", Keys)
	require.NoError(t, err)
	require.Nil(t, replay, "a fresh key has no answer recorded")
	return res
}
