package api_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/api"
	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/db/dbtest"
	"github.com/pixbank/pix/internal/groupcommit"
	"github.com/pixbank/pix/saga/refund"
)

// What a webhook says beyond the money fields never decides whether its
// PIX is stored: informational content that PostgreSQL's jsonb refuses as
// sent (a lone UTF-16 surrogate from an emoji cut in half, a raw Latin-1
// byte, a number beyond numeric's range, the NUL character) is stored as a
// sanitised copy, on both routes, alone and in an API Pix batch next to
// good items, straight to the store and through the group commit. Before,
// each was answered 500 (400 for NUL) on every redelivery, and held back
// every other PIX of its batch.

// unstorableCase is informational content jsonb refuses as sent: a raw
// JSON value (in a native webhook's payer.name or an unknown member, an
// API Pix item's infoPagador or an unknown member), and what the stored
// copy holds instead.
type unstorableCase struct {
	name string
	// raw is the JSON value sent; informational says where (a string
	// member, or any member when it is a number).
	raw      string
	isNumber bool
	// stored is the value of the member in the stored payload, as
	// PostgreSQL's jsonb renders it (->>).
	stored string
}

var unstorableCases = []unstorableCase{
	{name: "a lone surrogate escape", raw: `"Jo\ud83d"`, stored: "Jo\uFFFD"},
	{name: "a lone low surrogate escape", raw: `"\ude00 Maria"`, stored: "\uFFFD Maria"},
	{name: "a raw Latin-1 byte", raw: "\"Jos\xe9\"", stored: "Jos\uFFFD"},
	{name: "the NUL character", raw: `"Maria\u0000"`, stored: "Maria\uFFFD"},
	{name: "a number beyond numeric", raw: `1e400000`, isNumber: true, stored: "1e400000"},
	{name: "a number too small for numeric", raw: `-1.5e-16384`, isNumber: true, stored: "-1.5e-16384"},
}

// withGroupCommit returns the webhooks' store of s as the API runs it: the
// deliveries through a running group commit (db.Receiver; groups of
// several requests are db's TestReceiveStoresPayloadsJSONBRefusesAsSent's).
func withGroupCommit(t *testing.T, s *db.Store) api.WebhookStore {
	t.Helper()
	r, err := db.NewReceiver(s, groupcommit.Options{Writers: 2, MaxRows: 64, QueueRows: 4096, WriteTimeout: 10 * time.Second})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- r.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-ran)
	})
	return r
}

// unstorableIDs hands out distinct end_to_end_ids.
var unstorableIDs atomic.Int64

func nextID() string { return fmt.Sprintf("E98765432202611291200%011d", unstorableIDs.Add(1)) }

