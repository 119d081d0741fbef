package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/google/uuid"
)

// refund is a devolução (the return of a PIX received) as the API answers
// it: POST /pix/credits/{end_to_end_id}/refunds, GET /pix/refunds/{id},
// and the items of a credit's "refunds".
type refund struct {
	ID                string  `json:"id"`
	EndToEndID        string  `json:"end_to_end_id"`
	RtrID             *string `json:"rtr_id"`
	AccountID         string  `json:"account_id"`
	AmountCents       int64   `json:"amount_cents"`
	Reason            *string `json:"reason"`
	Status            string  `json:"status"`
	BalanceAfterCents int64   `json:"balance_after_cents"`
	FailureReason     *string `json:"failure_reason"`
	CreatedAt         string  `json:"created_at"`
	RequestedAt       *string `json:"requested_at"`
	ReturnedAt        *string `json:"returned_at"`
	ReversedAt        *string `json:"reversed_at"`
	WorkflowID        string  `json:"workflow_id"`
	TemporalUIURL     string  `json:"temporal_ui_url"`
}

// final reports whether the refund can no longer change.
func (r refund) final() bool { return r.Status == "returned" || r.Status == "reversed" }

// refundAnswer is an answer of the refund routes: a refund, or an error.
type refundAnswer struct {
	apiError
	refund
}

var refundCommand = &command{
	name: "refund", args: "-e2e <end_to_end_id> -amount <centavos> [-reason TEXT] [-key UUID] [-account ID] [flags]",
	summary: "return (a devolução) all or part of a PIX received, as its account's customer",
	about: `Returns (a devolução) all or part of a PIX credited to one of the
customer's accounts: POST /pix/credits/{end_to_end_id}/refunds, as the
account's customer. The account is debited at once (status debited); the
saga pix-refund:<id> then asks the PSP to return the money (returned), or
credits it back if the PSP does not (reversed). Follow it with
pixctl refund-status -account <account> -wait 30s <id>.

The same -key again replays the first answer (refusals included) instead of
debiting twice. The token is the customer token (-token, $PIX_TOKEN), or
one the development issuer mints for the PIX's account (-account, or looked
up with the admin view of the PIX).
`,
	problem:  "the API refused the devolução (refund_exceeds_credit, pix_not_credited, insufficient_funds, ...: nothing was debited)",
	settings: customerSettings,
	define: func(fs *flag.FlagSet) runner {
		var o refundOptions
		fs.StringVar(&o.endToEndID, "e2e", "", "the end_to_end_id of the PIX received to return (required)")
		fs.Int64Var(&o.amount, "amount", 0, "how much to return, in centavos: 1000 is R$ 10,00 (required)")
		fs.StringVar(&o.reason, "reason", "", "why, at most 140 characters (the devolução's descricao)")
		fs.StringVar(&o.key, "key", "", "the Idempotency-Key, a UUID (default: one derived from -e2e, -amount and -reason, printed before\n"+
			"the request: the same command run again after a lost answer is the same request, never a second\n"+
			"devolução; a second devolução of the same amount and reason takes a new UUID here)")
		fs.StringVar(&o.account, "account", "", "the account the PIX was credited to, which a minted token acts for (default: looked up)")
		return func(ctx context.Context, inv *invocation, args []string) error {
			switch {
			case len(args) > 0:
				return usageErrorf("unexpected argument %q", args[0])
			case o.endToEndID == "":
				return usageErrorf("-e2e: name the PIX to return (its end_to_end_id)")
			case o.amount <= 0:
				return usageErrorf("-amount: how much to return, in centavos (1000 is R$ 10,00)")
			}
			c, err := inv.apiClient()
			if err != nil {
				return err
			}
			return refundPIX(ctx, c, o, inv.out, inv.errOut)
		}
	},
}

// refundOptions are pixctl refund's flags.
type refundOptions struct {
	endToEndID, reason, key, account string
	amount                           int64
}

