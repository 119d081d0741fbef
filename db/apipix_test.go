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

// apiPixNote is an API Pix notification naming its receiver by key and/or txid.
func apiPixNote(id, key, txid string, amount int64) pix.Notification {
	payload, _ := json.Marshal(map[string]any{"endToEndId": id, "chave": key, "txid": txid})
	return pix.Notification{EndToEndID: id, Source: pix.SourceAPIPix, PixKey: key, TxID: txid, AmountCents: amount, Payload: payload}
}

func TestAPIPixCreditResolvesTheKeyFirstThenTheCharge(t *testing.T) {
	ctx := context.Background()
	s := dbtest.NewWithAccount(t, "acc-key", 0)
	dbtest.OpenAccount(t, s, "acc-charge", 0)
	_, err := s.CreatePixKey(ctx, db.NewPixKey{Key: "maria@example.com", KeyType: "email", AccountID: "acc-key"})
	require.NoError(t, err)
	_, err = s.CreateCharge(ctx, db.NewCharge{TxID: "txcharge0000000000000000001", AccountID: "acc-charge", AmountExpectedCents: 500})
	require.NoError(t, err)

	// Key and txid: the key decides.
	both := apiPixNote(dbtest.E2EID(1), "maria@example.com", "txcharge0000000000000000001", 100)
	// Only the txid: the charge decides, and is concluded by the credit.
	byCharge := apiPixNote(dbtest.E2EID(2), "", "txcharge0000000000000000001", 500)
	_, err = s.ReceiveBatch(ctx, []pix.Notification{both, byCharge})
	require.NoError(t, err)

	out, err := s.Credit(ctx, both.EndToEndID, 1, 1)
	require.NoError(t, err)
	require.Equal(t, "acc-key", out.AccountID)
	status, err := s.ChargeStatus(ctx, "txcharge0000000000000000001")
	require.NoError(t, err)
	require.Equal(t, "ATIVA", status, "a PIX credited through a key to another account does not pay the charge")
	require.Equal(t, db.ChargeOtherAccount, out.ChargeOutcome)

	out, err = s.Credit(ctx, byCharge.EndToEndID, 1, 1)
	require.NoError(t, err)
	require.Equal(t, "acc-charge", out.AccountID)
	require.Equal(t, db.ChargeConcluded, out.ChargeOutcome)
	status, err = s.ChargeStatus(ctx, "txcharge0000000000000000001")
	require.NoError(t, err)
	require.Equal(t, "CONCLUIDA", status, "the charge's own account, the amount it expects")
	require.EqualValues(t, 100, dbtest.Balance(t, s, "acc-key"))
	require.EqualValues(t, 500, dbtest.Balance(t, s, "acc-charge"))

	c, err := s.GetCredit(ctx, byCharge.EndToEndID)
	require.NoError(t, err)
	require.Equal(t, pix.SourceAPIPix, c.Source)
	require.Equal(t, "acc-charge", *c.AccountID, "the resolved account is recorded on the row")
	require.Equal(t, "txcharge0000000000000000001", *c.TxID)
	require.Nil(t, c.PixKey)
}

func TestAPIPixUnknownKeyFailsUntilTheKeyExists(t *testing.T) {
	ctx := context.Background()
	s := dbtest.NewWithAccount(t, "acc-1", 0)
	n := apiPixNote(dbtest.E2EID(1), "+5511999990000", "", 2500)
	_, err := s.Receive(ctx, n)
	require.NoError(t, err)

	c, err := s.GetCredit(ctx, n.EndToEndID)
	require.NoError(t, err)
	require.Nil(t, c.AccountID, "not resolved yet")

	_, err = s.Credit(ctx, n.EndToEndID, 1, 1)
	require.ErrorIs(t, err, pix.ErrPixKeyNotFound)
	require.ErrorContains(t, err, "+5511999990000")

	// A txid-only PIX with no such charge.
	m := apiPixNote(dbtest.E2EID(2), "", "nosuchcharge", 100)
	_, err = s.Receive(ctx, m)
	require.NoError(t, err)
	_, err = s.Credit(ctx, m.EndToEndID, 1, 1)
	require.ErrorIs(t, err, pix.ErrChargeNotFound)

	_, err = s.CreatePixKey(ctx, db.NewPixKey{Key: "+5511999990000", KeyType: "phone", AccountID: "acc-1"})
	require.NoError(t, err)
	out, err := s.Credit(ctx, n.EndToEndID, 1, 2)
	require.NoError(t, err)
	require.True(t, out.Credited)
	require.EqualValues(t, 2500, dbtest.Balance(t, s, "acc-1"))
}

