//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/pixbank/pix/api"
	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/internal/config"
	"github.com/pixbank/pix/internal/dict"
	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/internal/psp"
	"github.com/pixbank/pix/internal/tooling/dictsim"
	"github.com/pixbank/pix/internal/tooling/pspsim"
	"github.com/pixbank/pix/internal/tooling/testpki"
	"github.com/pixbank/pix/saga/catchup"
	"github.com/pixbank/pix/saga/med"
	"github.com/pixbank/pix/saga/refund"
	"github.com/pixbank/pix/saga/transfer"
)

// The service with the production settings, end to end, against a PSP
// that speaks the API Pix as the Central Bank's specification says: our
// PSP client authenticated by OAuth 2.0 client credentials over mutual
// TLS (the simulator's API and token endpoint require our client
// certificate), WEBHOOK_SIGNATURES_REQUIRED=true, and the PSP's webhooks
// unsigned, authenticated by its client certificate alone (listed in
// WEBHOOK_MTLS_PSPS) on the webhooks' own mutual-TLS listener. Only PIX
// with a txid are notified ("Somente Pix associados a um txid serão
// notificados"); the others are found by the catch-up.

// The production PSP's names: its API's path, our OAuth client, the
// PSP's name in WEBHOOK_MTLS_PSPS and its webhook certificate's CN.
const (
	prodAPIBasePath = "/api/v2"
	prodClientID    = "pix-bank-e2e"
	prodPSPName     = "psp-e2e"
	prodWebhookCN   = "webhooks.psp-e2e.example"
)

// productionPSP is what newProductionStack sets up: two certificate
// authorities (the PSP's, which issues the simulator's server certificate
// and its webhooks' client certificate; the bank's, which issues our PSP
// client certificate and our webhook listener's), the simulator served
// over mutual TLS with OAuth 2.0, the service's webhook listener, and MED
// with the DICT: the DICT simulator over mutual TLS, every write of ours
// signed and every answer of its signed (dictsim.NewTestServer).
type productionPSP struct {
	// tokenLifetime is the simulator's tokens' (0: pspsim's default).
	tokenLifetime time.Duration

	// Set by start.
	pspCA, bankCA testpki.Authority
	// webhooks is the service's webhooks' listener (WEBHOOK_HTTP_ADDR),
	// webhooksURL its base, https://127.0.0.1:port.
	webhooks    net.Listener
	webhooksURL string
	// simLog holds the simulator's request lines (JSON), one per request.
	simLog *syncBuffer
	// dict is the DICT the worker's MED saga and lister reach.
	dict *dictsim.TestServer
}

// newProductionStack runs the service with the production settings of
// prod against a simulator that requires them. The catch-up's Schedule is
// paused (its runs are the test's: runCatchUp), so that no run of it
// stores a PIX before the webhook the test waits for.
func newProductionStack(t *testing.T, prod *productionPSP, tune func(*config.Config)) *stack {
	t.Helper()
	if testing.Short() {
		t.Skip("integration tier: a whole stack (run without -short)")
	}
	s := startStack(t, shared, prod, tune)
	h := s.catchUpSchedule()
	require.Eventually(t, func() bool {
		_, err := h.Describe(context.Background())
		return err == nil
	}, 30*time.Second, 50*time.Millisecond, "the worker creates the catch-up's Schedule")
	require.NoError(t, h.Pause(context.Background(), client.SchedulePauseOptions{Note: "e2e: the test runs the catch-up"}))
	return s
}