// refundPIX is pixctl refund: it posts the devolução and prints it. The
// Idempotency-Key is told (on errOut) before the request goes: an answer
// lost after the API debited is asked again under it, never under a new
// one (a second debit).
func refundPIX(ctx context.Context, c *apiClient, o refundOptions, out, errOut io.Writer) error {
	if o.key == "" {
		o.key = refundKey(o)
	}
	fmt.Fprintf(errOut, "Idempotency-Key %s: after a lost answer run the same command again (or pass -key %s): the API answers what it did, nothing debited twice\n", o.key, o.key)
	acting, err := actingForCredit(ctx, c, o.account, o.endToEndID)
	if err != nil {
		return err
	}
	body := map[string]any{"amount_cents": o.amount}
	if o.reason != "" {
		body["reason"] = o.reason
	}
	var r refundAnswer
	status, h, err := acting.callWith(ctx, http.MethodPost, "/pix/credits/"+url.PathEscape(o.endToEndID)+"/refunds",
		http.Header{"Idempotency-Key": {o.key}}, body, &r)
	if err != nil {
		return fmt.Errorf("%w (the devolução may have been made: ask again with Idempotency-Key %s)", err, o.key)
	}
	if status >= 500 || status == http.StatusRequestTimeout || status == http.StatusTooManyRequests {
		if err := check(status, r.apiError, "refund "+o.endToEndID); err != nil {
			return fmt.Errorf("%w (ask again with Idempotency-Key %s)", err, o.key)
		}
	}
	replay := h.Get("X-Idempotent-Replay") == "true"
	if err := check(status, r.apiError, "refund "+o.endToEndID); err != nil {
		if replay {
			return fmt.Errorf("%w (the answer recorded on Idempotency-Key %s)", err, o.key)
		}
		return err
	}
	extra := [][2]string{{"idempotency_key", o.key}}
	if replay {
		extra = append(extra, [2]string{"replay", "true: the key's first answer; nothing debited again"})
	}
	if err := printRefund(out, r.refund, extra...); err != nil {
		return err
	}
	_, err = fmt.Fprintf(out, "\nfollow it: pixctl refund-status -account %s -wait 30s %s\n", r.AccountID, r.ID)
	return err
}

// refundKey is the Idempotency-Key of a devolução pixctl refund asks for
// without -key: a UUID (version 5) of what it asks (the PIX, the amount,
// the reason), so that the same command asked again is the same request.
func refundKey(o refundOptions) string {
	return uuid.NewSHA1(refundKeySpace, []byte(o.endToEndID+"\x00"+strconv.FormatInt(o.amount, 10)+"\x00"+o.reason)).String()
}

// refundKeySpace is the UUID namespace of refundKey's keys.
var refundKeySpace = uuid.MustParse("5b0a6b4e-6f0c-4c8e-9a51-1f6a3d2e9c07")

// actingForCredit is c acting for account, when one is named, else, when
// pixctl mints the token, for the account the PIX endToEndID was credited
// to (looked up with the admin view of the PIX); with PIX_TOKEN, c itself.
func actingForCredit(ctx context.Context, c *apiClient, account, endToEndID string) (*apiClient, error) {
	if account == "" && c.customerToken == "" && c.dev != nil {
		var v struct {
			apiError
			AccountID *string `json:"account_id"`
		}
		status, err := c.call(ctx, http.MethodGet, "/admin/pix/credits/"+url.PathEscape(endToEndID), nil, &v)
		if err != nil {
			return nil, fmt.Errorf("look up the account of PIX %s (or name it with -account): %w", endToEndID, err)
		}
		if err := check(status, v.apiError, "look up the account of PIX "+endToEndID+" (or name it with -account)"); err != nil {
			return nil, err
		}
		if v.AccountID == nil {
			return nil, fmt.Errorf("PIX %s has no account yet (its key or charge is not resolved): nothing to return", endToEndID)
		}
		account = *v.AccountID
	}
	if account == "" {
		return c, nil
	}
	return c.as(account), nil
}