func TestAPIPixRefundNoticeIsRecordedAndNeverCreditsAgain(t *testing.T) {
	ctx := context.Background()
	s := dbtest.NewWithAccount(t, "acc-1", 0)
	_, err := s.CreatePixKey(ctx, db.NewPixKey{Key: "k1", KeyType: "evp", AccountID: "acc-1"})
	require.NoError(t, err)
	n := apiPixNote(dbtest.E2EID(1), "k1", "", 11000)
	_, err = s.Receive(ctx, n)
	require.NoError(t, err)
	_, err = s.Credit(ctx, n.EndToEndID, 1, 1)
	require.NoError(t, err)

	refund := n
	refund.RefundNotice = json.RawMessage(`[{"id":"123ABC","valor":"10.00","status":"EM_PROCESSAMENTO"}]`)
	r, err := s.Receive(ctx, refund)
	require.NoError(t, err)
	require.True(t, r.Duplicate)
	require.Equal(t, pix.StatusDone, r.Status)

	var notice json.RawMessage
	require.NoError(t, s.Pool().QueryRow(ctx, `SELECT refund_notice FROM inbox_messages WHERE end_to_end_id = $1`, n.EndToEndID).Scan(&notice))
	require.JSONEq(t, string(refund.RefundNotice), string(notice))
	out, err := s.Credit(ctx, n.EndToEndID, 1, 2)
	require.NoError(t, err)
	require.False(t, out.Credited)
	require.EqualValues(t, 11000, dbtest.Balance(t, s, "acc-1"))
}

func TestAPIPixRedeliveryWithAnotherRecipientIsAMismatch(t *testing.T) {
	ctx := context.Background()
	s := dbtest.New(t)
	n := apiPixNote(dbtest.E2EID(1), "k1", "tx1", 100)
	_, err := s.Receive(ctx, n)
	require.NoError(t, err)
	for _, other := range []pix.Notification{
		apiPixNote(dbtest.E2EID(1), "k2", "tx1", 100),
		apiPixNote(dbtest.E2EID(1), "k1", "", 100),
		apiPixNote(dbtest.E2EID(1), "k1", "tx1", 101),
		dbtest.Notice(dbtest.E2EID(1), "acc-1", 100), // the same id in the native format
	} {
		_, err := s.Receive(ctx, other)
		require.ErrorIs(t, err, pix.ErrPayloadMismatch, "%+v", other)
	}
	r, err := s.Receive(ctx, n)
	require.NoError(t, err)
	require.True(t, r.Duplicate)
}

func TestReceiveBatchIsAllOrNothing(t *testing.T) {
	ctx := context.Background()
	s := dbtest.New(t)
	first := apiPixNote(dbtest.E2EID(1), "k1", "", 100)
	_, err := s.Receive(ctx, first)
	require.NoError(t, err)

	fresh := apiPixNote(dbtest.E2EID(2), "k1", "", 200)
	mismatch := apiPixNote(dbtest.E2EID(1), "k1", "", 999)
	_, err = s.ReceiveBatch(ctx, []pix.Notification{fresh, mismatch})
	require.ErrorIs(t, err, pix.ErrPayloadMismatch)
	var item *pix.ItemError
	require.ErrorAs(t, err, &item)
	require.Equal(t, 1, item.Index)
	_, err = s.GetCredit(ctx, fresh.EndToEndID)
	require.ErrorIs(t, err, pix.ErrCreditNotFound, "the batch's first item was rolled back with the refused one")

	// The same PIX twice in one batch: one row, the second a duplicate.
	rs, err := s.ReceiveBatch(ctx, []pix.Notification{fresh, fresh})
	require.NoError(t, err)
	require.False(t, rs[0].Duplicate)
	require.True(t, rs[1].Duplicate)
	c, err := s.GetCredit(ctx, fresh.EndToEndID)
	require.NoError(t, err)
	require.Equal(t, 2, c.Deliveries)
}