// start makes the certificates, serves the simulator with OAuth 2.0 and
// mutual TLS until the test ends, binds the webhook listener, and sets
// cfg's PSP and webhook settings as production's, read through the
// configuration's own variables; settings are the sagas' own.
func (p *productionPSP) start(t *testing.T, cfg *config.Config, settings map[string]string, clock *simClock) *pspsim.Simulator {
	t.Helper()
	dir := t.TempDir()
	p.pspCA = testpki.NewAuthority(t, "e2e PSP CA")
	p.bankCA = testpki.NewAuthority(t, "e2e bank CA")
	pspCAFile := testpki.WriteFile(t, dir, "psp-ca.pem", p.pspCA.PEM)
	simServer := keyPair(t, p.pspCA, "psp-e2e.example", x509.ExtKeyUsageServerAuth)
	simWebhooks := keyPair(t, p.pspCA, prodWebhookCN, x509.ExtKeyUsageClientAuth)
	ourCert, ourKey := p.bankCA.Issue(t, "pix-bank-e2e", x509.ExtKeyUsageClientAuth)
	listenerCert, listenerKey := p.bankCA.Issue(t, "webhooks.pix-bank-e2e.example", x509.ExtKeyUsageServerAuth)
	secret := "e2e-client-secret-" + randomSuffix()

	var err error
	p.webhooks, err = net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.webhooks.Close() }) // closed already once served
	p.webhooksURL = "https://" + p.webhooks.Addr().String()
	pspLn, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	pspURL := "https://" + pspLn.Addr().String()

	p.simLog = &syncBuffer{}
	sim := pspsim.New(pspsim.Options{
		Logger:             slog.New(slog.NewJSONHandler(p.simLog, nil)),
		Now:                clock.now,
		DefaultSettleAfter: 200 * time.Millisecond,
		WebhookURL:         p.webhooksURL + "/webhooks/api-pix/pix",
		WebhookTLS:         &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{simWebhooks}, RootCAs: pool(t, p.bankCA)},
		WebhooksTxidOnly:   true,
		OAuth:              &pspsim.OAuthOptions{Clients: map[string]string{prodClientID: secret}, TokenLifetime: p.tokenLifetime},
		TLS: &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{simServer},
			ClientCAs: pool(t, p.bankCA), ClientAuth: tls.RequireAndVerifyClientCert},
		APIBasePath:    prodAPIBasePath,
		RefundsNeedPix: true,
	})
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- sim.Serve(ctx, pspLn) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-served)
		if t.Failed() {
			t.Logf("psp simulator requests:\n%s", p.simLog.String())
		}
	})

	prod, err := config.FromLookup(config.LookupIn(map[string]string{
		"PSP_URL":                     pspURL + prodAPIBasePath,
		"PSP_OAUTH_TOKEN_URL":         pspURL + pspsim.TokenPath,
		"PSP_CLIENT_ID":               prodClientID,
		"PSP_CLIENT_SECRET_FILE":      testpki.WriteFile(t, dir, "psp-client-secret", []byte(secret+"\n")),
		"PSP_TLS_CERT_FILE":           testpki.WriteFile(t, dir, "psp-client.pem", ourCert),
		"PSP_TLS_KEY_FILE":            testpki.WriteFile(t, dir, "psp-client-key.pem", ourKey),
		"PSP_CA_FILE":                 pspCAFile,
		"WEBHOOK_SIGNATURES_REQUIRED": "true",
		"WEBHOOK_MTLS_PSPS":           prodPSPName + "=" + prodWebhookCN,
		// The PSP at PSP_URL by its name there: with the stack's signing
		// PSP beside it, two PSPs are configured and PSP_NAME is required.
		"PSP_NAME":           prodPSPName,
		"WEBHOOK_HTTP_ADDR":  p.webhooks.Addr().String(),
		"TLS_LISTENERS":      "webhooks",
		"TLS_CERT_FILE":      testpki.WriteFile(t, dir, "webhooks.pem", listenerCert),
		"TLS_KEY_FILE":       testpki.WriteFile(t, dir, "webhooks-key.pem", listenerKey),
		"TLS_CLIENT_CA_FILE": pspCAFile,
	}))
	require.NoError(t, err, "the production settings")
	require.True(t, prod.PSP().Authenticated())
	cfg.PSPURL, cfg.PSPOAuthTokenURL, cfg.PSPClientID = prod.PSPURL, prod.PSPOAuthTokenURL, prod.PSPClientID
	cfg.PSPClientSecret, cfg.PSPClientSecretFile, cfg.PSPOAuthScopes = prod.PSPClientSecret, prod.PSPClientSecretFile, prod.PSPOAuthScopes
	cfg.PSPTLSCertFile, cfg.PSPTLSKeyFile, cfg.PSPCAFile = prod.PSPTLSCertFile, prod.PSPTLSKeyFile, prod.PSPCAFile
	cfg.WebhookSignaturesRequired, cfg.WebhookMTLSPSPs, cfg.PSPName = prod.WebhookSignaturesRequired, prod.WebhookMTLSPSPs, prod.PSPName
	cfg.WebhookHTTPAddr, cfg.TLSWebhooksOnly = prod.WebhookHTTPAddr, prod.TLSWebhooksOnly
	cfg.TLSCertFile, cfg.TLSKeyFile, cfg.TLSClientCAFile = prod.TLSCertFile, prod.TLSKeyFile, prod.TLSClientCAFile
	// The catch-up's Schedule exists, its runs are the test's (paused
	// at once by newProductionStack, never on its own).
	settings["PSP_CATCHUP_INTERVAL"] = "1h"

	// MED with the DICT, as production configures it (BANK_ISPB is the
	// simulator's bank, the default's): the bank's certificate of the
	// mutual TLS signs the writes too, the DICT's signing certificate
	// verifies the answers; its lists lag 5 s, as the specification allows,
	// and are listed every second.
	p.dict = dictsim.NewTestServer(t, dictsim.Options{ListLag: dict.ListLag})
	dc := p.dict.Config
	require.Equal(t, dictsim.TestBank, cfg.BankISPB)
	delete(settings, "MED_DICT_DISABLED")
	maps.Copy(settings, map[string]string{
		"MED_DICT_URL": dc.BaseURL, "MED_DICT_CERT_FILE": dc.CertFile, "MED_DICT_KEY_FILE": dc.KeyFile,
		"MED_DICT_CA_FILE": dc.CAFile, "MED_DICT_VERIFY_CERT_FILE": dc.DICTCertFile,
		"MED_DICT_LIST_INTERVAL": "1s", "MED_DICT_LIST_GRACE": dict.ListLag.String(), "MED_DICT_LIST_OVERLAP": "1m",
	})
	require.NoError(t, med.CheckSettings(config.LookupIn(settings)), "MED's production settings")
	return sim
}