var refundStatusCommand = &command{
	name: "refund-status", args: "[-account ID] [-wait 30s] [flags] <refund id>",
	summary: "one refund (devolução): where it stands, its workflow and its link",
	about: `Prints one refund (devolução): GET /pix/refunds/{id}, as the customer of
its account (-account, which a minted token acts for; or the customer
token). With -wait it asks again until the refund is final (returned or
reversed), for at most that long.
`,
	problem:  "no such refund of the account's (refund_not_found), or with -wait the refund is not final within it",
	settings: customerSettings, output: true,
	define: func(fs *flag.FlagSet) runner {
		account := fs.String("account", "", "the refund's account, which a minted token acts for")
		wait := fs.Duration("wait", 0, "ask again until the refund is final, for at most this long (0: ask once)")
		return func(ctx context.Context, inv *invocation, args []string) error {
			switch {
			case len(args) != 1:
				return usageErrorf("name one refund: its id (pixctl refund prints it)")
			case *wait < 0:
				return usageErrorf("-wait: %s is negative", *wait)
			}
			c, err := inv.apiClient()
			if err != nil {
				return err
			}
			if *account == "" && c.customerToken == "" && c.dev != nil {
				return usageErrorf("-account: name the refund's account (pixctl refund prints it): the token pixctl mints acts for the accounts it names; or set PIX_TOKEN")
			}
			if *account != "" {
				c = c.as(*account)
			}
			return refundStatus(ctx, c, args[0], *wait, inv.json, inv.out)
		}
	},
}

// refundStatus prints the refund id, once, or (within > 0) when it is
// final, for at most within.
func refundStatus(ctx context.Context, c *apiClient, id string, within time.Duration, asJSON bool, out io.Writer) error {
	r, raw, err := awaitRefund(ctx, c, id, within, 300*time.Millisecond)
	if err != nil {
		return err
	}
	if asJSON {
		err = printJSON(out, raw)
	} else {
		err = printRefund(out, r)
	}
	if err != nil {
		return err
	}
	if within > 0 && !r.final() {
		return fmt.Errorf("refund %s is still %s after %s; its saga: %s", r.ID, r.Status, within, r.TemporalUIURL)
	}
	return nil
}

// getRefund reads one refund as the customer c acts for; raw is the API's
// answer.
func getRefund(ctx context.Context, c *apiClient, id string) (r refund, raw json.RawMessage, err error) {
	raw, err = c.read(ctx, "/pix/refunds/"+url.PathEscape(id), "refund "+id, &r)
	return r, raw, err
}

// awaitRefund reads the refund id until it is final, for at most within
// (0: once), every interval; it returns the last answer, final or not.
func awaitRefund(ctx context.Context, c *apiClient, id string, within, every time.Duration) (refund, json.RawMessage, error) {
	deadline := time.Now().Add(within)
	for {
		r, raw, err := getRefund(ctx, c, id)
		if err != nil || r.final() || !time.Now().Add(every).Before(deadline) {
			return r, raw, err
		}
		select {
		case <-ctx.Done():
			return r, raw, ctx.Err()
		case <-time.After(every):
		}
	}
}

// printRefund prints one refund, a row per field, then extra rows.
func printRefund(out io.Writer, r refund, extra ...[2]string) error {
	tw := tabwriter.NewWriter(out, 2, 4, 2, ' ', 0)
	row := func(k string, val any) { fmt.Fprintf(tw, "%s\t%v\n", k, val) }
	row("refund", r.ID)
	row("end_to_end_id", r.EndToEndID)
	row("account", r.AccountID)
	row("amount", brl(r.AmountCents))
	row("reason", deref(r.Reason))
	row("status", r.Status)
	row("balance_after", brl(r.BalanceAfterCents))
	row("rtr_id", deref(r.RtrID))
	row("failure_reason", deref(r.FailureReason))
	row("created_at", r.CreatedAt)
	row("requested_at", deref(r.RequestedAt))
	row("returned_at", deref(r.ReturnedAt))
	row("reversed_at", deref(r.ReversedAt))
	row("workflow", r.WorkflowID)
	row("temporal_ui", r.TemporalUIURL)
	for _, e := range extra {
		row(e[0], e[1])
	}
	return tw.Flush()
}

