package db_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/db/dbtest"
	"github.com/pixbank/pix/internal/pix"
)

// Payloads and refund notices that PostgreSQL's jsonb refuses as sent: each
// of them failed the insert (22P02, 22021, 22P05, 22003), and with it the
// PIX, its batch and its group. The store keeps a copy jsonb holds
// (notification.Storable), whichever way the delivery goes in.
var unstorablePayloads = []struct {
	name, payload, payer string // payer: the stored payload's payer.name
}{
	{"a lone surrogate escape", `{"payer":{"name":"Jo\ud83d"}}`, "Jo\uFFFD"},
	{"a raw Latin-1 byte", "{\"payer\":{\"name\":\"Jos\xe9\"}}", "Jos\uFFFD"},
	{"the NUL character", `{"payer":{"name":"Jo\u0000"}}`, "Jo\uFFFD"},
	{"a number beyond numeric", `{"payer":{"name":1e400000}}`, "1e400000"},
}

// withPayload is n carrying payload, and notice as its refund notice
// when it is not "".
func withPayload(n pix.Notification, payload, notice string) pix.Notification {
	n.Payload = []byte(payload)
	if notice != "" {
		n.RefundNotice = []byte(notice)
	}
	return n
}

func storedPayer(t *testing.T, s *db.Store, id string) (payer, notice string) {
	t.Helper()
	var n *string
	require.NoError(t, s.Pool().QueryRow(context.Background(),
		`SELECT payload #>> '{payer,name}', refund_notice #>> '{payer,name}' FROM inbox_messages WHERE end_to_end_id = $1`, id).Scan(&payer, &n))
	if n != nil {
		notice = *n
	}
	return payer, notice
}

func TestReceiveStoresPayloadsJSONBRefusesAsSent(t *testing.T) {
	ctx := context.Background()
	s := dbtest.New(t)
	next := 0
	id := func() string { next++; return dbtest.E2EID(next) }
	for _, tc := range unstorablePayloads {
		t.Run(tc.name, func(t *testing.T) {
			// Receive, then its redelivery: a duplicate, compared on the
			// money fields; another amount is the mismatch it always was.
			n := withPayload(dbtest.Notice(id(), "acc-1", 100), tc.payload, "")
			r, err := s.Receive(ctx, n)
			require.NoError(t, err)
			require.False(t, r.Duplicate)
			payer, _ := storedPayer(t, s, n.EndToEndID)
			require.Equal(t, tc.payer, payer)
			r, err = s.Receive(ctx, withPayload(n, `{"payer":{"name":"another"}}`, ""))
			require.NoError(t, err)
			require.True(t, r.Duplicate)
			other := n
			other.AmountCents++
			_, err = s.Receive(ctx, other)
			require.ErrorIs(t, err, pix.ErrPayloadMismatch)

			// ReceiveBatch: between good items, and in the refund notice.
			good1, good2 := apiPixNote(id(), "k@example.com", "", 100), apiPixNote(id(), "k@example.com", "", 100)
			bad := withPayload(apiPixNote(id(), "k@example.com", "", 100), tc.payload, tc.payload)
			rs, err := s.ReceiveBatch(ctx, []pix.Notification{good1, bad, good2})
			require.NoError(t, err)
			require.Len(t, rs, 3)
			payer, notice := storedPayer(t, s, bad.EndToEndID)
			require.Equal(t, tc.payer, payer)
			require.Equal(t, tc.payer, notice)

			// The group commit: one group of a good webhook, a bad one and
			// a batch holding both.
			goodNative, badNative := dbtest.Notice(id(), "acc-1", 100), withPayload(dbtest.Notice(id(), "acc-1", 100), tc.payload, "")
			good3 := apiPixNote(id(), "k@example.com", "", 100)
			bad3 := withPayload(apiPixNote(id(), "k@example.com", "", 100), tc.payload, tc.payload)
			calls := []*db.ReceiveCallForTest{
				{Notifications: []pix.Notification{goodNative}},
				{Notifications: []pix.Notification{badNative}},
				{Notifications: []pix.Notification{good3, bad3}, Batch: true},
			}
			db.ReceiveGroupForTest(ctx, s, calls)
			for i, c := range calls {
				require.NoError(t, c.Err, "call %d", i)
				for _, r := range c.Receipts {
					require.False(t, r.Duplicate)
				}
			}
			for _, n := range []pix.Notification{badNative, bad3} {
				payer, _ := storedPayer(t, s, n.EndToEndID)
				require.Equal(t, tc.payer, payer)
			}
		})
	}
}
