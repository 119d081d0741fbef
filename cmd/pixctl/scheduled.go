package main

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"net/url"
)

// The scheduled PIX's commands (saga/scheduled), registered here as a
// group of their own: a saga's commands are its own file.
func init() {
	groups = append(groups, &group{name: "scheduled", summary: "scheduled PIX (PIX Agendado): list, show, cancel",
		commands: []*command{scheduledListCommand, scheduledShowCommand, scheduledCancelCommand}})
}

// scheduledPix is a scheduled PIX as the API answers it.
type scheduledPix struct {
	ID            string  `json:"id"`
	AccountID     string  `json:"account_id"`
	AmountCents   int64   `json:"amount_cents"`
	PixKey        string  `json:"pix_key"`
	ScheduledFor  string  `json:"scheduled_for"`
	RunAt         string  `json:"run_at"`
	Status        string  `json:"status"`
	FailureReason *string `json:"failure_reason"`
	TransferID    *string `json:"transfer_id"`
	EndToEndID    *string `json:"end_to_end_id"`
	TemporalUIURL string  `json:"temporal_ui_url"`
}

// scheduledAccountFlag is the account whose customer pixctl acts as (a
// minted token acts for it), as refund-status's.
func scheduledClient(inv *invocation, account string) (*apiClient, error) {
	c, err := inv.apiClient()
	if err != nil {
		return nil, err
	}
	if account == "" && c.customerToken == "" && c.dev != nil {
		return nil, usageErrorf("-account: name the scheduled PIX's account: the token pixctl mints acts for the accounts it names; or set PIX_TOKEN")
	}
	if account != "" {
		c = c.as(account)
	}
	return c, nil
}

var scheduledListCommand = &command{
	name: "scheduled list", args: "-account ID [-status S] [-limit N] [-cursor C] [flags]",
	summary: "an account's scheduled PIX, by date",
	about: `Prints an account's scheduled PIX (GET /pix/scheduled?account_id=…), by
date, as the account's customer: -status keeps one status (scheduled,
executed, failed, cancelled). Every page of the list is read, -limit rows
at a time, so every one is listed however many there are; -o json prints
each page's answer, one a line.
`,
	problem:  "no such account of the customer's (account_not_found)",
	settings: customerSettings, output: true,
	define: func(fs *flag.FlagSet) runner {
		account := fs.String("account", "", "the account")
		status := fs.String("status", "", "only this status: scheduled, executed, failed or cancelled")
		pages := definePageFlags(fs)
		return func(ctx context.Context, inv *invocation, args []string) error {
			switch {
			case *account == "":
				return usageErrorf("-account: name the account")
			case len(args) != 0:
				return usageErrorf("unexpected argument %q", args[0])
			}
			c, err := scheduledClient(inv, *account)
			if err != nil {
				return err
			}
			q := url.Values{"account_id": {*account}}
			if *status != "" {
				q.Set("status", *status)
			}
			return listRows(ctx, c, inv, "/pix/scheduled", q, pages, "list scheduled pix", "scheduled", scheduledHeader, scheduledLine)
		}
	},
}

var scheduledShowCommand = &command{
	name: "scheduled show", args: "[-account ID] [flags] <id>",
	summary: "one scheduled PIX: its date, status, transfer and workflow link",
	about: `Prints one scheduled PIX (GET /pix/scheduled/{id}) as its account's
customer: when it runs, its status, the transfer it made (pixctl's
transfer id is GET /pix/transfers/{id}) or why it failed, and its run in
the Temporal UI.
`,
	problem:  "no such scheduled PIX of the account's (scheduled_pix_not_found)",
	settings: customerSettings, output: true,
	define: oneScheduled(http.MethodGet, "show scheduled pix"),
}

var scheduledCancelCommand = &command{
	name: "scheduled cancel", args: "[-account ID] [flags] <id>",
	summary: "cancel a scheduled PIX before it runs",
	about: `Cancels a scheduled PIX that has not run (DELETE /pix/scheduled/{id}) as
its account's customer: nothing is debited, its run ends. Cancelling one
cancelled already answers the same. One that ran is refused
(scheduled_pix_already_ran): see its status with pixctl scheduled show.
`,
	problem:  "it ran already (scheduled_pix_already_ran), or no such scheduled PIX of the account's",
	settings: customerSettings, output: true,
	define: oneScheduled(http.MethodDelete, "cancel scheduled pix"),
}

// oneScheduled defines a command on one scheduled PIX: method on
// /pix/scheduled/{id} as its account's customer, the answer printed.
func oneScheduled(method, what string) func(fs *flag.FlagSet) runner {
	return func(fs *flag.FlagSet) runner {
		account := fs.String("account", "", "the scheduled PIX's account, which a minted token acts for")
		return func(ctx context.Context, inv *invocation, args []string) error {
			if len(args) != 1 {
				return usageErrorf("name one scheduled PIX: its id")
			}
			c, err := scheduledClient(inv, *account)
			if err != nil {
				return err
			}
			var s scheduledPix
			raw, err := c.ask(ctx, method, "/pix/scheduled/"+url.PathEscape(args[0]), what, &s)
			if err != nil {
				return err
			}
			if inv.json {
				return printJSON(inv.out, raw)
			}
			return printScheduled(inv.out, s)
		}
	}
}

// scheduledHeader heads the table of scheduled PIX; scheduledLine is a
// row of it.
const scheduledHeader = "ID\tACCOUNT\tAMOUNT\tPIX KEY\tDATE\tRUNS AT\tSTATUS\tTRANSFER / REASON\tWORKFLOW"

func scheduledLine(s scheduledPix) string {
	outcome := "-"
	switch {
	case s.TransferID != nil:
		outcome = *s.TransferID
	case s.FailureReason != nil:
		outcome = *s.FailureReason
	}
	return fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s", s.ID, s.AccountID, brl(s.AmountCents), s.PixKey, s.ScheduledFor,
		s.RunAt, s.Status, outcome, s.TemporalUIURL)
}

// printScheduled prints one scheduled PIX as a row of the table.
var printScheduled = tableRow(scheduledHeader, scheduledLine)