// printRefunds prints a PIX's refunds as a table (pixctl show): what each
// returned, where it stands and its saga.
func printRefunds(out io.Writer, refunds []refund) error {
	tw := tabwriter.NewWriter(out, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "REFUND\tAMOUNT\tSTATUS\tCREATED_AT\tRTR_ID\tREASON\tWORKFLOW")
	for _, r := range refunds {
		reason := deref(r.Reason)
		if r.FailureReason != nil {
			reason += " (not made: " + *r.FailureReason + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.ID, brl(r.AmountCents), r.Status, r.CreatedAt, deref(r.RtrID), reason, r.WorkflowID)
	}
	return tw.Flush()
}

// refundedCents is what a PIX's refunds hold against its credit: all but
// the reversed ones (their money came back).
func refundedCents(refunds []refund) int64 {
	var sum int64
	for _, r := range refunds {
		if r.Status != "reversed" {
			sum += r.AmountCents
		}
	}
	return sum
}

// The demo's devolução: a PIX to Maria's key, through the PSP.
const (
	demoRefundAccount = "acc-0001"
	demoRefundPixKey  = "maria@example.com"
)

// demoRefund has a PIX received through the PSP partly returned (a
// devolução) and waits, for at most within, for its saga to end it; a
// second devolução, beyond what is left of the PIX, is refused. It returns
// the aggregates whose events the demo shows, and how many they have.
func demoRefund(ctx context.Context, c, psp *apiClient, run string, within time.Duration, out io.Writer, say func(string, ...any)) ([]string, int, error) {
	e2e := demoID(run, 6)
	received := map[string]any{
		"endToEndId": e2e, "valor": "200.00", "horario": time.Now().UTC().Format(time.RFC3339),
		"chave": demoRefundPixKey, "infoPagador": "pixctl demo",
	}
	say("\n10. Maria receives R$ 200,00 through the PSP (API Pix, to her key %s)", demoRefundPixKey)
	webhooks, err := demoReceiveThroughPSP(ctx, c, psp, e2e, received, within, say)
	if err != nil {
		return nil, 0, err
	}

	maria := c.as(demoRefundAccount)
	post := func(amount int64, reason string) (int, refundAnswer, error) {
		body := map[string]any{"amount_cents": amount}
		if reason != "" {
			body["reason"] = reason
		}
		var r refundAnswer
		status, _, err := maria.callWith(ctx, http.MethodPost, "/pix/credits/"+e2e+"/refunds",
			http.Header{"Idempotency-Key": {newKey()}}, body, &r)
		return status, r, err
	}
	say("11. Maria returns R$ 50,00 of it (a devolução): her account is debited at once")
	status, first, err := post(5_000, "cobrado em duplicidade")
	if err != nil {
		return nil, 0, err
	}
	if err := check(status, first.apiError, "refund "+e2e); err != nil {
		return nil, 0, err
	}
	say("   POST /pix/credits/%s/refunds -> %d refund %s status=%s balance_after=%s", e2e, status, first.ID, first.Status, brl(first.BalanceAfterCents))

	say("12. She asks to return R$ 160,00 more: only R$ 150,00 of the PIX is left to return")
	status, second, err := post(16_000, "")
	if err != nil {
		return nil, 0, err
	}
	switch {
	case second.Error != nil:
		say("   POST /pix/credits/%s/refunds -> %d %s (nothing debited)", e2e, status, second.Error.Code)
	default:
		return nil, 0, fmt.Errorf("a devolução beyond the credit was not refused: %d refund %s", status, second.ID)
	}

	say("13. Waiting (at most %s) for the saga %s to have the PSP return the money...", within, first.WorkflowID)
	final, _, err := awaitRefund(ctx, maria, first.ID, within, 300*time.Millisecond)
	if err != nil {
		return nil, 0, err
	}
	fmt.Fprintln(out, "\nDevolução")
	if err := printRefund(out, final); err != nil {
		return nil, 0, err
	}
	if !final.final() {
		return nil, 0, fmt.Errorf("refund %s is still %s after %s: see its saga %s in the Temporal UI: %s",
			final.ID, final.Status, within, final.WorkflowID, final.TemporalUIURL)
	}
	if webhooks {
		say("The PSP's webhook announced the outcome; the saga took it as a wake-up and read the PSP's record of the devolução before ending it %s.", final.Status)
	} else {
		say("The saga polled the PSP's record of the devolução until it ended it %s.", final.Status)
	}
	// The credit's pix.credit.settled; the refund's pix.refund.debited and
	// pix.refund.returned (or reversed).
	return []string{e2e, final.ID}, 3, nil
}

