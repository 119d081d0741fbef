package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"text/tabwriter"

	"github.com/google/uuid"

	"github.com/pixbank/pix/internal/cli"
)

// apiError is the error envelope of the API.
type apiError struct {
	Error *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// check turns a non-2xx answer into an error naming the API's code, whose
// exit status tells a refusal (1: the service answered no) from no answer
// (3: its credentials refused, the service failing or overloaded).
func check(status int, e apiError, what string) error {
	if status/100 == 2 {
		return nil
	}
	err := fmt.Errorf("%s: HTTP %d", what, status)
	if e.Error != nil {
		err = fmt.Errorf("%s: %d %s: %s", what, status, e.Error.Code, e.Error.Message)
	}
	switch {
	case status == http.StatusUnauthorized, status == http.StatusForbidden, status == http.StatusRequestTimeout,
		status == http.StatusTooManyRequests, status >= 500:
		return cli.WithStatus(cli.ExitUnavailable, err)
	case (status == http.StatusNotFound || status == http.StatusMethodNotAllowed) && !resourceRefusal(e):
		// No such route here (a router's own 404 or 405, or no envelope: a
		// gateway, another listener): the question never reached the
		// service, which is no answer about what was asked.
		return cli.WithStatus(cli.ExitUnavailable, fmt.Errorf("%w (no such route here: the wrong URL, or a listener without it?)", err))
	}
	return cli.WithStatus(cli.ExitProblem, err)
}

// resourceRefusal reports whether e is the service's answer about what was
// asked for (pix_credit_not_found, refund_not_found, ...), not its router's
// "no such route" (not_found, method_not_allowed) or no envelope at all.
func resourceRefusal(e apiError) bool {
	return e.Error != nil && e.Error.Code != "" && e.Error.Code != "not_found" && e.Error.Code != "method_not_allowed"
}

// unavailable marks err as no answer to trust (exit status 3).
func unavailable(err error) error { return cli.WithStatus(cli.ExitUnavailable, err) }

// read GETs path, checks the answer's status (what names the request in
// errors) and decodes it into v; it returns the answer as it came, for -o
// json.
func (c *apiClient) read(ctx context.Context, path, what string, v any) (json.RawMessage, error) {
	return c.ask(ctx, http.MethodGet, path, what, v)
}

// ask is read with another method, without a body (DELETE).
func (c *apiClient) ask(ctx context.Context, method, path, what string, v any) (json.RawMessage, error) {
	var raw json.RawMessage
	status, err := c.call(ctx, method, path, nil, &raw)
	if err != nil {
		return nil, err
	}
	var e apiError
	_ = json.Unmarshal(raw, &e)
	if err := check(status, e, what); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return nil, unavailable(fmt.Errorf("%s: decode answer: %w", what, err))
	}
	return raw, nil
}

// printOne checks an answer about one item (what names the request in
// errors) and prints it: as it came with -o json, otherwise decoded and
// printed by print, then note when there is one (replayNote).
func printOne[T any](inv *invocation, status int, raw json.RawMessage, what, note string, print func(io.Writer, T) error) error {
	var e apiError
	_ = json.Unmarshal(raw, &e)
	if err := check(status, e, what); err != nil {
		return err
	}
	if inv.json {
		return printJSON(inv.out, raw)
	}
	var v T
	if err := json.Unmarshal(raw, &v); err != nil {
		return unavailable(fmt.Errorf("%s: decode answer: %w", what, err))
	}
	if err := print(inv.out, v); err != nil {
		return err
	}
	if note == "" {
		return nil
	}
	_, err := fmt.Fprintln(inv.out, note)
	return err
}

// callAndPrint asks method on path (without a body) and prints the answer
// about one item as printOne does (what names the request in errors).
func callAndPrint[T any](ctx context.Context, c *apiClient, inv *invocation, method, path, what string, print func(io.Writer, T) error) error {
	var raw json.RawMessage
	status, err := c.call(ctx, method, path, nil, &raw)
	if err != nil {
		return err
	}
	return printOne(inv, status, raw, what, "", print)
}