// keyPair is a certificate for name the authority issues, with its key.
func keyPair(t *testing.T, a testpki.Authority, name string, usage x509.ExtKeyUsage) tls.Certificate {
	t.Helper()
	certPEM, keyPEM := a.Issue(t, name, usage)
	c, err := tls.X509KeyPair(certPEM, keyPEM)
	require.NoError(t, err)
	return c
}

// pool trusts the authority alone.
func pool(t *testing.T, a testpki.Authority) *x509.CertPool {
	t.Helper()
	p := x509.NewCertPool()
	require.True(t, p.AppendCertsFromPEM(a.PEM))
	return p
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// simRequests counts the simulator's requests whose log line has every
// attribute of want (its path, status, outcome...).
func (p *productionPSP) simRequests(t *testing.T, want map[string]any) int {
	t.Helper()
	n := 0
	for _, line := range strings.Split(strings.TrimSpace(p.simLog.String()), "\n") {
		if line == "" {
			continue
		}
		var got map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &got), "%s", line)
		match := got["msg"] == "psp simulator request"
		for k, v := range want {
			match = match && fmt.Sprint(got[k]) == fmt.Sprint(v)
		}
		if match {
			n++
		}
	}
	return n
}

// tokensIssued counts the tokens the simulator's token endpoint issued.
func (p *productionPSP) tokensIssued(t *testing.T) int {
	return p.simRequests(t, map[string]any{"path": pspsim.TokenPath, "outcome": "token_issued"})
}

// receive tells the simulator it received a PIX (an API Pix Pix object),
// as its control route does: listed in GET /pix, and notified as the
// simulator's webhook behaviours say.
func (s *stack) receive(pixObject map[string]any) {
	s.t.Helper()
	body, err := json.Marshal(pixObject)
	require.NoError(s.t, err)
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodPost, "/sim/pix", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	s.psp.ControlHandler().ServeHTTP(rec, req)
	require.Equal(s.t, http.StatusAccepted, rec.Code, "%s", rec.Body)
}

// inboxPSP is the psp of the PIX's inbox row: the PSP its first delivery
// came from.
func (s *stack) inboxPSP(e2e string) string {
	s.t.Helper()
	var psp *string
	require.NoError(s.t, s.store.Pool().QueryRow(context.Background(),
		`SELECT psp FROM inbox_messages WHERE end_to_end_id = $1`, e2e).Scan(&psp))
	require.NotNil(s.t, psp, "the inbox row of %s names its PSP", e2e)
	return *psp
}

