package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/pixbank/pix/internal/tooling/devpki"
)

type webhook struct {
	EndToEndID  string         `json:"end_to_end_id"`
	AccountID   string         `json:"account_id"`
	AmountCents int64          `json:"amount_cents"`
	Payer       map[string]any `json:"payer,omitempty"`
	OccurredAt  string         `json:"occurred_at,omitempty"`
}

type receipt struct {
	EndToEndID string `json:"end_to_end_id"`
	Status     string `json:"status"`
	Duplicate  bool   `json:"duplicate"`
	Error      *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

type credit struct {
	EndToEndID    string  `json:"end_to_end_id"`
	AccountID     string  `json:"account_id"`
	AmountCents   int64   `json:"amount_cents"`
	Status        string  `json:"status"`
	Attempts      int     `json:"attempts"`
	Deliveries    int     `json:"deliveries"`
	LastError     *string `json:"last_error"`
	TemporalUIURL string  `json:"temporal_ui_url"`
}

type account struct {
	ID             string `json:"id"`
	OwnerName      string `json:"owner_name"`
	BalanceCents   int64  `json:"balance_cents"`
	HeldCents      int64  `json:"held_cents"`
	AvailableCents int64  `json:"available_cents"`
}

// demoID makes end_to_end_ids unique to this run of the demo.
func demoID(run string, n int) string {
	return fmt.Sprintf("E12345678%s%09d", run, n)
}

// demoRefundWait bounds each wait of the demo's devolução: for its PIX to
// be credited, and for its saga to end it.
const demoRefundWait = 30 * time.Second

func brl(cents int64) string { return fmt.Sprintf("R$ %d,%02d", cents/100, cents%100) }

// The demo's settings beside the API's: the PSP simulator it configures,
// and the webhook listener it posts its PIX to, as a PSP, with the client
// certificate make run's development PKI made for it (pixctl dev-pki).
var (
	pspControlURLSetting = setting{flag: "psp-control-url", env: "PSP_SIM_CONTROL_URL", def: "http://127.0.0.1:8091",
		usage: "the PSP simulator's control routes (behaviours, POST /sim/pix), which the demo configures: its control listener\n" +
			"(PSP_SIM_CONTROL_ADDR, as make run has it), or its API's URL when it has none"}
	webhookURLSetting = setting{flag: "webhook-url", env: "PIX_WEBHOOK_URL", def: "https://127.0.0.1:8443",
		usage: "the base URL of the API's webhook listener (WEBHOOK_HTTP_ADDR, mutual TLS under make run), which the demo posts\n" +
			"its PIX to as the PSP of the first secret of $WEBHOOK_SECRETS; http:// for one without TLS (the -api-url when the\n" +
			"webhooks share the API's listener)"}
	webhookCertSetting = setting{flag: "webhook-cert", env: "PIX_WEBHOOK_CERT_FILE", def: filepath.Join(devPKIDirSetting.def, devpki.DemoClientCertFile),
		usage: "the client certificate (PEM) presented to an https:// -webhook-url, listed in its WEBHOOK_MTLS_PSPS as that PSP's"}
	webhookKeySetting = setting{flag: "webhook-key", env: "PIX_WEBHOOK_KEY_FILE", def: filepath.Join(devPKIDirSetting.def, devpki.DemoClientKeyFile),
		usage: "the key (PEM) of -webhook-cert"}
	dictControlURLSetting = setting{flag: "dict-control-url", env: "DICT_SIM_CONTROL_URL", def: "http://127.0.0.1:8093",
		usage: "the DICT simulator's control routes (POST /sim/infraction-reports, POST /sim/refunds), which the demo's MED part\n" +
			"drives (DICT_SIM_CONTROL_ADDR, as make run has it); none answering there skips that part"}
	bankISPBSetting = setting{flag: "bank-ispb", env: "BANK_ISPB", def: "12345678",
		usage: "the bank's ISPB, the credited participant of the demo's infraction report (pixd's BANK_ISPB)"}
	webhookCASetting = setting{flag: "webhook-ca", env: "PIX_WEBHOOK_CA_FILE", def: filepath.Join(devPKIDirSetting.def, devpki.CAFile),
		usage: "the CA (PEM) of an https:// -webhook-url's server certificate"}
)

var demoCommand = &command{
	name: "demo", args: "[flags]",
	summary: "replay the scenario against a running service (make demo)",
	about: `Replays the scenario against a running service (make run): several PIX, a
redelivery, 20 concurrent copies of one PIX, a payload mismatch and a PIX
to an unknown account; outgoing PIX: a lost response retried, a refusal
replayed, a transfer the PSP rejects, refunded; a PIX received through the
PSP partly returned (a devolução), and a devolução beyond its credit
refused; a PIX the PSP never notifies, credited by the catch-up from the
PSP's own record; a cautionary block released, another returned; MED with
the DICT simulator (-dict-control-url): an infraction report held,
acknowledged, agreed and returned in two parts, the second filled by a later
credit. It waits for each to end and prints statuses, the events a consumer
of the broker received, and balances.

Its webhooks go to the webhook listener (-webhook-url), signed with the
first secret of $WEBHOOK_SECRETS (as the PSP it belongs to), and over
https:// with the client certificate that names that PSP (-webhook-cert;
make run lists it in WEBHOOK_MTLS_PSPS). Its customers are the demo accounts
(acc-0001 to acc-0004), each with a token of its own that the development
issuer mints ($PIX_TOKEN is not used); the admin calls carry the admin token.
`,
	problem: "a PIX, a transfer or the devolução did not end as the scenario expects within its wait, or the API refused a request",
	settings: []setting{apiURLSetting, adminTokenSetting, pspControlURLSetting, webhookURLSetting, webhookCertSetting, webhookKeySetting,
		webhookCASetting, natsURLSetting, devKeyDirSetting, dictControlURLSetting, bankISPBSetting},
	define: func(*flag.FlagSet) runner {
		return func(ctx context.Context, inv *invocation, args []string) error {
			if len(args) > 0 {
				return usageErrorf("unexpected argument %q", args[0])
			}
			c, err := inv.apiClient()
			if err != nil {
				return err
			}
			// The demo's customers are the demo accounts, each with a token of
			// its own from the development issuer: PIX_TOKEN names one caller.
			c.customerToken = ""
			if c.webhooks, err = webhookClient(inv.get(webhookURLSetting), c.signingKey,
				inv.get(webhookCertSetting), inv.get(webhookKeySetting), inv.get(webhookCASetting)); err != nil {
				return usageError(err)
			}
			return demo(ctx, c, &apiClient{base: strings.TrimRight(inv.get(pspControlURLSetting), "/")},
				&apiClient{base: strings.TrimRight(inv.get(dictControlURLSetting), "/")}, inv.get(bankISPBSetting), inv.get(natsURLSetting), inv.out)
		}
	},
}

// webhookClient is the client that posts the demo's webhooks to the API's
// webhook listener at base, signed with signingKey: over https://, with
// the client certificate in certFile (its key in keyFile), the listener's
// certificate verified against the CA in caFile; over http://, plainly.
func webhookClient(base string, signingKey []byte, certFile, keyFile, caFile string) (*apiClient, error) {
	u, err := url.Parse(base)
	switch {
	case err != nil:
		return nil, fmt.Errorf("-webhook-url %q: %w", base, err)
	case u.Scheme == "http":
		return &apiClient{base: strings.TrimRight(base, "/"), signingKey: signingKey}, nil
	case u.Scheme != "https":
		return nil, fmt.Errorf("-webhook-url %q: want http:// or https://", base)
	}
	// The files are make run's development PKI: missing, they were never
	// made (pixctl dev-pki makes them).
	const made = " (make run makes it: pixctl dev-pki)"
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("the demo's client certificate for %s (-webhook-cert, -webhook-key): %w%s", base, err, made)
	}
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("the CA of %s (-webhook-ca): %w%s", base, err, made)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("the CA of %s (-webhook-ca): %s holds no PEM certificate", base, caFile)
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}, RootCAs: roots}
	return &apiClient{base: strings.TrimRight(base, "/"), signingKey: signingKey, http: http.Client{Transport: transport}}, nil
}

