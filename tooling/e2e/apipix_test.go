//go:build e2e

package e2e

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/internal/config"
	"github.com/pixbank/pix/internal/pix"
)

// A signed API Pix notification of two PIX, in the Central Bank's format,
// through the whole service: the one whose key is known is credited; the one
// whose txid names no charge fails with the reason, and is credited once the
// charge exists and an operator re-drives it.
func TestAPIPixNotificationEndToEnd(t *testing.T) {
	ctx := context.Background()
	s := newStack(t, shared, func(c *config.Config) { c.InboxAttemptsMax = 2 })
	s.openAccount("acc-maria", 1_000)
	s.openAccount("acc-shop", 0)
	_, err := s.store.CreatePixKey(ctx, db.NewPixKey{Key: "maria@example.com", KeyType: "email", AccountID: "acc-maria"})
	require.NoError(t, err)

	byKey, byCharge := pixID(), pixID()
	txid := "shop" + strings.ToLower(randomSuffix()) + "00000000000000"
	body := map[string]any{"pix": []map[string]any{
		{"endToEndId": byKey, "chave": "maria@example.com", "valor": "110.25", "horario": "2026-11-29T20:15:00.358Z", "infoPagador": "aluguel"},
		{"endToEndId": byCharge, "txid": txid, "valor": "0.99", "horario": "2026-11-29T20:15:01Z"},
	}}
	r := s.request(http.MethodPost, "/webhooks/api-pix/pix", body)
	require.Equal(t, http.StatusOK, r.Status, "%v", r.Body)

	s.waitStatus(byKey, pix.StatusDone, 30*time.Second)
	require.EqualValues(t, 1_000+11_025, s.balance("acc-maria"))

	s.waitStatus(byCharge, pix.StatusFailed, 60*time.Second)
	c, err := s.store.GetCredit(ctx, byCharge)
	require.NoError(t, err)
	require.Contains(t, *c.LastError, "ChargeNotFound")
	require.Contains(t, *c.LastError, txid)

	_, err = s.store.CreateCharge(ctx, db.NewCharge{TxID: txid, AccountID: "acc-shop", AmountExpectedCents: 99})
	require.NoError(t, err)
	r = s.request(http.MethodPost, "/admin/pix/credits/"+byCharge+"/retry", nil)
	require.Equal(t, http.StatusAccepted, r.Status, "%v", r.Body)
	s.waitStatus(byCharge, pix.StatusDone, 30*time.Second)
	require.EqualValues(t, 99, s.balance("acc-shop"))
	status, err := s.store.ChargeStatus(ctx, txid)
	require.NoError(t, err)
	require.Equal(t, "CONCLUIDA", status)

	// The PSP redelivers the batch, now with a refund notice on the first
	// PIX: both are duplicates, nothing is credited again.
	body["pix"].([]map[string]any)[0]["devolucoes"] = []map[string]any{{"id": "dev1", "valor": "10.00", "status": "EM_PROCESSAMENTO"}}
	r = s.request(http.MethodPost, "/webhooks/api-pix/pix", body)
	require.Equal(t, http.StatusOK, r.Status, "%v", r.Body)
	for _, item := range r.Body["pix"].([]any) {
		require.Equal(t, true, item.(map[string]any)["duplicate"])
	}
	time.Sleep(500 * time.Millisecond)
	require.EqualValues(t, 1_000+11_025, s.balance("acc-maria"))
	require.Equal(t, 1, s.creditRows(byKey))
	require.Equal(t, 1, s.creditRows(byCharge))
	s.assertBooksBalance()
}
