package api_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/api"
	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/db/dbtest"
	"github.com/pixbank/pix/internal/notification"
	"github.com/pixbank/pix/internal/pix"
)

const apiPixPath = "/webhooks/api-pix/pix"

// apiPixItem is one valid item; fields maps member names to raw JSON values
// that replace (or, when "", remove) the defaults.
func apiPixItem(t *testing.T, id string, fields map[string]string) string {
	t.Helper()
	return objectWith(t, map[string]string{
		"endToEndId": `"` + id + `"`,
		"txid":       `"c3e0e7a4e7f1469a9f782d3d4999343c"`,
		"chave":      `"maria@example.com"`,
		"valor":      `"110.00"`,
		"horario":    `"2020-09-09T20:15:00.358Z"`,
	}, fields)
}

func batch(items ...string) string { return `{"pix":[` + strings.Join(items, ",") + `]}` }

// The Central Bank's own example notification (bacen/pix-api openapi.yaml,
// components/examples pixWebhook1 and pixWebhook2, as the WebhookPixBody
// example combines them) is accepted exactly as published, although
// pixWebhook1 writes devolucoes as an object where the schema says array.
func TestAPIPixAcceptsTheSpecExample(t *testing.T) {
	ctx := context.Background()
	store := dbtest.New(t)
	srv := newServer(t, store)
	body, err := os.ReadFile("testdata/api_pix_spec_example.json")
	require.NoError(t, err)

	r := do(t, http.MethodPost, srv.URL+apiPixPath, "application/json", string(body))
	require.Equal(t, http.StatusOK, r.status, "%v", r.body)
	require.Equal(t, map[string]any{"pix": []any{
		map[string]any{"end_to_end_id": "E12345678202009091221kkkkkkkkkkk", "status": "pending", "duplicate": false},
		map[string]any{"end_to_end_id": "E87654321202009091221dfghi123456", "status": "pending", "duplicate": false},
	}}, r.body)

	c, err := store.GetCredit(ctx, "E12345678202009091221kkkkkkkkkkk")
	require.NoError(t, err)
	require.Equal(t, pix.SourceAPIPix, c.Source)
	require.EqualValues(t, 11000, c.AmountCents)
	require.Equal(t, "c3e0e7a4e7f1469a9f782d3d4999343c", *c.TxID)
	require.Nil(t, c.PixKey)
	require.Nil(t, c.AccountID, "resolved from the txid when credited")

	var payload, notice []byte
	require.NoError(t, store.Pool().QueryRow(ctx, `SELECT payload, refund_notice FROM inbox_messages WHERE end_to_end_id = $1`,
		"E12345678202009091221kkkkkkkkkkk").Scan(&payload, &notice))
	require.Contains(t, string(payload), `"infoPagador": "0123456789"`, "the item is stored as sent")
	require.JSONEq(t, `{"id":"123ABC","rtrId":"D12345678202009091221abcdf098765","valor":"10.00","horario":{"solicitacao":"2020-09-09T20:15:00.358Z"},"status":"EM_PROCESSAMENTO"}`, string(notice))

	// The PSP's redelivery of the same notification is absorbed.
	r = do(t, http.MethodPost, srv.URL+apiPixPath, "application/json", string(body))
	require.Equal(t, http.StatusOK, r.status)
	for _, item := range r.body["pix"].([]any) {
		require.Equal(t, true, item.(map[string]any)["duplicate"])
	}
	require.Equal(t, 2, countInbox(t, store))
}

func TestAPIPixBatchIsAllOrNothing(t *testing.T) {
	store := dbtest.New(t)
	srv := newServer(t, store)
	url := srv.URL + apiPixPath
	first := apiPixItem(t, validID, nil)
	require.Equal(t, http.StatusOK, do(t, http.MethodPost, url, "application/json", batch(first)).status)

	fresh := apiPixItem(t, "E1234567820261129120000000000002", nil)
	mismatch := apiPixItem(t, validID, map[string]string{"valor": `"111.00"`})
	r := do(t, http.MethodPost, url, "application/json", batch(fresh, mismatch))
	require.Equal(t, http.StatusUnprocessableEntity, r.status, "%v", r.body)
	code, msg := errorOf(t, r)
	require.Equal(t, api.CodePayloadMismatch, code)
	require.True(t, strings.HasPrefix(msg, "pix[1]:"), msg)
	require.Equal(t, 1, countInbox(t, store), "the fresh item of the refused batch was not stored")

	// A refund notice is a delivery of the same PIX.
	refund := apiPixItem(t, validID, map[string]string{"devolucoes": `[{"id":"d1","valor":"10.00","status":"DEVOLVIDO"}]`})
	r = do(t, http.MethodPost, url, "application/json", batch(refund, fresh))
	require.Equal(t, http.StatusOK, r.status, "%v", r.body)
	items := r.body["pix"].([]any)
	require.Equal(t, true, items[0].(map[string]any)["duplicate"])
	require.Equal(t, false, items[1].(map[string]any)["duplicate"])
	require.Equal(t, 2, countInbox(t, store))
}

