package refund

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestRefundReasonRefusesInvisibleFormatting(t *testing.T) {
	const e2e = "E1234567820261129120000000000001"
	for _, reason := range []string{"pago\u202eoãn", "a\u200db", "\ufeffx"} {
		_, err := decodeRequest(e2e, []byte(`{"amount_cents":1,"reason":"`+reason+`"}`))
		require.ErrorContains(t, err, "formatting character", "%q", reason)
	}
	r, err := decodeRequest(e2e, []byte(`{"amount_cents":1,"reason":"devolução, obrigado"}`))
	require.NoError(t, err)
	require.Equal(t, "devolução, obrigado", r.Reason)
}