// waitCredited waits until the PIX, which no request of the test stored
// (the PSP's webhook or the catch-up did), is credited.
func (s *stack) waitCredited(e2e string) {
	s.t.Helper()
	require.Eventually(s.t, func() bool { return s.inboxRows(e2e) == 1 }, 30*time.Second, 20*time.Millisecond, "PIX %s never stored", e2e)
	s.waitStatus(e2e, pix.StatusDone, 30*time.Second)
}

func (s *stack) inboxRows(e2e string) int {
	s.t.Helper()
	var n int
	require.NoError(s.t, s.store.Pool().QueryRow(context.Background(),
		`SELECT count(*) FROM inbox_messages WHERE end_to_end_id = $1`, e2e).Scan(&n))
	return n
}

// chargeOf opens a charge of amount to account, and returns its txid.
func (s *stack) chargeOf(account string, amount int64) string {
	s.t.Helper()
	txid := "e2eprod" + randomSuffix() + "0000000000000"
	_, err := s.store.CreateCharge(context.Background(), db.NewCharge{TxID: txid, AccountID: account, AmountExpectedCents: amount})
	require.NoError(s.t, err)
	return txid
}

// keyOf registers a Pix key of account, and returns it.
func (s *stack) keyOf(account string) string {
	s.t.Helper()
	key := "k" + randomSuffix() + "@example.com"
	_, err := s.store.CreatePixKey(context.Background(), db.NewPixKey{Key: key, KeyType: "email", AccountID: account})
	require.NoError(s.t, err)
	return key
}

// horarioAgo is a PIX's horario d ago: the catch-up lists the PSP's
// record up to PSP_CATCHUP_GRACE (1m) before now.
func horarioAgo(d time.Duration) string {
	return time.Now().Add(-d).UTC().Format(time.RFC3339Nano)
}

func (s *stack) catchUpSchedule() client.ScheduleHandle {
	return s.client().ScheduleClient().GetHandle(context.Background(), catchup.ScheduleID(s.cfg.TaskQueues().Base))
}

// runCatchUp triggers a run of the catch-up's Schedule (a scheduled run:
// from the covered window's end, moving it) and returns its result.
func (s *stack) runCatchUp() catchup.Result {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	h := s.catchUpSchedule()
	// Runs are told apart by run id: a Schedule names its run by the
	// trigger's second, so two triggers within a second share a workflow id.
	seen := map[string]bool{}
	d, err := h.Describe(ctx)
	require.NoError(s.t, err)
	for _, a := range d.Info.RecentActions {
		seen[a.StartWorkflowResult.FirstExecutionRunID] = true
	}
	require.NoError(s.t, h.Trigger(ctx, client.ScheduleTriggerOptions{}))
	var run *client.ScheduleWorkflowExecution
	require.Eventually(s.t, func() bool {
		d, err := h.Describe(ctx)
		require.NoError(s.t, err)
		for _, a := range d.Info.RecentActions {
			if !seen[a.StartWorkflowResult.FirstExecutionRunID] {
				run = a.StartWorkflowResult
				return true
			}
		}
		return false
	}, 30*time.Second, 50*time.Millisecond, "the triggered run starts")
	var res catchup.Result
	require.NoError(s.t, s.client().GetWorkflow(ctx, run.WorkflowID, run.FirstExecutionRunID).Get(ctx, &res))
	return res
}

// webhookClient posts to the service's webhook listener over mutual TLS
// with cert (none: nil), trusting the bank's CA.
func (p *productionPSP) webhookClient(t *testing.T, cert *tls.Certificate) *http.Client {
	t.Helper()
	tc := &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: pool(t, p.bankCA)}
	if cert != nil {
		tc.Certificates = []tls.Certificate{*cert}
	}
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: tc}}
	t.Cleanup(hc.CloseIdleConnections)
	return hc
}

// postWebhook posts body, unsigned, to the API Pix webhook route as hc's
// certificate's holder, and returns the status and the answer.
func (p *productionPSP) postWebhook(t *testing.T, hc *http.Client, body any) (int, map[string]any) {
	t.Helper()
	raw, err := json.Marshal(body)
	require.NoError(t, err)
	res, err := hc.Post(p.webhooksURL+"/webhooks/api-pix/pix", "application/json", bytes.NewReader(raw))
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m), "%s", b)
	return res.StatusCode, m
}