// demoReceiveThroughPSP has the PSP simulator notify the API of a PIX
// received (POST /sim/pix: its webhook, signed, to the API Pix route) and
// waits for the PIX to be credited; webhooks tells whether the simulator
// sends them. A simulator without a webhook URL (or whose webhook did not
// arrive in half of within) leaves it to the demo, which delivers the same
// API Pix notification itself, as the PSP would: a second delivery is
// absorbed as a duplicate.
func demoReceiveThroughPSP(ctx context.Context, c, psp *apiClient, e2e string, received map[string]any, within time.Duration,
	say func(string, ...any)) (webhooks bool, err error) {
	var sim struct {
		Webhook string `json:"webhook"`
	}
	status, err := psp.call(ctx, http.MethodPost, "/sim/pix", received, &sim)
	if err != nil {
		return false, fmt.Errorf("tell the PSP simulator at %s of the PIX received: %w", psp.base, err)
	}
	webhooks = status == http.StatusAccepted && sim.Webhook == "queued"
	if webhooks {
		say("   POST %s/sim/pix -> %d: the simulator delivers it, as its webhook, to POST /webhooks/api-pix/pix", psp.base, status)
		if ok, err := awaitCredit(ctx, c, e2e, within/2); err != nil || ok {
			return webhooks, err
		}
		say("   its webhook did not arrive within %s (the simulator's log says why: .data/pspsim.log under make run)", within/2)
	} else {
		say("   POST %s/sim/pix -> %d webhook=%q: the simulator sends no webhooks (PSP_SIM_WEBHOOK_URL)", psp.base, status, sim.Webhook)
	}
	var ans struct {
		apiError
	}
	status, err = c.call(ctx, http.MethodPost, "/webhooks/api-pix/pix", map[string]any{"pix": []any{received}}, &ans)
	if err != nil {
		return webhooks, err
	}
	if err := check(status, ans.apiError, "deliver PIX "+e2e); err != nil {
		return webhooks, err
	}
	say("   the demo delivers it itself: POST /webhooks/api-pix/pix -> %d", status)
	ok, err := awaitCredit(ctx, c, e2e, within)
	if err == nil && !ok {
		err = fmt.Errorf("PIX %s not credited within %s: pixctl show %s", e2e, within, e2e)
	}
	return webhooks, err
}

// awaitCredit waits, for at most within, for the PIX to be credited (done),
// as the operator's view shows it. A PIX that failed is an error.
func awaitCredit(ctx context.Context, c *apiClient, e2e string, within time.Duration) (bool, error) {
	deadline := time.Now().Add(within)
	for {
		var cr struct {
			apiError
			credit
		}
		status, err := c.call(ctx, http.MethodGet, "/admin/pix/credits/"+url.PathEscape(e2e), nil, &cr)
		switch {
		case err != nil:
			return false, err
		case status == http.StatusNotFound:
			// Not delivered yet.
		case status != http.StatusOK:
			return false, check(status, cr.apiError, "read PIX "+e2e)
		case cr.Status == "done":
			return true, nil
		case cr.Status == "failed":
			return false, fmt.Errorf("PIX %s failed: %s", e2e, deref(cr.LastError))
		}
		if time.Now().After(deadline) {
			return false, nil
		}
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}