// keyedPost is an operator's POST under an Idempotency-Key whose answer is
// one item (pixctl block create, med close).
type keyedPost[T any] struct {
	key   string    // the -key flag: "" derives one (or, fresh, makes one)
	space uuid.UUID // the command's namespace of derived keys
	parts []string  // what the derived key is of: the same command again, the same key
	// fresh: with no -key, a new key for every invocation, not one derived:
	// the key layer replays a refusal too, and a refusal that may not hold
	// later (a report not releasable yet) would be answered again for
	// ever to the same command. A lost answer is asked again with -key.
	fresh bool
	once  string // what the key makes happen once, as told with it: "nothing is held twice"
	path  string
	body  map[string]any
	made  string // what a lost answer may hide: "the block may have been made"
	what  string // names the request in errors
	// replayed is printed after the item when the answer is the key's
	// first answer replayed.
	replayed string
	print    func(io.Writer, T) error
}

// post tells the key on errOut before the request goes (after a lost
// answer, the same command asks again under it, never under a new one),
// posts and prints the answer.
func (p keyedPost[T]) post(ctx context.Context, c *apiClient, inv *invocation) error {
	k, again := p.key, "run the same command again (or pass -key %[1]s)"
	switch {
	case k == "" && p.fresh:
		k, again = uuid.NewString(), "run it again with -key %[1]s"
	case k == "":
		k = uuid.NewSHA1(p.space, []byte(strings.Join(p.parts, "\x00"))).String()
	}
	fmt.Fprintf(inv.errOut, "Idempotency-Key %[1]s: after a lost answer "+again+": %[2]s\n", k, p.once)
	var raw json.RawMessage
	status, h, err := c.callWith(ctx, http.MethodPost, p.path, http.Header{"Idempotency-Key": {k}}, p.body, &raw)
	if err != nil {
		return fmt.Errorf("%w (%s: ask again with Idempotency-Key %s)", err, p.made, k)
	}
	return printOne(inv, status, raw, p.what, replayNote(h, p.replayed), p.print)
}

// tableRow is the printer of one item as its list's table prints it (for
// printOne): the list's header, then line's row of it, aligned.
func tableRow[T any](header string, line func(T) string) func(io.Writer, T) error {
	return func(out io.Writer, v T) error {
		w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, header)
		fmt.Fprintln(w, line(v))
		return w.Flush()
	}
}

// replayNote is note when the answer is an Idempotency-Key's first answer
// replayed, and "" otherwise.
func replayNote(h http.Header, note string) string {
	if h.Get("X-Idempotent-Replay") == "true" {
		return note
	}
	return ""
}

// printJSON prints an answer as one line of JSON.
func printJSON(out io.Writer, raw []byte) error {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return err
	}
	b.WriteByte('\n')
	_, err := out.Write(b.Bytes())
	return err
}

var showCommand = &command{
	name: "show", args: "[flags] <end_to_end_id>",
	summary: "one incoming PIX: its row, credit, workflow link and refunds (devoluções)",
	about: `Prints one incoming PIX as an operator sees it (the admin route
GET /admin/pix/credits/{id}): its inbox row, with why its last attempt
failed, its credit, its workflow and its link in the Temporal UI, its
refunds (devoluções) when it has any, and what any other saga adds to the
PIX's view, under the saga's name.
`,
	problem:  "no PIX has this end_to_end_id (pix_credit_not_found: no PSP delivered it), or the API refused the request",
	settings: adminSettings, output: true,
	define: func(*flag.FlagSet) runner {
		return func(ctx context.Context, inv *invocation, args []string) error {
			if len(args) != 1 {
				return usageErrorf("name one PIX: its end_to_end_id")
			}
			c, err := inv.apiClient()
			if err != nil {
				return err
			}
			return show(ctx, c, args[0], inv.json, inv.out)
		}
	},
}