// The four cases of issue 27's acceptance, and the refusal of a
// certificate that is not listed, on one stack with the production
// settings.
func TestProductionPSP(t *testing.T) {
	prod := &productionPSP{}
	s := newProductionStack(t, prod, nil)
	ctx := context.Background()

	// A PIX of a charge, notified by the PSP's webhook (unsigned, over
	// mutual TLS with its listed certificate), is credited; the inbox row
	// names the PSP the certificate is listed for.
	t.Run("unsigned mutual-TLS webhook credited", func(t *testing.T) {
		s.openAccount("acc-prod-hook", 1_000)
		txid := s.chargeOf("acc-prod-hook", 12_345)
		e2e := pixID()
		s.receive(map[string]any{"endToEndId": e2e, "txid": txid, "chave": s.keyOf("acc-prod-hook"),
			"valor": "123.45", "horario": horarioAgo(time.Second), "infoPagador": "pedido 1"})
		s.waitCredited(e2e)
		require.Equal(t, prodPSPName, s.inboxPSP(e2e), "stored on the listed certificate's word, unsigned")
		require.EqualValues(t, 1_000+12_345, s.balance("acc-prod-hook"))
		require.Equal(t, 1, s.creditRows(e2e))
		status, err := s.store.ChargeStatus(ctx, txid)
		require.NoError(t, err)
		require.Equal(t, "CONCLUIDA", status)
		s.assertBooksBalance()
	})

	// PIX the PSP never notifies: one without a txid (the API Pix notifies
	// only PIX of a txid), one of a charge to a key whose webhooks the
	// PSP never sends. A run of the catch-up lists them from the PSP's
	// own record (GET /pix, OAuth 2.0 over mutual TLS) and credits them;
	// a second run lists them again and changes nothing.
	t.Run("never notified, credited once by the catch-up", func(t *testing.T) {
		s.openAccount("acc-prod-catchup", 500)
		s.openAccount("acc-prod-charge", 0)
		noTxid, neverSent := pixID(), pixID()
		silentKey := s.keyOf("acc-prod-charge")
		require.NoError(t, s.psp.SetWebhookBehavior(silentKey, pspsim.WebhookBehavior{Mode: pspsim.WebhookModeNever}))
		s.receive(map[string]any{"endToEndId": noTxid, "chave": s.keyOf("acc-prod-catchup"), "valor": "20.00", "horario": horarioAgo(5 * time.Minute)})
		s.receive(map[string]any{"endToEndId": neverSent, "txid": s.chargeOf("acc-prod-charge", 3_050), "chave": silentKey,
			"valor": "30.50", "horario": horarioAgo(5 * time.Minute)})
		foundBefore := s.total("pix_psp_catchup_found_total")

		first := s.runCatchUp()
		require.Equal(t, 2, first.Counts.New, "the two PIX never notified: %+v", first)
		require.Zero(t, first.Counts.Mismatched)
		require.Zero(t, first.Counts.Refused)
		require.True(t, first.Advanced, "the covered window moves once every page is stored")
		for _, e2e := range []string{noTxid, neverSent} {
			s.waitStatus(e2e, pix.StatusDone, 30*time.Second)
			require.Equal(t, catchup.PSPName, s.inboxPSP(e2e), "stored by the catch-up: no webhook came")
		}
		require.EqualValues(t, 500+2_000, s.balance("acc-prod-catchup"))
		require.EqualValues(t, 3_050, s.balance("acc-prod-charge"))
		require.Equal(t, 2.0, s.total("pix_psp_catchup_found_total")-foundBefore)

		second := s.runCatchUp()
		require.Zero(t, second.Counts.New, "listed again: %+v", second)
		require.GreaterOrEqual(t, second.Counts.Duplicate, 2)
		require.Zero(t, second.Counts.Mismatched)
		for _, e2e := range []string{noTxid, neverSent} {
			require.Equal(t, 1, s.creditRows(e2e), "credited once")
			require.Equal(t, 1, s.inboxRows(e2e))
			require.Equal(t, pix.StatusDone, s.status(e2e))
		}
		require.EqualValues(t, 500+2_000, s.balance("acc-prod-catchup"), "the balance moved once")
		require.EqualValues(t, 3_050, s.balance("acc-prod-charge"))
		require.Equal(t, 2.0, s.total("pix_psp_catchup_found_total")-foundBefore)
		s.assertBooksBalance()
	})

	// The PSP refuses the devolução with the spec's problem
	// (400 PixDevolucaoInvalida) and makes nothing: the refund is reversed
	// once, the debit credited back to the centavo.
	t.Run("devolução refused with PixDevolucaoInvalida reversed once", func(t *testing.T) {
		s.openAccount("acc-prod-refund", 700)
		e2e := pixID()
		s.receive(map[string]any{"endToEndId": e2e, "txid": s.chargeOf("acc-prod-refund", 8_000), "chave": s.keyOf("acc-prod-refund"),
			"valor": "80.00", "horario": horarioAgo(time.Second)})
		s.waitCredited(e2e)
		require.EqualValues(t, 8_700, s.balance("acc-prod-refund"))
		require.NoError(t, s.psp.SetRefundBehavior(e2e, pspsim.RefundBehavior{Mode: pspsim.RefundModeRefuse}))

		r := s.requestRefund(uuid.NewString(), e2e, 8_000, "", "")
		require.Equal(t, http.StatusCreated, r.Status, "%s", r.Raw)
		id := r.Body["id"].(string)
		require.EqualValues(t, 700, s.balance("acc-prod-refund"))
		got := s.waitRefund(id, pix.RefundReversed, time.Duration(s.refundRun().RefusalQuietPeriod)+60*time.Second)
		require.NotNil(t, got.FailureReason)
		require.Contains(t, *got.FailureReason, "PixDevolucaoInvalida")
		require.Equal(t, refund.Output{Status: pix.RefundReversed, Reason: *got.FailureReason}, s.refundOutcome(id))
		refused := 0
		for _, b := range s.psp.RefundBehaviors() {
			if b.EndToEndID == e2e {
				refused = b.Requests
			}
		}
		require.Positive(t, refused, "the PSP was asked, with our token, and refused")
		require.Empty(t, s.psp.Refunds(e2e), "nothing returned at the PSP")

		require.EqualValues(t, 8_700, s.balance("acc-prod-refund"), "the debit credited back exactly")
		n, cents := s.reversal(id)
		require.Equal(t, 1, n, "reversed once")
		require.EqualValues(t, 8_000, cents)
		s.requireRefundEvents(id, pix.RefundReversed)
		require.Zero(t, s.heldRefunds(e2e))
		s.assertReconciled()
	})

	// MED end to end with the production settings: the payer's
	// participant reports at the DICT a PIX we credited (the PSP's
	// webhook, over mutual TLS); the lister finds it (listInfractionReport,
	// mutual TLS, the DICT's answers signed), the saga holds the PIX's
	// amount and acknowledges (a signed write: the simulator refuses an
	// unsigned or wrongly signed one, 400 RequestSignatureInvalid, and our
	// client any answer the DICT did not sign), an operator agrees, the
	// saga closes the report AGREED; the payer's participant asks the
	// money back, the saga returns it through the devolução saga at the
	// PSP (OAuth 2.0 over mutual TLS) and closes the request
	// TOTALLY_ACCEPTED with the devolução's rtrId. The books end where
	// they began, the hold captured by the devolução.
	t.Run("MED report agreed, returned through the devolução, closed at the DICT", func(t *testing.T) {
		s.openAccount("acc-prod-med", 1_000)
		e2e := pixID()
		s.receive(map[string]any{"endToEndId": e2e, "txid": s.chargeOf("acc-prod-med", 5_000), "chave": s.keyOf("acc-prod-med"),
			"valor": "50.00", "horario": horarioAgo(time.Second)})
		s.waitCredited(e2e)
		at, err := prod.dict.OpenReport(dictsim.NewReport{EndToEndID: e2e, Amount: 5_000, Debited: dictsim.TestPayer,
			Credited: dictsim.TestBank, Details: "golpe do falso parente"})
		require.NoError(t, err)
		reports := med.NewStore(s.store)
		id := uuid.MustParse(at.ID)
		ours := func() med.Report {
			r, err := reports.Get(ctx, id)
			require.NoError(t, err)
			return r
		}
		waitOurs := func(status string, within time.Duration) med.Report {
			t.Helper()
			require.Eventually(t, func() bool {
				r, err := reports.Get(ctx, id)
				return err == nil && r.Status == status
			}, within, 100*time.Millisecond, "report %s never %s in our books", id, status)
			return ours()
		}

		// Listed within the lists' lag and the lister's interval, held,
		// acknowledged at the DICT.
		r := waitOurs("acknowledged", time.Minute)
		at, _ = prod.dict.Report(at.ID)
		require.Equal(t, dict.ReportAcknowledged, at.Status)
		require.EqualValues(t, 5_000, r.HeldCents, "the PIX's amount held")
		account, err := s.store.GetAccount(ctx, "acc-prod-med")
		require.NoError(t, err)
		require.EqualValues(t, [3]int64{6_000, 5_000, 1_000}, [3]int64{account.BalanceCents, account.HeldCents, account.AvailableCents},
			"balance, held, available")

		res := s.call(http.MethodPost, "/pix/med/reports/"+at.ID+"/analysis", http.Header{"Idempotency-Key": {uuid.NewString()}},
			map[string]any{"result": "AGREED", "details": "conta usada para receber golpes"}, e2eAdminToken)
		require.Equal(t, http.StatusCreated, res.Status, "%s", res.Raw)
		r = waitOurs("awaiting_refund_request", time.Minute)
		at, _ = prod.dict.Report(at.ID)
		require.Equal(t, dict.ReportClosed, at.Status)
		require.Equal(t, dict.Agreed, at.AnalysisResult)
		require.EqualValues(t, 5_000, r.HeldCents, "still held until the request")

		request, err := prod.dict.OpenRefund(dictsim.NewRefund{InfractionReportID: at.ID})
		require.NoError(t, err)
		r = waitOurs("ended", 2*time.Minute)
		require.Equal(t, "returned", *r.EndCause)
		devolucoes := s.psp.Refunds(e2e)
		require.Len(t, devolucoes, 1, "one devolução at the PSP")
		d := devolucoes[0]
		s.waitRefund(d.ID, pix.RefundReturned, 30*time.Second)
		require.EqualValues(t, 5_000, d.AmountCents)
		require.Equal(t, psp.RefundReturned, d.Status)
		require.NotEmpty(t, d.RtrID)

		request, ok := prod.dict.Refund(request.ID)
		require.True(t, ok)
		require.Equal(t, dict.RefundClosed, request.Status)
		require.Equal(t, dict.TotallyAccepted, request.AnalysisResult)
		require.Equal(t, d.RtrID, request.RefundTransactionID, "the request closed with the devolução's rtrId")
		require.EqualValues(t, 5_000, r.ReturnedCents)
		require.Equal(t, d.RtrID, *r.RefundClosedRtrID)
		calls := prod.dict.Calls()
		require.Equal(t, 1, calls["closeInfractionReport"], "one close of the report")
		require.Equal(t, 1, calls["closeRefund"], "one close of the request")

		account, err = s.store.GetAccount(ctx, "acc-prod-med")
		require.NoError(t, err)
		require.EqualValues(t, [3]int64{1_000, 0, 1_000}, [3]int64{account.BalanceCents, account.HeldCents, account.AvailableCents},
			"the PIX returned, the hold captured by the devolução: balance, held, available")
		s.assertReconciled()
		s.assertBooksBalance()
	})

	// A certificate the trusted CA issued, for a PSP that is not listed:
	// its unsigned webhook is refused and nothing is stored. The same
	// body with the listed certificate is taken: the refusal is the
	// certificate's.
	t.Run("unlisted certificate refused", func(t *testing.T) {
		s.openAccount("acc-prod-unlisted", 0)
		e2e := pixID()
		body := map[string]any{"pix": []map[string]any{{"endToEndId": e2e, "chave": s.keyOf("acc-prod-unlisted"),
			"valor": "5.00", "horario": horarioAgo(time.Second)}}}
		stranger := keyPair(t, prod.pspCA, "webhooks.another-psp.example", x509.ExtKeyUsageClientAuth)
		status, answer := prod.postWebhook(t, prod.webhookClient(t, &stranger), body)
		require.Equal(t, http.StatusUnauthorized, status, "%v", answer)
		require.Equal(t, api.CodeClientCertRequired, answer["error"].(map[string]any)["code"])
		require.Zero(t, s.inboxRows(e2e), "nothing stored")
		require.Zero(t, s.creditRows(e2e))
		require.EqualValues(t, 0, s.balance("acc-prod-unlisted"))

		listed := keyPair(t, prod.pspCA, prodWebhookCN, x509.ExtKeyUsageClientAuth)
		status, answer = prod.postWebhook(t, prod.webhookClient(t, &listed), body)
		require.Equal(t, http.StatusOK, status, "%v", answer)
		s.waitStatus(e2e, pix.StatusDone, 30*time.Second)
		require.Equal(t, prodPSPName, s.inboxPSP(e2e))
		require.EqualValues(t, 500, s.balance("acc-prod-unlisted"))
		s.assertBooksBalance()
	})
}