// invalidAPIPixCases are the API Pix bodies refused before the store is
// asked: shared by the PostgreSQL test below and the unit tests.
func invalidAPIPixCases(t *testing.T) []invalidCase {
	item := func(fields map[string]string) string { return batch(apiPixItem(t, validID, fields)) }
	return []invalidCase{
		{"truncated", `{"pix":[{"endToEndId":"E1`, "body"},
		{"not json", `pix=1`, "body"},
		{"empty body", ``, "body"},
		{"top level array", `[` + apiPixItem(t, validID, nil) + `]`, "body"},
		{"pix missing", `{"other":[]}`, "pix"},
		{"pix null", `{"pix":null}`, "pix"},
		{"pix not an array", `{"pix":{"endToEndId":"x"}}`, "pix"},
		{"empty batch", `{"pix":[]}`, "pix"},
		{"item not an object", `{"pix":["x"]}`, "pix[0]"},
		{"second item bad", batch(apiPixItem(t, validID, nil), apiPixItem(t, "E1234567820261129120000000000002", map[string]string{"valor": `"1.5"`})), "pix[1].valor"},
		{"duplicate pix key", `{"pix":[],"pix":[` + apiPixItem(t, validID, nil) + `]}`, "pix"},
		{"duplicate valor", strings.Replace(item(nil), `"valor":"110.00"`, `"valor":"1.00","valor":"110.00"`, 1), "pix[0].valor"},
		{"endToEndId missing", item(map[string]string{"endToEndId": ""}), "pix[0].endToEndId"},
		{"endToEndId number", item(map[string]string{"endToEndId": `12`}), "pix[0].endToEndId"},
		{"endToEndId invalid characters", item(map[string]string{"endToEndId": `"E12345678202009091221kkkkkkkkk-k"`}), "pix[0].endToEndId"},
		{"endToEndId with a space", item(map[string]string{"endToEndId": `"E12345678202009091221kkkkkkkkk k"`}), "pix[0].endToEndId"},
		{"endToEndId accented", item(map[string]string{"endToEndId": `"E12345678202009091221kkkkkkkkkké"`}), "pix[0].endToEndId"},
		{"endToEndId of a return", item(map[string]string{"endToEndId": `"D12345678202009091221abcdf098765"`}), "pix[0].endToEndId"},
		{"valor missing", item(map[string]string{"valor": ""}), "pix[0].valor"},
		{"valor a number", item(map[string]string{"valor": `110.00`}), "pix[0].valor"},
		{"valor three decimals", item(map[string]string{"valor": `"110.000"`}), "pix[0].valor"},
		{"valor one decimal", item(map[string]string{"valor": `"110.0"`}), "pix[0].valor"},
		{"valor no decimals", item(map[string]string{"valor": `"110"`}), "pix[0].valor"},
		{"valor exponent", item(map[string]string{"valor": `"1.1e2"`}), "pix[0].valor"},
		{"valor negative", item(map[string]string{"valor": `"-1.00"`}), "pix[0].valor"},
		{"valor plus sign", item(map[string]string{"valor": `"+1.00"`}), "pix[0].valor"},
		{"valor comma", item(map[string]string{"valor": `"110,00"`}), "pix[0].valor"},
		{"valor zero", item(map[string]string{"valor": `"0.00"`}), "pix[0].valor"},
		{"valor eleven digits", item(map[string]string{"valor": `"12345678901.00"`}), "pix[0].valor"},
		{"valor above the limit", item(map[string]string{"valor": `"1000000000.01"`}), "pix[0].valor"},
		{"valor with spaces", item(map[string]string{"valor": `" 110.00"`}), "pix[0].valor"},
		{"horario missing", item(map[string]string{"horario": ""}), "pix[0].horario"},
		{"horario not a time", item(map[string]string{"horario": `"09/09/2020"`}), "pix[0].horario"},
		{"horario without zone", item(map[string]string{"horario": `"2020-09-09T20:15:00"`}), "pix[0].horario"},
		{"neither chave nor txid", item(map[string]string{"chave": "", "txid": ""}), "pix[0]"},
		{"txid too long", item(map[string]string{"txid": `"` + strings.Repeat("a", 36) + `"`}), "pix[0].txid"},
		{"txid symbol", item(map[string]string{"txid": `"abc-123"`}), "pix[0].txid"},
		{"txid empty", item(map[string]string{"txid": `""`}), "pix[0].txid"},
		{"txid number", item(map[string]string{"txid": `123`}), "pix[0].txid"},
		{"chave too long", item(map[string]string{"chave": `"` + strings.Repeat("a", 78) + `"`}), "pix[0].chave"},
		{"chave control character", item(map[string]string{"chave": `"maria\n@example.com"`}), "pix[0].chave"},
		{"chave empty", item(map[string]string{"chave": `""`}), "pix[0].chave"},
		// The NUL character is refused in a money field (by its own rules),
		// and stored as U+FFFD elsewhere (payload_storable_test.go).
		{"NUL in endToEndId", item(map[string]string{"endToEndId": `"E12345678202009091221kkkkkkkkkk\u0000"`}), "pix[0].endToEndId"},
		{"NUL in valor", item(map[string]string{"valor": `"110.00\u0000"`}), "pix[0].valor"},
		{"NUL in horario", item(map[string]string{"horario": `"2020-09-09T20:15:00.358Z\u0000"`}), "pix[0].horario"},
		{"NUL in chave", item(map[string]string{"chave": `"maria@example.com\u0000"`}), "pix[0].chave"},
		{"NUL in txid", item(map[string]string{"txid": `"abc\u0000"`}), "pix[0].txid"},
	}
}

