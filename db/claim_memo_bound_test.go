package db_test

// Regression, found by the attack review of issue 27 (item 6): an API Pix webhook the decoders accept
// and the inbox stores (200) whose run can never start: the memo the
// dispatcher starts it with (ClaimDue: the payload's payer and infoPagador)
// is past the Temporal server's default limit.memoSize.error (2 MiB,
// go.temporal.io/server common/dynamicconfig MemoSizeLimitError; the start
// is refused with InvalidArgument "Memo size exceeds limit." and the
// dispatcher defers and retries it for ever). The PIX is never credited.
// Needs PostgreSQL.

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/converter"

	"github.com/pixbank/pix/db/dbtest"
	"github.com/pixbank/pix/internal/notification"
)

// temporalMemoSizeLimitError is the server's default limit.memoSize.error.
const temporalMemoSizeLimitError = 2 * 1024 * 1024

func TestTheCreditMemoOfAHugePayerMessageIsBounded(t *testing.T) {
	for _, tc := range []struct{ name, fill string }{
		// ASCII: json.Marshal (the SDK's JSON payload converter) writes
		// each '<' as \u003c, six bytes.
		{"html characters", "<"},
		// Storable makes each byte that is not UTF-8 a U+FFFD, three bytes.
		{"latin-1 bytes", "\xe9"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			s := dbtest.New(t)
			head := `{"pix":[{"endToEndId":"E12345678202612011200000000MEM01","chave":"k@example.com","valor":"1.00",` +
				`"horario":"2026-11-29T12:00:00Z","infoPagador":"`
			tail := `"}]}`
			body := head + strings.Repeat(tc.fill, (notification.MaxAPIPixBodyBytes-len(head)-len(tail))/len(tc.fill)) + tail
			require.LessOrEqual(t, len(body), notification.MaxAPIPixBodyBytes)
			ns, err := notification.DecodeAPIPix([]byte(body))
			require.NoError(t, err, "the webhook is accepted")
			_, err = s.ReceiveBatch(ctx, ns)
			require.NoError(t, err, "and stored: the PSP is answered 200")

			due, err := s.InboxQueue().Claim(ctx, 10, time.Minute)
			require.NoError(t, err)
			require.Len(t, due, 1)
			size := 0
			for _, v := range due[0].Memo {
				p, err := converter.GetDefaultDataConverter().ToPayload(v)
				require.NoError(t, err)
				size += len(p.GetData())
			}
			require.LessOrEqual(t, size, temporalMemoSizeLimitError,
				"the credit's start carries a memo of %d bytes: Temporal refuses it (Memo size exceeds limit) on every dispatch; the PIX is stored and never credited", size)
		})
	}
}
