package notification_test

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/db/dbtest"
	"github.com/pixbank/pix/internal/notification"
	"github.com/pixbank/pix/internal/pix"
)

// FuzzStoreWhatTheDecodersAccept holds the webhooks' promise to a PSP:
// whatever it sends is stored, or refused with a 4xx; never a 5xx for its
// content. Each input goes through both decoders; what one accepts goes
// into the inbox through the store (PostgreSQL), and must be stored or
// refused as the PSP's fault (a payload mismatch of an earlier input's
// end_to_end_id). It needs PostgreSQL: skipped with -short or without one.
func FuzzStoreWhatTheDecodersAccept(f *testing.F) {
	if testing.Short() {
		f.Skip("needs PostgreSQL")
	}
	if !databaseAnswers() {
		f.Skip("no PostgreSQL at " + dbtest.BaseURL())
	}
	store := dbtest.New(f)
	if spec, err := os.ReadFile("testdata/api_pix_spec_example.json"); err == nil {
		f.Add(spec)
	}
	const native = `{"end_to_end_id":"E1234567820261129120000000000001","account_id":"acc-1","amount_cents":100,"payer":{"name":`
	const apiPix = `{"pix":[{"endToEndId":"E1234567820261129120000000000002","chave":"k@example.com","valor":"1.00","horario":"2026-11-29T12:00:00Z","infoPagador":`
	for _, v := range []string{`"Jo\ud83d"`, `"\ude00"`, "\"Jos\xe9\"", `"Jo\u0000"`, `1e400000`, `-1e-16384`, `"Maria"`} {
		f.Add([]byte(native + v + `}}`))
		f.Add([]byte(apiPix + v + `,"devolucoes":[{"id":"D1","motivo":` + v + `}]}]}`))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		ctx := context.Background()
		if n, err := notification.DecodeNative(body); err != nil {
			requireClientFault(t, "native decoder", body, err)
		} else {
			_, err := store.Receive(ctx, n)
			requireStoredOrClientFault(t, store, body, []pix.Notification{n}, err)
		}
		if ns, err := notification.DecodeAPIPix(body); err != nil {
			requireClientFault(t, "API Pix decoder", body, err)
		} else {
			_, err := store.ReceiveBatch(ctx, ns)
			requireStoredOrClientFault(t, store, body, ns, err)
		}
	})
}

// databaseAnswers reports whether the test database takes a connection.
func databaseAnswers() bool {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dbtest.BaseURL())
	if err != nil {
		return false
	}
	_ = conn.Close(ctx) //nolint:errcheck // only whether it answered matters
	return true
}

// requireClientFault fails t unless err is answered with a 4xx: a
// refusal of the request's content (400, or 413 for a batch too large),
// or a business refusal the API answers with a 4xx (pix.Kinds).
func requireClientFault(t *testing.T, what string, body []byte, err error) {
	t.Helper()
	var invalid *pix.ValidationError
	var tooLarge *notification.BatchTooLargeError
	if errors.As(err, &invalid) || errors.As(err, &tooLarge) {
		return
	}
	if k := pix.KindOf(err); k != nil && k.Refusal && k.Status >= 400 && k.Status < 500 {
		return
	}
	t.Fatalf("%s: %q answered %v: not a 4xx", what, body, err)
}

// requireStoredOrClientFault fails t unless ns, delivered with the answer
// err, were stored (each has its inbox row) or refused with a 4xx.
func requireStoredOrClientFault(t *testing.T, store *db.Store, body []byte, ns []pix.Notification, err error) {
	t.Helper()
	if err != nil {
		requireClientFault(t, "store", body, err)
		return
	}
	for _, n := range ns {
		var stored bool
		if err := store.Pool().QueryRow(context.Background(),
			`SELECT EXISTS (SELECT 1 FROM inbox_messages WHERE end_to_end_id = $1)`, n.EndToEndID).Scan(&stored); err != nil {
			t.Fatalf("read the inbox: %v", err)
		}
		if !stored {
			t.Fatalf("%q: %s answered stored, and has no inbox row", body, n.EndToEndID)
		}
	}
}