// show prints one incoming PIX: its row, its credit and its workflow link,
// then its refunds (devoluções) when it has any, then the other sagas'
// sections of its view (printSections). It is an operator's look
// at any PIX, with why its last attempt failed: the admin route
// (ADMIN_TOKEN), not a customer's, which shows a PIX of the caller's own
// accounts only, without its last error. asJSON prints the API's answer.
func show(ctx context.Context, c *apiClient, endToEndID string, asJSON bool, out io.Writer) error {
	var v struct {
		credit
		Source      string  `json:"source"`
		ReceivedAt  string  `json:"received_at"`
		ProcessedAt *string `json:"processed_at"`
		CreditedAt  *string `json:"credited_at"`
		WorkflowID  string  `json:"workflow_id"`
		WorkflowRun string  `json:"workflow_status"`
		Charge      *struct {
			TxID    string `json:"txid"`
			Outcome string `json:"outcome"`
		} `json:"charge"`
		// Refunds are the PIX's devoluções, oldest first (absent: none).
		Refunds []refund `json:"refunds"`
	}
	raw, err := c.read(ctx, "/admin/pix/credits/"+url.PathEscape(endToEndID), "show "+endToEndID, &v)
	if err != nil || asJSON {
		if err == nil {
			err = printJSON(out, raw)
		}
		return err
	}
	tw := tabwriter.NewWriter(out, 2, 4, 2, ' ', 0)
	row := func(k string, val any) { fmt.Fprintf(tw, "%s\t%v\n", k, val) }
	row("end_to_end_id", v.EndToEndID)
	row("format", v.Source)
	row("account", v.AccountID)
	row("amount", brl(v.AmountCents))
	row("status", v.Status)
	row("attempts", v.Attempts)
	row("deliveries", v.Deliveries)
	row("last_error", deref(v.LastError))
	row("received_at", v.ReceivedAt)
	row("processed_at", deref(v.ProcessedAt))
	row("credited_at", deref(v.CreditedAt))
	if v.Charge != nil {
		// A charge left open by a credit (not its owner's, another amount)
		// is what an operator came to see.
		row("charge", v.Charge.TxID+" "+v.Charge.Outcome)
	}
	row("workflow", v.WorkflowID)
	row("workflow_status", v.WorkflowRun)
	row("temporal_ui", v.TemporalUIURL)
	if len(v.Refunds) > 0 {
		// What the refunds hold of the credit: never more than it (the
		// reversed ones' money came back).
		row("refunded", fmt.Sprintf("%s of %s in %d refund(s)", brl(refundedCents(v.Refunds)), brl(v.AmountCents), len(v.Refunds)))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(v.Refunds) > 0 {
		fmt.Fprintln(out, "\nrefunds")
		if err := printRefunds(out, v.Refunds); err != nil {
			return err
		}
	}
	return printSections(out, raw)
}

func deref(s *string) string {
	if s == nil {
		return "-"
	}
	return *s
}

var failedCommand = &command{
	name: "failed", args: "[-account ID] [-limit N] [-cursor C] [flags]",
	summary: "the failed PIX, with their reasons",
	about: `Lists the failed PIX (GET /admin/pix/credits?status=failed), newest first,
with their attempts and last error; -account, only that account's. Every
page of the list is read, -limit rows at a time, so every failed PIX is
listed however many there are; -o json prints each page's answer, one a
line. Listing failed PIX is not a failure: it exits 0 whatever it finds.
`,
	problem:  "the API refused the request",
	settings: adminSettings, output: true,
	define: func(fs *flag.FlagSet) runner {
		account := fs.String("account", "", "only this account's")
		pages := definePageFlags(fs)
		return func(ctx context.Context, inv *invocation, args []string) error {
			if len(args) > 0 {
				return usageErrorf("unexpected argument %q", args[0])
			}
			c, err := inv.apiClient()
			if err != nil {
				return err
			}
			return failed(ctx, c, inv, *account, pages)
		}
	},
}

// failed lists the failed PIX (of account, unless ""), with their reasons.
func failed(ctx context.Context, c *apiClient, inv *invocation, account string, pages pageFlags) error {
	q := url.Values{"status": {"failed"}}
	if account != "" {
		q.Set("account_id", account)
	}
	return listRows(ctx, c, inv, "/admin/pix/credits", q, pages, "list failed PIX", "pix",
		"END_TO_END_ID\tACCOUNT\tAMOUNT\tATTEMPTS\tLAST_ERROR", func(p credit) string {
			return fmt.Sprintf("%s\t%s\t%s\t%d\t%s", p.EndToEndID, p.AccountID, brl(p.AmountCents), p.Attempts, deref(p.LastError))
		})
}

var retryCommand = &command{
	name: "retry", args: "<end_to_end_id> | -all-failed -account ID",
	summary: "re-drive a failed PIX, or every failed PIX of an account",
	about: `Re-drives a failed PIX (POST /admin/pix/credits/{id}/retry), once its cause
is gone (its account opened, say): its workflow runs again, and credits it
exactly once. -all-failed -account ID re-drives every failed PIX of the
account.
`,
	problem:  "the API refused it (no such PIX, the PIX is not failed: pix_credit_not_failed)",
	settings: adminSettings,
	define: func(fs *flag.FlagSet) runner {
		all := fs.Bool("all-failed", false, "every failed PIX of -account")
		account := fs.String("account", "", "the account, with -all-failed")
		return func(ctx context.Context, inv *invocation, args []string) error {
			if !(*all && *account != "" && len(args) == 0) && !(!*all && *account == "" && len(args) == 1) {
				return usageErrorf("name one PIX (its end_to_end_id), or -all-failed -account ID")
			}
			c, err := inv.apiClient()
			if err != nil {
				return err
			}
			if *all {
				return retry(ctx, c, "", *account, inv.out)
			}
			return retry(ctx, c, args[0], "", inv.out)
		}
	},
}

// retry re-drives one failed PIX (endToEndID), or every failed PIX of
// account.
func retry(ctx context.Context, c *apiClient, endToEndID, account string, out io.Writer) error {
	var v struct {
		apiError
		Redriven []string `json:"redriven"`
	}
	var status int
	var err error
	if account != "" {
		status, err = c.call(ctx, http.MethodPost, "/admin/accounts/"+url.PathEscape(account)+"/pix/credits/retry", nil, &v)
	} else {
		status, err = c.call(ctx, http.MethodPost, "/admin/pix/credits/"+url.PathEscape(endToEndID)+"/retry", nil, &v)
		v.Redriven = []string{endToEndID}
	}
	if err != nil {
		return err
	}
	if err := check(status, v.apiError, "retry"); err != nil {
		return err
	}
	for _, id := range v.Redriven {
		fmt.Fprintf(out, "re-driven: %s\n", id)
	}
	if len(v.Redriven) == 0 {
		fmt.Fprintln(out, "nothing to re-drive")
	}
	return nil
}

var reconcileCommand = &command{
	name: "reconcile", args: "[flags]",
	summary: "the books' check: exit 1 when they do not balance",
	about: `Checks the books (GET /admin/reconcile): every balance is its opening plus
its movements, and what of it is held the sum of its active holds; every
done inbox row has its credit and every credit its
done row; no PIX's refunds exceed its credit, nor does a PSP's notice
contradict a final refund. It reports; it never fixes money. After
migration 0024 or a reset, it says how many accounts are not compared yet:
their history is counted part by part at every run.
`,
	problem:  "the books do not balance (the report names the accounts and rows), or the API refused the request",
	settings: adminSettings, output: true,
	define: func(*flag.FlagSet) runner {
		return func(ctx context.Context, inv *invocation, args []string) error {
			if len(args) > 0 {
				return usageErrorf("unexpected argument %q", args[0])
			}
			c, err := inv.apiClient()
			if err != nil {
				return err
			}
			return reconcile(ctx, c, inv.json, inv.out)
		}
	},
}

// errUnbalanced: the books' check found a difference.
var errUnbalanced = errors.New("the books do not balance")

// reconcile prints the books' check and fails when they don't balance.
func reconcile(ctx context.Context, c *apiClient, asJSON bool, out io.Writer) error {
	var v struct {
		// A pointer: an answer without it (another service's, a gateway's
		// {}) is no check of the books, neither balanced nor not.
		Balanced *bool `json:"balanced"`
		Report   struct {
			UnbalancedAccounts   []string `json:"unbalanced_accounts"`
			UnbalancedHolds      []string `json:"unbalanced_holds"`
			DoneWithoutCredit    []string `json:"done_without_credit"`
			CreditWithoutDone    []string `json:"credit_without_done"`
			RefundsOverCredit    []string `json:"refunds_over_credit"`
			RefundContradictions []string `json:"refund_contradictions"`
			SettledMismatch      []string `json:"settled_mismatch"`
			FencesDown           []string `json:"fences_down"`
			Progress             struct {
				UncheckedAccounts  int  `json:"unchecked_accounts"`
				DoneHistoryPending bool `json:"done_history_pending"`
			} `json:"progress"`
		} `json:"report"`
	}
	raw, err := c.read(ctx, "/admin/reconcile", "reconcile", &v)
	switch {
	case err != nil:
		return err
	case v.Balanced == nil:
		return unavailable(fmt.Errorf("reconcile: the answer has no \"balanced\": not the books' check (is %s the PIX API?)", c.base))
	case asJSON:
		if err := printJSON(out, raw); err != nil || *v.Balanced {
			return err
		}
		return errUnbalanced
	}
	if len(v.Report.FencesDown) > 0 {
		// Beside the books, balanced or not: what the database no longer
		// refuses (docs/runbooks.md, PixReconcileFenceDown).
		fmt.Fprintf(out, "FENCES OF THE BOOKS DOWN: %v\n", v.Report.FencesDown)
	}
	switch {
	case *v.Balanced && (v.Report.Progress.UncheckedAccounts > 0 || v.Report.Progress.DoneHistoryPending):
		fmt.Fprintf(out, "no difference in what was checked; not checked yet, their history being counted part by part at every run (after migration 0024 or a reset): %d accounts; the done inbox rows from before 0031: %s\n",
			v.Report.Progress.UncheckedAccounts, map[bool]string{true: "not all yet", false: "all checked"}[v.Report.Progress.DoneHistoryPending])
		return nil
	case *v.Balanced:
		fmt.Fprintln(out, "the books balance: every balance = opening + its movements (credits, transfers and their refunds, devoluções and their reversals); every held amount = its account's active holds; every done inbox row has its credit and every credit its done row; no PIX's refunds exceed its credit, nor does a PSP's notice contradict a final refund")
		return nil
	}
	fmt.Fprintf(out, "UNBALANCED accounts: %v\ndone rows without a credit: %v\ncredits whose row is not done: %v\n",
		v.Report.UnbalancedAccounts, v.Report.DoneWithoutCredit, v.Report.CreditWithoutDone)
	if len(v.Report.UnbalancedHolds) > 0 {
		fmt.Fprintf(out, "accounts whose held amount is not their active holds': %v\n", v.Report.UnbalancedHolds)
	}
	if len(v.Report.RefundsOverCredit) > 0 || len(v.Report.RefundContradictions) > 0 {
		fmt.Fprintf(out, "PIX refunded or held beyond their credit: %v\nfinal refunds the PSP's notice contradicts: %v\n",
			v.Report.RefundsOverCredit, v.Report.RefundContradictions)
	}
	if len(v.Report.SettledMismatch) > 0 {
		fmt.Fprintf(out, "accounts whose settled sum is not their movements (the history written past its fences): %v\n", v.Report.SettledMismatch)
	}
	return errUnbalanced
}