func TestWebhookInformationalContentJSONBRefusesIsStored(t *testing.T) {
	for _, mode := range []string{"store", "group commit"} {
		t.Run(mode, func(t *testing.T) {
			ctx := context.Background()
			s := dbtest.New(t)
			stores := api.StoresOf(s)
			if mode == "group commit" {
				stores.Webhooks = withGroupCommit(t, s)
			}
			srv := newServerOf(t, stores, func(d *api.Deps) { d.Sagas = sagasOf(nil, refund.NewStore(s), nil) })
			payloadMember := func(id, member string) (string, bool) {
				t.Helper()
				var v *string
				err := s.Pool().QueryRow(ctx, `SELECT payload #>> $2::text[] FROM inbox_messages WHERE end_to_end_id = $1`,
					id, strings.Split(member, ".")).Scan(&v)
				require.NoError(t, err, "the PIX %s is stored", id)
				if v == nil {
					return "", false
				}
				return *v, true
			}
			for _, tc := range unstorableCases {
				t.Run(tc.name, func(t *testing.T) {
					// The native route: in payer.name (a number goes in a
					// member of its own: payer.name must be a string).
					id := nextID()
					field, member := "payer", "payer.name"
					raw := `{"name":` + tc.raw + `}`
					if tc.isNumber {
						field, member, raw = "score", "score", tc.raw
					}
					body := strings.Replace(nativeWebhookBody(t, field, raw), validID, id, 1)
					r := do(t, http.MethodPost, srv.URL+"/webhooks/pix", "application/json", body)
					require.Equal(t, http.StatusAccepted, r.status, "%v", r.body)
					require.Equal(t, false, r.body["duplicate"])
					got, ok := payloadMember(id, member)
					require.True(t, ok)
					require.Equal(t, tc.stored, got)
					// The PSP's redelivery is a duplicate, not a mismatch.
					r = do(t, http.MethodPost, srv.URL+"/webhooks/pix", "application/json", body)
					require.Equal(t, http.StatusAccepted, r.status, "%v", r.body)
					require.Equal(t, true, r.body["duplicate"])

					// The API Pix route: alone, then in a batch between
					// good items.
					field = "infoPagador"
					if tc.isNumber {
						field = "score"
					}
					alone := nextID()
					r = do(t, http.MethodPost, srv.URL+apiPixPath, "application/json", batch(apiPixItem(t, alone, map[string]string{field: tc.raw})))
					require.Equal(t, http.StatusOK, r.status, "%v", r.body)
					got, _ = payloadMember(alone, field)
					require.Equal(t, tc.stored, got)

					good1, bad, good2 := nextID(), nextID(), nextID()
					b := batch(apiPixItem(t, good1, nil), apiPixItem(t, bad, map[string]string{field: tc.raw}), apiPixItem(t, good2, nil))
					r = do(t, http.MethodPost, srv.URL+apiPixPath, "application/json", b)
					require.Equal(t, http.StatusOK, r.status, "%v", r.body)
					for _, id := range []string{good1, bad, good2} {
						_, err := s.GetCredit(ctx, id)
						require.NoError(t, err, "%s stored", id)
					}
					got, _ = payloadMember(bad, field)
					require.Equal(t, tc.stored, got)
					r = do(t, http.MethodPost, srv.URL+apiPixPath, "application/json", b)
					require.Equal(t, http.StatusOK, r.status, "%v", r.body)
					for _, item := range r.body["pix"].([]any) {
						require.Equal(t, true, item.(map[string]any)["duplicate"], "the redelivery of the batch is absorbed")
					}

					// In a devolucoes (the refund notice, a jsonb column
					// of its own).
					noticed := nextID()
					notice := `{"id":"D1","rtrId":"D12345678202009091221abcdf098765","valor":"1.00","status":"EM_PROCESSAMENTO","motivo":` + tc.raw + `}`
					r = do(t, http.MethodPost, srv.URL+apiPixPath, "application/json", batch(apiPixItem(t, noticed, map[string]string{"devolucoes": notice})))
					require.Equal(t, http.StatusOK, r.status, "%v", r.body)
					var motivo string
					require.NoError(t, s.Pool().QueryRow(ctx, `SELECT refund_notice->>'motivo' FROM inbox_messages WHERE end_to_end_id = $1`, noticed).Scan(&motivo))
					require.Equal(t, tc.stored, motivo)
				})
			}
		})
	}
}

// A redelivery is compared on the money fields only: another informational
// content (sanitised or not) is the same PIX, and another amount is the
// payload mismatch it always was, never a 5xx, whatever else it carries.
func TestWebhookRedeliveryIsComparedOnTheMoneyFields(t *testing.T) {
	s := dbtest.New(t)
	srv := newServer(t, s)
	id := nextID()
	body := func(amount, name string) string {
		return `{"end_to_end_id":"` + id + `","account_id":"acc-1","amount_cents":` + amount + `,"payer":{"name":` + name + `}}`
	}
	r := do(t, http.MethodPost, srv.URL+"/webhooks/pix", "application/json", body("100", `"Jo\ud83d"`))
	require.Equal(t, http.StatusAccepted, r.status, "%v", r.body)
	for _, name := range []string{`"Jo\ud83d\ude00"`, "\"Jo\xe9\"", `"Jo\u0000"`, `"Jo\ufffd"`} {
		r = do(t, http.MethodPost, srv.URL+"/webhooks/pix", "application/json", body("100", name))
		require.Equal(t, http.StatusAccepted, r.status, "%s: %v", name, r.body)
		require.Equal(t, true, r.body["duplicate"], name)
	}
	r = do(t, http.MethodPost, srv.URL+"/webhooks/pix", "application/json", body("101", "\"Jo\xe9\""))
	require.Equal(t, http.StatusUnprocessableEntity, r.status, "%v", r.body)
	code, _ := errorOf(t, r)
	require.Equal(t, api.CodePayloadMismatch, code)

	b := func(valor, info string) string {
		return batch(apiPixItem(t, nextIDFixed, map[string]string{"valor": valor, "infoPagador": info}))
	}
	r = do(t, http.MethodPost, srv.URL+apiPixPath, "application/json", b(`"1.00"`, `"\ud83d"`))
	require.Equal(t, http.StatusOK, r.status, "%v", r.body)
	r = do(t, http.MethodPost, srv.URL+apiPixPath, "application/json", b(`"1.00"`, `"ok"`))
	require.Equal(t, http.StatusOK, r.status, "%v", r.body)
	r = do(t, http.MethodPost, srv.URL+apiPixPath, "application/json", b(`"2.00"`, `"\ud83d"`))
	require.Equal(t, http.StatusUnprocessableEntity, r.status, "%v", r.body)
}

// nextIDFixed is the API Pix PIX of TestWebhookRedeliveryIsComparedOnTheMoneyFields.
const nextIDFixed = "E9876543220261129129999999999999"