// A token that expires in the middle of a transfer's saga is renewed
// without a failed step: the PSP's clock moves past the token's lifetime
// (and past the transfer's settlement) while the saga polls with the
// token our client still holds; the PSP answers 401 invalid_token, the
// client fetches a new token and asks again, and the saga sees only the
// settlement. No activity attempt failed but for "not settled yet",
// nothing was counted for attention, and the PSP issued a second token.
func TestProductionPSPTokenRenewedMidSaga(t *testing.T) {
	const lifetime = 2 * time.Minute // our client renews 30 s before: far beyond the test
	prod := &productionPSP{tokenLifetime: lifetime}
	s := newProductionStack(t, prod, nil)
	s.openAccount("acc-prod-token", 100_000)
	require.NoError(t, s.psp.SetBehavior("slow@example.com", pspsim.Behavior{Mode: pspsim.ModeAccept, SettleAfter: lifetime + 30*time.Second}))
	attentionBefore := s.total("pix_psp_attention_total")

	r := s.sendPix(uuid.NewString(), "acc-prod-token", 25_000, "slow@example.com")
	require.Equal(t, http.StatusCreated, r.Status, "%v", r.Body)
	id := r.Body["id"].(string)
	tr, err := transfer.NewStore(s.store).GetTransfer(context.Background(), uuid.MustParse(id))
	require.NoError(t, err)
	// Submitted, then polled while pending, with the first token.
	require.Eventually(t, func() bool {
		return prod.simRequests(t, map[string]any{"path": prodAPIBasePath + "/transfers/" + tr.EndToEndID, "status": 200}) >= 1
	}, 30*time.Second, 20*time.Millisecond, "the saga polls the pending transfer")
	require.Equal(t, 1, prod.tokensIssued(t), "one token so far, shared by the calls")
	s.waitTransfer(id, pix.TransferSubmitted, 30*time.Second)

	// The token expires (and the transfer settles) at the PSP.
	s.pspClock.advance(lifetime + time.Minute)
	s.waitTransfer(id, pix.TransferSettled, 30*time.Second)

	require.Equal(t, 1, prod.simRequests(t, map[string]any{"path": prodAPIBasePath + "/transfers/" + tr.EndToEndID,
		"status": 401, "outcome": "invalid_token"}), "the expired token was refused once, mid-saga")
	require.Equal(t, 2, prod.tokensIssued(t), "a second token, fetched after the 401")
	require.Equal(t, attentionBefore, s.total("pix_psp_attention_total"), "no refusal counted for attention")
	h := s.history(transfer.WorkflowID(id))
	require.Zero(t, countEvents(h, ofType(enumspb.EVENT_TYPE_ACTIVITY_TASK_FAILED)), "no activity failed")
	for _, e := range h {
		if f := e.GetActivityTaskStartedEventAttributes().GetLastFailure(); f != nil {
			require.Equal(t, transfer.ErrTypeSettlementPending, f.GetApplicationFailureInfo().GetType(),
				"an attempt failed for another reason than a pending settlement: %s", f.GetMessage())
		}
	}
	at, ok := s.psp.Transfer(tr.EndToEndID)
	require.True(t, ok)
	require.Equal(t, 1, at.Received, "submitted once")
	require.EqualValues(t, 100_000-25_000, s.balance("acc-prod-token"))
	s.assertBooksBalance()
}
