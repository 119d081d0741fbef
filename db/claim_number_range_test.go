package db_test

// Regression, found by the attack review of issue 27 (item 6): a number Storable keeps as a number
// (at most 1000 characters, exponent at most 1000) that float64 can't hold
// (1e400), in an informational field the dispatcher reads back (the payer,
// infoPagador: ClaimDue's memo, scanned by pgx with encoding/json into
// map[string]any). The webhook is accepted and stored; then every claim
// that includes its row fails, and the rows claimed with it (their due
// time pushed by the lease in the same UPDATE) are never dispatched
// either: they come due again together with it. Needs PostgreSQL.

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/db/dbtest"
	"github.com/pixbank/pix/internal/notification"
	"github.com/pixbank/pix/internal/pix"
)

func TestANumberBeyondFloat64DoesNotBlockTheInboxDispatch(t *testing.T) {
	for _, tc := range []struct{ name, body string }{
		{"native payer member", `{"end_to_end_id":"E12345678202612011200000000FLT01","account_id":"acc-1","amount_cents":100,` +
			`"payer":{"name":"Joana","score":1e400}}`},
		{"api pix infoPagador", `{"pix":[{"endToEndId":"E12345678202612011200000000FLT01","chave":"k@example.com","valor":"1.00",` +
			`"horario":"2026-11-29T12:00:00Z","infoPagador":-1e309}]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			s := dbtest.New(t)
			// Nine good PIX received first, then the poisoned one.
			for i := 1; i <= 9; i++ {
				_, err := s.Receive(ctx, dbtest.Notice(fmt.Sprintf("E12345678202612011200000000GOOD%d", i), "acc-1", 100))
				require.NoError(t, err)
			}
			var ns []pix.Notification
			if tc.body[2] == 'e' {
				n, err := notification.DecodeNative([]byte(tc.body))
				require.NoError(t, err, "accepted")
				ns = []pix.Notification{n}
			} else {
				var err error
				ns, err = notification.DecodeAPIPix([]byte(tc.body))
				require.NoError(t, err, "accepted")
			}
			_, err := s.ReceiveBatch(ctx, ns)
			require.NoError(t, err, "stored: the PSP is answered 2xx")

			// The dispatcher's rounds: each claim fails, the lease having
			// pushed all ten rows' due time; they come due again together.
			var errs []error
			for range 3 {
				_, err := s.InboxQueue().Claim(ctx, 100, 20*time.Millisecond)
				errs = append(errs, err)
				time.Sleep(50 * time.Millisecond)
			}
			for i, err := range errs {
				if err != nil {
					t.Errorf("claim round %d of the ten due rows (nine of them good PIX) failed: %.160s", i+1, err)
				}
			}
		})
	}
}