// requireAPIPixRefusals sends url, the API Pix webhook route, every
// invalid batch, one too large by count and by size, and the wrong content
// type, and asserts each answer; the DB and the unit tests share it.
func requireAPIPixRefusals(t *testing.T, url string) {
	t.Helper()
	for _, tc := range invalidAPIPixCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			r := do(t, http.MethodPost, url, "application/json", tc.body)
			require.Equal(t, http.StatusBadRequest, r.status, "%v", r.body)
			code, msg := errorOf(t, r)
			require.Equal(t, api.CodeInvalidRequest, code)
			require.True(t, strings.HasPrefix(msg, tc.field+":"), "message %q names the field %q", msg, tc.field)
		})
	}
	t.Run("oversized batch", func(t *testing.T) {
		items := make([]string, notification.MaxAPIPixBatch+1)
		for i := range items {
			items[i] = apiPixItem(t, fmt.Sprintf("E12345678202611291200%011d", i), map[string]string{"chave": ""})
		}
		r := do(t, http.MethodPost, url, "application/json", batch(items...))
		require.Equal(t, http.StatusRequestEntityTooLarge, r.status, "%v", r.body)
		code, _ := errorOf(t, r)
		require.Equal(t, api.CodeBatchTooLarge, code)
	})
	t.Run("oversized body", func(t *testing.T) {
		r := do(t, http.MethodPost, url, "application/json", batch(apiPixItem(t, validID, map[string]string{"infoPagador": `"` + strings.Repeat("x", notification.MaxAPIPixBodyBytes) + `"`})))
		require.Equal(t, http.StatusRequestEntityTooLarge, r.status)
		code, _ := errorOf(t, r)
		require.Equal(t, api.CodePayloadTooLarge, code)
	})
	t.Run("content type", func(t *testing.T) {
		r := do(t, http.MethodPost, url, "text/plain", batch(apiPixItem(t, validID, nil)))
		require.Equal(t, http.StatusUnsupportedMediaType, r.status)
	})
}

func TestAPIPixRefusesInvalidInputAndStoresNothing(t *testing.T) {
	store := dbtest.New(t)
	srv := newServer(t, store)
	url := srv.URL + apiPixPath
	requireAPIPixRefusals(t, url)
	require.Zero(t, countInbox(t, store), "no refused request stored anything")

	// Tolerated: members we don't know, informational fields of any shape,
	// a chave alone, a txid alone, the largest valor.
	tolerated := batch(
		apiPixItem(t, validID, map[string]string{"txid": "", "componentesValor": `{"original":{"valor":"110.00"}}`, "novoCampo": `[1,{"a":null}]`, "infoPagador": `42`}),
		apiPixItem(t, "E1234567820261129120000000000002", map[string]string{"chave": "", "devolucoes": `"texto"`, "valor": `"1000000000.00"`}),
	)
	r := do(t, http.MethodPost, url, "application/json", tolerated)
	require.Equal(t, http.StatusOK, r.status, "%v", r.body)
	c, err := store.GetCredit(context.Background(), "E1234567820261129120000000000002")
	require.NoError(t, err)
	require.Equal(t, pix.MaxAmountCents, c.AmountCents)
}

// The whole API Pix path through the store: the charge named by the spec's
// example txid receives the credit.
func TestAPIPixCreditsTheChargeOwner(t *testing.T) {
	ctx := context.Background()
	store := dbtest.New(t)
	srv := newServer(t, store)
	_, err := store.CreateAccount(ctx, db.NewAccount{ID: "acc-1", OwnerName: "Maria"})
	require.NoError(t, err)
	_, err = store.CreateCharge(ctx, db.NewCharge{TxID: "971122d8f37211eaadc10242ac120002", AccountID: "acc-1", AmountExpectedCents: 11000})
	require.NoError(t, err)
	body, err := os.ReadFile("testdata/api_pix_spec_example.json")
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, do(t, http.MethodPost, srv.URL+apiPixPath, "application/json", string(body)).status)

	out, err := store.Credit(ctx, "E87654321202009091221dfghi123456", 1, 1)
	require.NoError(t, err)
	require.Equal(t, "acc-1", out.AccountID)
	require.EqualValues(t, 11000, out.BalanceAfter)
	_, err = store.Credit(ctx, "E12345678202009091221kkkkkkkkkkk", 1, 1)
	require.ErrorIs(t, err, pix.ErrChargeNotFound, "pixWebhook1's txid names no charge here")
}
