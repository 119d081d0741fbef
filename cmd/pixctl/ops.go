package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"text/tabwriter"
)

// apiError is the error envelope of the API.
type apiError struct {
	Error *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// check turns a non-2xx answer into an error naming the API's code.
func check(status int, e apiError, what string) error {
	if status/100 == 2 {
		return nil
	}
	if e.Error != nil {
		return fmt.Errorf("%s: %d %s: %s", what, status, e.Error.Code, e.Error.Message)
	}
	return fmt.Errorf("%s: HTTP %d", what, status)
}

// show prints one incoming PIX: its row, its credit and its workflow link,
// then its refunds (devoluções) when it has any. It is an operator's look
// at any PIX, with why its last attempt failed: the admin route
// (ADMIN_TOKEN), not a customer's, which shows a PIX of the caller's own
// accounts only, without its last error.
func show(ctx context.Context, c *apiClient, args []string, out io.Writer) error {
	if len(args) != 1 {
		return errors.New("usage: pixctl show <end_to_end_id>")
	}
	var v struct {
		apiError
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
	status, err := c.call(ctx, http.MethodGet, "/admin/pix/credits/"+url.PathEscape(args[0]), nil, &v)
	if err != nil {
		return err
	}
	if err := check(status, v.apiError, "show "+args[0]); err != nil {
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
	if err := tw.Flush(); err != nil || len(v.Refunds) == 0 {
		return err
	}
	fmt.Fprintln(out, "\nrefunds")
	return printRefunds(out, v.Refunds)
}

func deref(s *string) string {
	if s == nil {
		return "-"
	}
	return *s
}

// failed lists the failed PIX, with their reasons.
func failed(ctx context.Context, c *apiClient, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("pixctl failed", flag.ContinueOnError)
	account := fs.String("account", "", "only this account's")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var v struct {
		apiError
		Pix []credit `json:"pix"`
	}
	q := url.Values{"status": {"failed"}}
	if *account != "" {
		q.Set("account_id", *account)
	}
	status, err := c.call(ctx, http.MethodGet, "/admin/pix/credits?"+q.Encode(), nil, &v)
	if err != nil {
		return err
	}
	if err := check(status, v.apiError, "list failed PIX"); err != nil {
		return err
	}
	tw := tabwriter.NewWriter(out, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "END_TO_END_ID\tACCOUNT\tAMOUNT\tATTEMPTS\tLAST_ERROR")
	for _, p := range v.Pix {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\n", p.EndToEndID, p.AccountID, brl(p.AmountCents), p.Attempts, deref(p.LastError))
	}
	return tw.Flush()
}

// retry re-drives one failed PIX, or every failed PIX of an account.
func retry(ctx context.Context, c *apiClient, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("pixctl retry", flag.ContinueOnError)
	all := fs.Bool("all-failed", false, "every failed PIX of -account")
	account := fs.String("account", "", "the account, with -all-failed")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var v struct {
		apiError
		Redriven []string `json:"redriven"`
	}
	var status int
	var err error
	switch {
	case *all && *account != "" && fs.NArg() == 0:
		status, err = c.call(ctx, http.MethodPost, "/admin/accounts/"+url.PathEscape(*account)+"/pix/credits/retry", nil, &v)
	case !*all && fs.NArg() == 1:
		status, err = c.call(ctx, http.MethodPost, "/admin/pix/credits/"+url.PathEscape(fs.Arg(0))+"/retry", nil, &v)
		v.Redriven = []string{fs.Arg(0)}
	default:
		return errors.New("usage: pixctl retry <end_to_end_id> | pixctl retry -all-failed -account <id>")
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

// reconcile prints the books' check and fails when they don't balance.
func reconcile(ctx context.Context, c *apiClient, out io.Writer) error {
	var v struct {
		apiError
		Balanced bool `json:"balanced"`
		Report   struct {
			UnbalancedAccounts   []string `json:"unbalanced_accounts"`
			DoneWithoutCredit    []string `json:"done_without_credit"`
			CreditWithoutDone    []string `json:"credit_without_done"`
			RefundsOverCredit    []string `json:"refunds_over_credit"`
			RefundContradictions []string `json:"refund_contradictions"`
		} `json:"report"`
	}
	status, err := c.call(ctx, http.MethodGet, "/admin/reconcile", nil, &v)
	if err != nil {
		return err
	}
	if err := check(status, v.apiError, "reconcile"); err != nil {
		return err
	}
	if v.Balanced {
		fmt.Fprintln(out, "the books balance: every balance = opening + its movements (credits, transfers and their refunds, devoluções and their reversals); every done inbox row has its credit and every credit its done row; no PIX's refunds exceed its credit, nor does a PSP's notice contradict a final refund")
		return nil
	}
	fmt.Fprintf(out, "UNBALANCED accounts: %v\ndone rows without a credit: %v\ncredits whose row is not done: %v\n",
		v.Report.UnbalancedAccounts, v.Report.DoneWithoutCredit, v.Report.CreditWithoutDone)
	if len(v.Report.RefundsOverCredit) > 0 || len(v.Report.RefundContradictions) > 0 {
		fmt.Fprintf(out, "PIX refunded beyond their credit: %v\nfinal refunds the PSP's notice contradicts: %v\n",
			v.Report.RefundsOverCredit, v.Report.RefundContradictions)
	}
	return errors.New("the books do not balance")
}
