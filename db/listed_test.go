package db_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/db/dbtest"
	"github.com/pixbank/pix/internal/pix"
)

// apiPix is an API Pix delivery (or listing) of a PIX to chave.
func apiPix(id, chave string, amount int64) pix.Notification {
	return pix.Notification{EndToEndID: id, Source: pix.SourceAPIPix, PixKey: chave, AmountCents: amount, PSP: "psp-a", Payload: json.RawMessage(`{}`)}
}

// A PIX is judged the same by the webhooks and by the listing, whatever
// the format it was first told in and whatever its row's status: the same
// PIX told in the other format is a duplicate (its chave names the very
// account), anything else a payload mismatch; a credited PIX told again
// under another chave is a mismatch as it was while pending, never a
// silent duplicate.
func TestAPixIsJudgedTheSameWhateverItsFormatAndStatus(t *testing.T) {
	ctx := context.Background()
	s := dbtest.NewWithAccount(t, "acc-1", 0)
	dbtest.OpenAccount(t, s, "acc-2", 0)
	for key, account := range map[string]string{"one@example.com": "acc-1", "two@example.com": "acc-2"} {
		_, err := s.CreatePixKey(ctx, db.NewPixKey{Key: key, KeyType: "email", AccountID: account})
		require.NoError(t, err)
	}
	byKey, byAccount := dbtest.E2EID(1), dbtest.E2EID(2)
	_, err := s.ReceiveBatch(ctx, []pix.Notification{apiPix(byKey, "one@example.com", 500)})
	require.NoError(t, err)
	_, err = s.Receive(ctx, dbtest.Notice(byAccount, "acc-1", 700))
	require.NoError(t, err)

	judge := func(status string) {
		t.Helper()
		// A native webhook of the PIX stored from its key: its account.
		r, err := s.Receive(ctx, dbtest.Notice(byKey, "acc-1", 500))
		require.NoError(t, err, "row %s: the same PIX, told in our format", status)
		require.True(t, r.Duplicate)
		require.Equal(t, status, r.Status)
		_, err = s.Receive(ctx, dbtest.Notice(byKey, "acc-2", 500))
		require.ErrorIs(t, err, pix.ErrPayloadMismatch, "row %s: another account", status)
		// An API Pix webhook of the PIX stored from our format.
		r, err = s.Receive(ctx, apiPix(byAccount, "one@example.com", 700))
		require.NoError(t, err, "row %s: the same PIX, told in the API Pix format", status)
		require.True(t, r.Duplicate)
		for _, other := range []pix.Notification{apiPix(byAccount, "two@example.com", 700), apiPix(byAccount, "nobody@example.com", 700),
			apiPix(byKey, "two@example.com", 500), apiPix(byAccount, "one@example.com", 701)} {
			_, err = s.Receive(ctx, other)
			require.ErrorIs(t, err, pix.ErrPayloadMismatch, "row %s: %+v", status, other)
		}
		// The listing judges alike.
		out, err := s.StoreListed(ctx, []pix.Notification{apiPix(byKey, "one@example.com", 500), apiPix(byAccount, "one@example.com", 700),
			apiPix(byKey, "two@example.com", 500), apiPix(byAccount, "two@example.com", 700)})
		require.NoError(t, err)
		differs := []string{out[0].Differs, out[1].Differs, out[2].Differs, out[3].Differs}
		require.Equal(t, []string{"", "", "chave", "account"}, differs, "row %s", status)
	}
	judge(pix.StatusPending)
	for _, id := range []string{byKey, byAccount} {
		out, err := s.Credit(ctx, id, 1, 1)
		require.NoError(t, err)
		require.True(t, out.Credited)
	}
	judge(pix.StatusDone)
	// Once the rows are cleaned up, against the credits: the amount and the
	// account.
	_, err = s.Pool().Exec(ctx, "DELETE FROM inbox_messages")
	require.NoError(t, err)
	r, err := s.Receive(ctx, apiPix(byAccount, "one@example.com", 700))
	require.NoError(t, err)
	require.Equal(t, pix.Receipt{EndToEndID: byAccount, Status: pix.StatusDone, Duplicate: true}, r)
	_, err = s.Receive(ctx, apiPix(byAccount, "two@example.com", 700))
	require.ErrorIs(t, err, pix.ErrPayloadMismatch)
	out, err := s.StoreListed(ctx, []pix.Notification{apiPix(byKey, "one@example.com", 500), apiPix(byKey, "two@example.com", 500)})
	require.NoError(t, err)
	require.Equal(t, []db.ListedOutcome{{EndToEndID: byKey}, {EndToEndID: byKey, Differs: "account"}}, out)
	var rows int
	require.NoError(t, s.Pool().QueryRow(ctx, "SELECT count(*) FROM inbox_messages").Scan(&rows))
	require.Zero(t, rows, "a credited PIX is never stored again as pending")
}