func demo(ctx context.Context, c, psp, dict *apiClient, bankISPB, natsURL string, out io.Writer) error {
	// E + ISPB (8) + 14 digits unique to this run + a 9-digit sequence = 32.
	run := fmt.Sprintf("%014d", time.Now().UnixMilli()%1e14)
	accounts := []string{"acc-0001", "acc-0002", "acc-0003", "acc-0004"}
	before := map[string]int64{}
	for _, id := range accounts {
		var a account
		// Each account's customer asks for its own balance, with a token
		// that grants that account only.
		status, err := c.as(id).call(ctx, http.MethodGet, "/accounts/"+id, nil, &a)
		if err != nil {
			return err
		}
		if status != http.StatusOK {
			return fmt.Errorf("demo account %s not found (status %d): run the service with `make run`, which opens it", id, status)
		}
		before[id] = a.BalanceCents
	}

	say := func(format string, args ...any) { fmt.Fprintf(out, format+"\n", args...) }
	events, err := collectEvents(ctx, natsURL)
	if err != nil {
		return err
	}
	defer events.stop()
	pix, unknown, err := demoIncoming(ctx, c, run, say)
	if err != nil {
		return err
	}

	transfers, err := demoTransfers(ctx, c, psp, say)
	if err != nil {
		return err
	}

	final, err := demoCredits(ctx, c, pix, out, say)
	if err != nil {
		return err
	}
	if err := waitTransfers(ctx, c, transfers, out); err != nil {
		return err
	}

	refundAggregates, refundEvents, err := demoRefund(ctx, c, psp, run, demoRefundWait, out, say)
	if err != nil {
		return err
	}
	caughtUp, err := demoCatchUp(ctx, c, psp, run, demoCatchUpWait, say)
	if err != nil {
		return err
	}
	blocks, err := demoBlock(ctx, c, psp, run, demoBlockWait, say)
	if err != nil {
		return err
	}

	medAggregates, _, err := demoMED(ctx, c, psp, dict, bankISPB, run, demoMEDWait, say)
	if err != nil {
		return err
	}

	ids := append(append(append([]string{caughtUp}, refundAggregates...), blocks...), medAggregates...)
	for _, t := range transfers {
		ids = append(ids, t.ID)
	}
	// One per credit (settled or failed), per transfer its debit and its
	// settlement or refund, the devolução's, the caught-up credit's and
	// the blocks', MED's.
	want := len(pix) + 2*len(transfers) + refundEvents + 1 + demoBlockEvents
	if len(medAggregates) > 0 {
		want += demoMEDEvents
	}
	demoEvents(ctx, events, pix, ids, want, natsURL, say)

	say("\nBalances")
	tw := tabwriter.NewWriter(out, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ACCOUNT\tOWNER\tBEFORE\tNOW\tHELD\tAVAILABLE")
	for _, id := range accounts {
		var a account
		if _, err := c.as(id).call(ctx, http.MethodGet, "/accounts/"+id, nil, &a); err != nil {
			return err
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", a.ID, a.OwnerName, brl(before[id]), brl(a.BalanceCents), brl(a.HeldCents),
			brl(a.AvailableCents))
	}
	tw.Flush()
	if lost := final[unknown.EndToEndID]; lost.Status == "failed" {
		say("\nThe failed PIX in the Temporal UI: %s", lost.TemporalUIURL)
		say("Re-drive it once its account exists: curl -X POST -H \"Authorization: Bearer $ADMIN_TOKEN\" %s/admin/pix/credits/%s/retry", c.base, unknown.EndToEndID)
	}
	return nil
}

// demoIncoming posts the demo's incoming PIX as the PSP would (steps 1 to
// 5): three PIX, a redelivery, 20 copies of one at once, one tampered and
// one to an unknown account. It returns the PIX to wait for, the unknown
// account's among them.
func demoIncoming(ctx context.Context, c *apiClient, run string, say func(string, ...any)) (pix []webhook, unknown webhook, err error) {
	post := func(w webhook) (int, receipt, error) {
		var r receipt
		status, err := c.call(ctx, http.MethodPost, "/webhooks/pix", w, &r)
		return status, r, err
	}
	payer := map[string]any{"name": "Pagador Exemplo", "document": "12345678901", "ispb": "12345678"}
	now := time.Now().UTC().Format(time.RFC3339)

	say("1. Three PIX to three accounts")
	pix = []webhook{
		{demoID(run, 1), "acc-0001", 15000, payer, now},
		{demoID(run, 2), "acc-0002", 2550, payer, now},
		{demoID(run, 3), "acc-0003", 99, payer, now},
	}
	for _, w := range pix {
		status, r, err := post(w)
		if err != nil {
			return nil, webhook{}, err
		}
		say("   %s -> %d status=%s duplicate=%v", w.EndToEndID, status, r.Status, r.Duplicate)
	}

	say("2. The PSP redelivers the first one")
	status, r, err := post(pix[0])
	if err != nil {
		return nil, webhook{}, err
	}
	say("   %s -> %d status=%s duplicate=%v", pix[0].EndToEndID, status, r.Status, r.Duplicate)

	say("3. 20 copies of one PIX at the same instant")
	copies := webhook{demoID(run, 4), "acc-0004", 1000, payer, now}
	var wg sync.WaitGroup
	var mu sync.Mutex
	firsts, dups, failures := 0, 0, 0
	for range 20 {
		wg.Go(func() {
			status, r, err := post(copies)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil || status != http.StatusAccepted:
				failures++
			case r.Duplicate:
				dups++
			default:
				firsts++
			}
		})
	}
	wg.Wait()
	say("   %s -> first deliveries=%d duplicates=%d errors=%d", copies.EndToEndID, firsts, dups, failures)
	pix = append(pix, copies)

	say("4. The same end_to_end_id with another amount")
	tampered := pix[1]
	tampered.AmountCents++
	status, r, err = post(tampered)
	if err != nil {
		return nil, webhook{}, err
	}
	if r.Error != nil {
		say("   %s -> %d %s", tampered.EndToEndID, status, r.Error.Code)
	}

	say("5. A PIX to an account that does not exist")
	unknown = webhook{demoID(run, 5), "acc-unknown", 4200, payer, now}
	status, r, err = post(unknown)
	if err != nil {
		return nil, webhook{}, err
	}
	say("   %s -> %d status=%s (will be retried, then fail on its own)", unknown.EndToEndID, status, r.Status)
	pix = append(pix, unknown)
	return pix, unknown, nil
}

