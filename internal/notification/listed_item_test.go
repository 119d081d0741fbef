package notification_test

// The PSP catch-up decodes each listed PIX with DecodeAPIPixItem, which
// runs CheckJSON as the webhook route does: what the route refuses as
// ambiguous about money (a member sent twice: two readers may take two
// amounts) the catch-up refuses too (the attack review found it took the
// last copy's amount).

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/internal/notification"
)

func TestAListedItemIsCheckedAsAWebhookBodyIs(t *testing.T) {
	item := `{"endToEndId":"E12345678202612011200000000DUP01","chave":"k@example.com","valor":"1.00","valor":"9000.00","horario":"2026-11-29T12:00:00Z"}`
	_, err := notification.DecodeAPIPix([]byte(`{"pix":[` + item + `]}`))
	require.Error(t, err, "the webhook route refuses it")
	n, err := notification.DecodeAPIPixItem([]byte(item), "pix[0]")
	require.Error(t, err, "the catch-up stores it, credited %d centavos", n.AmountCents)
}