// A page that lists one end_to_end_id twice with other money fields (the
// second copy another amount) reports the second as a payload mismatch:
// the first copy is inserted, the others compared with it. (Found by an
// attack review: the insert, sorted by end_to_end_id alone, could store
// either copy, and the other was then compared with itself.)
func TestAPageListingOneIDTwiceWithOtherAmountsIsVisible(t *testing.T) {
	ctx := context.Background()
	s := dbtest.NewWithAccount(t, "acc-1", 0)
	_, err := s.CreatePixKey(ctx, db.NewPixKey{Key: "one@example.com", KeyType: "email", AccountID: "acc-1"})
	require.NoError(t, err)
	const n = 1000
	ns := make([]pix.Notification, n)
	for i := range ns {
		ns[i] = apiPix(dbtest.E2EID(10000+((i+1)*7919)%n), "one@example.com", 100)
	}
	dup := dbtest.E2EID(1)
	ns[9] = apiPix(dup, "one@example.com", 100)
	ns[899] = apiPix(dup, "one@example.com", 999_999)
	out, err := s.StoreListed(ctx, ns)
	require.NoError(t, err)
	var amount int64
	require.NoError(t, s.Pool().QueryRow(ctx, "SELECT amount_cents FROM inbox_messages WHERE end_to_end_id = $1", dup).Scan(&amount))
	t.Logf("stored amount %d; first copy (100): %+v; second copy (999999): %+v", amount, out[9], out[899])
	require.EqualValues(t, 100, amount, "the first copy stored")
	require.True(t, out[9].New)
	require.Equal(t, "amount", out[899].Differs, "the second copy, another amount: a payload mismatch")
}

// An API Pix PIX told again under another txid is a payload mismatch
// whatever its row's status, and once the row is cleaned up too, by the
// txid its credit records (pix_credits.charge_txid): the PSP would be
// saying the PIX paid another charge. (Found by an attack review.)
func TestAnotherTxidIsAMismatchOnceTheRowIsCleanedUp(t *testing.T) {
	ctx := context.Background()
	s := dbtest.NewWithAccount(t, "acc-1", 0)
	_, err := s.CreatePixKey(ctx, db.NewPixKey{Key: "one@example.com", KeyType: "email", AccountID: "acc-1"})
	require.NoError(t, err)
	id := dbtest.E2EID(3)
	first := apiPix(id, "one@example.com", 500)
	first.TxID = "charge1"
	_, err = s.ReceiveBatch(ctx, []pix.Notification{first})
	require.NoError(t, err)
	out, err := s.Credit(ctx, id, 1, 1)
	require.NoError(t, err)
	require.True(t, out.Credited)
	other := first
	other.TxID = "charge2"
	listed, err := s.StoreListed(ctx, []pix.Notification{other})
	require.NoError(t, err)
	require.Equal(t, "txid", listed[0].Differs, "row kept")
	_, err = s.Pool().Exec(ctx, "DELETE FROM inbox_messages") // the retention
	require.NoError(t, err)
	listed, err = s.StoreListed(ctx, []pix.Notification{other})
	require.NoError(t, err)
	require.Equal(t, "txid", listed[0].Differs, "row cleaned up: judged against the credit")
	listed, err = s.StoreListed(ctx, []pix.Notification{first})
	require.NoError(t, err)
	require.Equal(t, db.ListedOutcome{EndToEndID: id}, listed[0], "the same PIX, against its credit")
}
