package pspsimtests_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/internal/psp"
	"github.com/pixbank/pix/internal/tooling/pspsim"
)

// A devolução of a PIX the simulator received is checked against it: the
// PIX's valor with the earlier devoluções, and the 90-day window; refused
// 400 PixDevolucaoInvalida, nothing made.
func TestRefundOfAPixReceivedIsCheckedAgainstIt(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.receive(t, receivedAt(1, e.clock.Now().Add(-time.Hour), "")) // valor 10.00

	_, err := e.client.RequestRefund(t.Context(), refundReq(1, "dev1", 600))
	require.NoError(t, err)
	code, body, err := putRefund(t, refundURL(e.url, 1, "dev2"), `{"valor":"4.01"}`)
	require.NoError(t, err)
	require.Equal(t, http.StatusBadRequest, code, "%s", body)
	p := problem(t, body)
	require.Equal(t, pspsim.ProblemPixDevolucaoInvalida, p.name)
	require.JSONEq(t, `[{"razao":"excede o valor do pix","propriedade":"valor","valor":"4.01"}]`, string(p.violacoes))
	_, ok := e.sim.Refund(pixID(1), "dev2")
	require.False(t, ok, "nothing made")
	_, err = e.client.RequestRefund(t.Context(), refundReq(1, "dev2", 400))
	require.NoError(t, err, "up to the valor itself")

	// A devolução NAO_REALIZADO gives its valor back to the PIX.
	e.receive(t, receivedAt(2, e.clock.Now().Add(-time.Hour), ""))
	e.setRefundBehavior(t, 2, `{"mode":"reject"}`)
	_, err = e.client.RequestRefund(t.Context(), refundReq(2, "dev1", 1000))
	require.NoError(t, err)
	e.setRefundBehavior(t, 2, `{"mode":"return"}`)
	_, err = e.client.RequestRefund(t.Context(), refundReq(2, "dev2", 1000))
	require.NoError(t, err)

	// 90 days after the PIX, and not a moment more.
	e.receive(t, receivedAt(3, e.clock.Now().Add(-pspsim.RefundWindow), ""))
	_, err = e.client.RequestRefund(t.Context(), refundReq(3, "dev1", 100))
	require.NoError(t, err)
	e.receive(t, receivedAt(4, e.clock.Now().Add(-pspsim.RefundWindow-time.Millisecond), ""))
	code, body, err = putRefund(t, refundURL(e.url, 4, "dev1"), `{"valor":"1.00"}`)
	require.NoError(t, err)
	require.Equal(t, http.StatusBadRequest, code)
	require.Equal(t, pspsim.ProblemPixDevolucaoInvalida, problem(t, body).name)
	require.Empty(t, e.sim.Refunds(pixID(4)))

	// Through the client: a refusal of the request, never a result.
	_, err = e.client.RequestRefund(t.Context(), refundReq(4, "dev1", 100))
	requestError(t, err, http.StatusBadRequest)
}

// With RefundsNeedPix, a devolução of a PIX the simulator never received
// is 404 NaoEncontrado; without (the default), it is made.
func TestRefundOfAnUnknownPix(t *testing.T) {
	t.Parallel()
	strict := serve(t, pspsim.Options{RefundsNeedPix: true})
	code, body, err := putRefund(t, refundURL(strict.url, 1, "dev1"), `{"valor":"1.00"}`)
	require.NoError(t, err)
	require.Equal(t, http.StatusNotFound, code, "%s", body)
	require.Equal(t, pspsim.ProblemNaoEncontrado, problem(t, body).name)
	require.Empty(t, strict.sim.Refunds(pixID(1)))
	strict.receive(t, receivedAt(1, strict.clock.Now(), ""))
	code, _, err = putRefund(t, refundURL(strict.url, 1, "dev1"), `{"valor":"1.00"}`)
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, code)

	e := setup(t)
	code, _, err = putRefund(t, refundURL(e.url, 1, "dev1"), `{"valor":"1.00"}`)
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, code)
}

// refuse_retry: the devolução is made, and a PUT repeating it (a retry
// after a lost answer) is refused 400 PixDevolucaoInvalida; the
// devolução stands and GET reads it.
func TestRefundRetryRefused(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.setRefundBehavior(t, 1, `{"mode":"refuse_retry"}`)
	first, err := e.client.RequestRefund(t.Context(), refundReq(1, "dev1", 100))
	require.NoError(t, err)
	for range 2 {
		code, body, err := putRefund(t, refundURL(e.url, 1, "dev1"), `{"valor":"1.00","natureza":"ORIGINAL"}`)
		require.NoError(t, err)
		require.Equal(t, http.StatusBadRequest, code, "%s", body)
		p := problem(t, body)
		require.Equal(t, pspsim.ProblemPixDevolucaoInvalida, p.name)
		require.JSONEq(t, `[{"razao":"id já utilizado","propriedade":"id","valor":"dev1"}]`, string(p.violacoes))
	}
	e.clock.Advance(pspsim.DefaultSettleAfter)
	r, err := e.client.RefundStatus(t.Context(), pixID(1), "dev1")
	require.NoError(t, err)
	require.Equal(t, first.RtrID, r.RtrID)
	require.Equal(t, psp.RefundReturned, r.Status)
	require.Len(t, e.sim.Refunds(pixID(1)), 1)
	require.Equal(t, 3, e.refund(t, 1, "dev1").Received)

	// Without the behaviour, the same retry answers the devolução held.
	e.sim.DeleteRefundBehavior(pixID(1))
	code, _, err := putRefund(t, refundURL(e.url, 1, "dev1"), `{"valor":"1.00"}`)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, code)
}

// The PSP's outages and refusals of our credentials are the API Pix's:
// 503 ServicoIndisponivel, 401 invalid_token.
func TestRefundOutagesAreTheSpecs(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.setRefundBehavior(t, 1, `{"mode":"fail","times":1}`)
	code, body, err := putRefund(t, refundURL(e.url, 1, "dev1"), `{"valor":"1.00"}`)
	require.NoError(t, err)
	require.Equal(t, http.StatusServiceUnavailable, code)
	require.Equal(t, pspsim.ProblemServicoIndisponivel, problem(t, body).name)
}