// demoCredits waits for every PIX of the demo to be done or failed (step
// 9), as an operator sees them, and prints them.
func demoCredits(ctx context.Context, c *apiClient, pix []webhook, out io.Writer, say func(string, ...any)) (map[string]credit, error) {
	say("9. Waiting for every PIX to be done or failed, and every transfer settled or refunded...")
	final := map[string]credit{}
	err := pollUntil(ctx, 3*time.Minute, 500*time.Millisecond, "PIX still pending", func() (int, error) {
		for _, w := range pix {
			// The operator's view (ADMIN_TOKEN): any PIX, with why its
			// last attempt failed.
			var cr struct {
				apiError
				credit
			}
			status, err := c.call(ctx, http.MethodGet, "/admin/pix/credits/"+w.EndToEndID, nil, &cr)
			if err != nil {
				return 0, err
			}
			if err := check(status, cr.apiError, "read PIX "+w.EndToEndID); err != nil {
				return 0, err
			}
			if cr.Status == "done" || cr.Status == "failed" {
				final[w.EndToEndID] = cr.credit
			}
		}
		return len(pix) - len(final), nil
	})
	if err != nil {
		return nil, err
	}

	say("\nPIX")
	tw := tabwriter.NewWriter(out, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "END_TO_END_ID\tACCOUNT\tAMOUNT\tSTATUS\tATTEMPTS\tDELIVERIES\tLAST_ERROR")
	for _, w := range pix {
		cr := final[w.EndToEndID]
		lastErr := ""
		if cr.LastError != nil {
			lastErr = *cr.LastError
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%s\n", cr.EndToEndID, cr.AccountID, brl(cr.AmountCents), cr.Status, cr.Attempts, cr.Deliveries, lastErr)
	}
	tw.Flush()
	return final, nil
}

// pollUntil calls check every interval until it reports nothing left, for
// at most within; what names what is left in the error.
func pollUntil(ctx context.Context, within, every time.Duration, what string, check func() (left int, err error)) error {
	deadline := time.Now().Add(within)
	for {
		left, err := check()
		if err != nil || left == 0 {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d %s after %s", left, what, within)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(every):
		}
	}
}

// demoEvents prints the events of the demo's aggregates (its PIX's and
// ids) a consumer of the broker received, waiting for want of them.
func demoEvents(ctx context.Context, events *eventCollector, pix []webhook, ids []string, want int, natsURL string, say func(string, ...any)) {
	say("\nEvents at a consumer of the broker (as `pixctl events tail` prints them)")
	ours := map[string]bool{}
	for _, w := range pix {
		ours[w.EndToEndID] = true
	}
	for _, id := range ids {
		ours[id] = true
	}
	got := events.of(ctx, ours, want, 15*time.Second)
	if len(got) == 0 {
		say("   none arrived from NATS at %s: is the worker's outbox relay on the same broker (NATS_URL)?", natsURL)
		if err := events.failure(); err != nil {
			say("   %v", err)
		}
	}
	for _, e := range got {
		say("   %-22s %s", e.Type, e.AggregateID)
	}
}
