package db_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/db/dbtest"
	"github.com/pixbank/pix/internal/pix"
)

// creditPSP is what the PIX's credit recorded as its PSP (nil: NULL).
func creditPSP(t *testing.T, s *db.Store, e2e string) *string {
	t.Helper()
	var psp *string
	require.NoError(t, s.Pool().QueryRow(context.Background(), `SELECT psp FROM pix_credits WHERE end_to_end_id = $1`, e2e).Scan(&psp))
	return psp
}

// A credit records the PSP that delivered its PIX (pix_credits.psp, which
// outlives the inbox row, for MED's fence): the webhook's PSP; "" (empty) for a
// delivery not signed; for a PIX the catch-up stored first, the PSP it
// lists (SetCatchUpPSP), NULL (unknown) when none is named.
func TestACreditRecordsThePSPThatDeliveredItsPIX(t *testing.T) {
	ctx := context.Background()
	s := dbtest.NewWithAccount(t, "acc-1", 0)
	_, err := s.CreatePixKey(ctx, db.NewPixKey{Key: "one@example.com", KeyType: "email", AccountID: "acc-1"})
	require.NoError(t, err)
	credit := func(n pix.Notification) string {
		t.Helper()
		n.EndToEndID, n.AmountCents, n.Payload = pix.NewEndToEndID("12345678", time.Now()), 500, json.RawMessage(`{}`)
		if n.Listed {
			n.Source, n.PixKey = pix.SourceAPIPix, "one@example.com"
			_, err = s.StoreListed(ctx, []pix.Notification{n})
		} else {
			n.AccountID = "acc-1"
			_, err = s.Receive(ctx, n)
		}
		require.NoError(t, err)
		out, err := s.Credit(ctx, n.EndToEndID, 1, 1)
		require.NoError(t, err)
		require.True(t, out.Credited)
		return n.EndToEndID
	}
	ptr := func(s string) *string { return &s }

	require.Equal(t, ptr("psp-a"), creditPSP(t, s, credit(pix.Notification{PSP: "psp-a"})), "a webhook's")
	require.Equal(t, ptr(""), creditPSP(t, s, credit(pix.Notification{})), "a delivery not signed")
	require.Nil(t, creditPSP(t, s, credit(pix.Notification{PSP: pix.CatchUpPSP, Listed: true})), "the catch-up's, its PSP not named")
	s.SetCatchUpPSP("psp-a")
	require.Equal(t, ptr("psp-a"), creditPSP(t, s, credit(pix.Notification{PSP: pix.CatchUpPSP, Listed: true})), "the catch-up's PSP")
}

// 0050 fills pix_credits.psp where the inbox row that named the PSP is
// still there, across its batches (more rows than one): the PSP's name,
// "" (empty) for a delivery not signed; the catch-up's rows and the credits whose
// inbox row is gone stay NULL (unknown). Run again, it changes nothing.
func TestMigration0050RecordsThePSPOfTheCreditsItCanKnow(t *testing.T) {
	ctx := context.Background()
	pool := migratedBelow(t, 50)
	_, err := pool.Exec(ctx, `
		INSERT INTO accounts (id, owner_name) VALUES ('acc-1', 'Owner');
		INSERT INTO pix_credits (end_to_end_id, account_id, amount_cents, balance_after_cents)
		SELECT 'E' || lpad(i::text, 31, '0'), 'acc-1', 100, 100 * i FROM generate_series(1, 10010) i;
		INSERT INTO inbox_messages (end_to_end_id, account_id, amount_cents, payload, status, processed_at, psp)
		SELECT 'E' || lpad(i::text, 31, '0'), 'acc-1', 100, '{}', 'done', now(),
		       (ARRAY['catchup', 'psp-a', NULL, 'psp-b'])[i % 4 + 1]
		FROM generate_series(1, 10007) i`)
	require.NoError(t, err)
	count := func() map[string]int {
		t.Helper()
		rows, err := pool.Query(ctx, `SELECT COALESCE(psp, 'NULL'), count(*) FROM pix_credits GROUP BY 1`)
		require.NoError(t, err)
		out := map[string]int{}
		for rows.Next() {
			var psp string
			var n int
			require.NoError(t, rows.Scan(&psp, &n))
			out[psp] = n
		}
		require.NoError(t, rows.Err())
		return out
	}

	began := time.Now()
	_, err = db.Migrate(ctx, pool)
	require.NoError(t, err)
	t.Logf("0050 over 10,010 credits: %s", time.Since(began))
	// i % 4: 0 catchup (2,501 of 1..10,007), 1 psp-a (2,502), 2 unsigned
	// (2,502), 3 psp-b (2,502); 10,008..10,010 have no inbox row.
	want := map[string]int{"psp-a": 2502, "": 2502, "psp-b": 2502, "NULL": 2501 + 3}
	require.Equal(t, want, count())

	all, err := db.Migrations()
	require.NoError(t, err)
	for _, m := range all {
		if m.Version == 50 {
			// Each statement on its own, as psql -f runs them: the backfill
			// commits its batches, which it can only at the top level.
			for _, statement := range strings.Split(m.SQL, "-- +goose StatementEnd") {
				_, err = pool.Exec(ctx, statement)
				require.NoError(t, err, "run again, as after a rollout (docs/operations.md)")
			}
		}
	}
	require.Equal(t, want, count())
}
