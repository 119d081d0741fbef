package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/google/uuid"
)

// MED's commands (saga/med), registered here as a group of their own: a
// saga's commands are its own file. Every one is an operator's (the
// report's routes are of scope pix:admin).
func init() {
	groups = append(groups, &group{name: "med", summary: "MED infraction reports about PIX received: list, show, close the analysis, release one stopped at the DICT, the refund requests no report answers, the DICT lister's quarantine",
		commands: []*command{medListCommand, medShowCommand, medCloseCommand, medReleaseCommand, medRequestsCommand, medQuarantineCommand}})
}

// medReport is an infraction report as the operator's routes answer it.
type medReport struct {
	ID             string  `json:"id"`
	EndToEndID     string  `json:"end_to_end_id"`
	AccountID      *string `json:"account_id"`
	AmountCents    *int64  `json:"amount_cents"`
	Status         string  `json:"status"`
	EndCause       *string `json:"end_cause"`
	DICTStatus     string  `json:"dict_status"`
	AnalysisResult *string `json:"analysis_result"`
	AnalysisDueAt  string  `json:"analysis_due_at"`
	HeldCents      int64   `json:"held_cents"`
	ReturnedCents  int64   `json:"returned_cents"`
	DICTProblem    *string `json:"dict_problem_code"`
	TemporalUIURL  string  `json:"temporal_ui_url"`
}

func medReportPath(id string) string { return "/pix/med/reports/" + url.PathEscape(id) }

var medShowCommand = &command{
	name: "med show", args: "[flags] <report id>",
	summary: "one infraction report: its PIX, status, held and returned, deadline, workflow link",
	about: `Prints one infraction report (GET /pix/med/reports/{id}) as an operator:
its PIX and account, our saga's status and why it ended, the DICT's status,
the analysis and its deadline (7 days from the report), what is held and
returned, the DICT problem it stopped at if any, and its run in the
Temporal UI. -o json prints the answer whole.
`,
	problem:  "no such report (med_report_not_found)",
	settings: adminSettings, output: true,
	define: func(fs *flag.FlagSet) runner {
		return func(ctx context.Context, inv *invocation, args []string) error {
			if len(args) != 1 {
				return usageErrorf("name one report: its id")
			}
			c, err := operatorClient(inv)
			if err != nil {
				return err
			}
			return callAndPrint(ctx, c, inv, http.MethodGet, medReportPath(args[0]), "show med report "+args[0], printMEDReport)
		}
	},
}

// medKeySpace is the UUID namespace of pixctl med close's keys.
var medKeySpace = uuid.MustParse("6b1f3c2a-9d4e-4f5a-8c7b-2e1d0a9f8b7c")

var medCloseCommand = &command{
	name: "med close", args: "-details TEXT [-key UUID] [flags] <report id> agreed|disagreed",
	summary: "close a report's analysis: agreed (held for the refund request) or disagreed (released)",
	about: `Records the operator's analysis of an infraction report (POST
/pix/med/reports/{id}/analysis) within its 7 days: agreed (the saga closes the
report AGREED at the DICT and waits 72 hours for the payer's refund request,
the money held) or disagreed (closed DISAGREED, the hold released). -details
is sent to the DICT with the close (at most 2,000 characters: what may guide
the payer's institution, never the customer's data).

The Idempotency-Key (-key; by default one derived from the report, the
result and the details) is printed before the request goes: after a lost
answer run the same command again, and the API answers what it did. Another
analysis of a report analysed already is refused (med_report_analysed).
`,
	problem:  "the report was analysed otherwise (med_report_analysed), is past its analysis (med_report_not_analysable), or no such report",
	settings: adminSettings, output: true,
	define: func(fs *flag.FlagSet) runner {
		details := fs.String("details", "", "the analysis' details sent to the DICT, at most 2,000 characters (required)")
		key := fs.String("key", "", "the Idempotency-Key, a UUID (default: derived from the report, the result and -details)")
		return func(ctx context.Context, inv *invocation, args []string) error {
			if len(args) != 2 {
				return usageErrorf("name one report and the result: <report id> agreed|disagreed")
			}
			result := strings.ToUpper(args[1])
			switch {
			case result != "AGREED" && result != "DISAGREED":
				return usageErrorf("the result is agreed or disagreed, not %q", args[1])
			case *details == "":
				return usageErrorf("-details: say what the analysis found")
			}
			c, err := operatorClient(inv)
			if err != nil {
				return err
			}
			return keyedPost[medReport]{key: *key, space: medKeySpace, parts: []string{args[0], result, *details},
				once: "the analysis is recorded once", path: medReportPath(args[0]) + "/analysis",
				body: map[string]any{"result": result, "details": *details}, made: "the analysis may have been recorded",
				what: "close med report " + args[0], replayed: "(the key's first answer: the analysis recorded once)",
				print: printMEDReport}.post(ctx, c, inv)
		}
	},
}

var medReleaseCommand = &command{
	name: "med release", args: "-details TEXT [-key UUID] [flags] <report id>",
	summary: "release a report stopped at the DICT on which nothing more can be returned, decided by hand",
	about: `Ends an infraction report its saga stopped at the DICT (PROBLEM set, e.g.
dict_not_as_ours) on which nothing more can be returned: its refund request
CLOSED REJECTED at the DICT, or CLOSED and its return_until passed, no
devolução in flight (POST /pix/med/reports/{id}/release), as decided by hand
(docs/med.md, "Stopped at the DICT"): what it still holds is released once,
the report ends operator_released, and -details (required, at most 2,000
characters: why, as decided) is kept on it with who released it. Nothing is
sent to the DICT. Refused (med_report_not_releasable, the message says why)
for a report not open, not stopped, with a devolução in flight, or on which
something may still be returned (its request OPEN or CANCELLED, or CLOSED
with another result than REJECTED before return_until).

The Idempotency-Key (-key; by default a new one each time, not derived: a
refusal is the key's answer for good, and a report not releasable yet may be
later) is printed before the request goes: after a lost answer run the command
again with -key and that key, and the API answers what it did. A report
released already is refused to any other release (med_report_not_releasable):
med show says how it ended.
`,
	problem:  "not releasable (med_report_not_releasable: not open, not stopped, a devolução in flight, or it may still be returned on), or no such report",
	settings: adminSettings, output: true,
	define: func(fs *flag.FlagSet) runner {
		details := fs.String("details", "", "why the report is released, as decided, at most 2,000 characters (required)")
		key := fs.String("key", "", "the Idempotency-Key, a UUID (default: a new one, printed: pass it again after a lost answer)")
		return func(ctx context.Context, inv *invocation, args []string) error {
			switch {
			case len(args) != 1:
				return usageErrorf("name one report: its id")
			case strings.TrimSpace(*details) == "":
				return usageErrorf("-details: say why the report is released")
			}
			c, err := operatorClient(inv)
			if err != nil {
				return err
			}
			return keyedPost[medReport]{key: *key, fresh: true,
				once: "the release is made once", path: medReportPath(args[0]) + "/release",
				body: map[string]any{"details": *details}, made: "the report may have been released",
				what: "release med report " + args[0], replayed: "(the key's first answer: the report released once)",
				print: printMEDReport}.post(ctx, c, inv)
		}
	},
}

var medListCommand = &command{
	name: "med list", args: "[-limit N] [-cursor C] [flags]",
	summary: "every infraction report, oldest first",
	about: `Prints every infraction report the bank received (GET /pix/med/reports) as
an operator, oldest first, as med show prints one. Every page of the list is
read, -limit rows at a time; -o json prints each page's answer, one a line.
`,
	settings: adminSettings, output: true,
	define: func(fs *flag.FlagSet) runner {
		pages := definePageFlags(fs)
		return func(ctx context.Context, inv *invocation, args []string) error {
			if len(args) > 0 {
				return usageErrorf("unexpected argument %q", args[0])
			}
			c, err := operatorClient(inv)
			if err != nil {
				return err
			}
			return listRows(ctx, c, inv, "/pix/med/reports", url.Values{}, pages, "list med reports", "reports", medHeader, medLine)
		}
	},
}

// medHeader heads the table of reports; medLine is a row of it.
const medHeader = "ID\tPIX\tACCOUNT\tAMOUNT\tSTATUS\tCAUSE\tDICT\tANALYSIS\tDUE\tHELD\tRETURNED\tPROBLEM\tWORKFLOW"

func medLine(r medReport) string {
	amount := "-"
	if r.AmountCents != nil {
		amount = brl(*r.AmountCents)
	}
	return fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s", r.ID, r.EndToEndID, deref(r.AccountID), amount, r.Status,
		deref(r.EndCause), r.DICTStatus, deref(r.AnalysisResult), r.AnalysisDueAt, brl(r.HeldCents), brl(r.ReturnedCents), deref(r.DICTProblem),
		r.TemporalUIURL)
}

// printMEDReport prints one report as a row of a table.
var printMEDReport = tableRow(medHeader, medLine)

// medKeptRequest is a refund request no report answers, as the operator's
// routes answer it (GET /pix/med/refund-requests).
type medKeptRequest struct {
	ID             string  `json:"id"`
	ReportID       string  `json:"report_id"`
	AmountCents    int64   `json:"amount_cents"`
	DICTStatus     string  `json:"dict_status"`
	Why            string  `json:"why"`
	DICTModifiedAt *string `json:"dict_modified_at"`
	CreatedAt      string  `json:"created_at"`
	// Our close at the DICT (report_disagreed, report_cancelled: closed
	// REJECTED by the report's run), or why it could not be made.
	CloseResult     *string `json:"close_result"`
	RejectionReason *string `json:"rejection_reason"`
	CloseProblem    *string `json:"close_problem"`
}

const medRequestsPath = "/pix/med/refund-requests"

var medRequestsCommand = &command{
	name: "med requests", args: "[-limit N] [-cursor C] [flags] [<refund request id>]",
	summary: "the MED refund requests no report answers (on-call's while OPEN), or one of them",
	about: `Prints the MED refund requests the saga keeps on their own (GET
/pix/med/refund-requests) as an operator, oldest first: no report answers
them (their report ended, answers another request, or took another in
their place), and PixMEDRefundRequestNotTaken pages while one is OPEN at
the DICT (docs/runbooks.md). OUR CLOSE: one whose report ended DISAGREED
or cancelled is closed REJECTED (OTHER) by the report's run, or says why
it could not be ("not closed: dict_refused"). Every page is read, -limit rows at a time.
With an id, that one request (GET /pix/med/refund-requests/{id}). -o json
prints the answers as they came.
`,
	problem:  "no such request kept on its own (med_refund_request_not_found)",
	settings: adminSettings, output: true,
	define: func(fs *flag.FlagSet) runner {
		pages := definePageFlags(fs)
		return func(ctx context.Context, inv *invocation, args []string) error {
			if len(args) > 1 {
				return usageErrorf("name at most one refund request: its id")
			}
			c, err := operatorClient(inv)
			if err != nil {
				return err
			}
			if len(args) == 0 {
				return listRows(ctx, c, inv, medRequestsPath, url.Values{}, pages, "list med refund requests", "refund_requests",
					medRequestHeader, medRequestLine)
			}
			return callAndPrint(ctx, c, inv, http.MethodGet, medRequestsPath+"/"+url.PathEscape(args[0]), "show med refund request "+args[0],
				tableRow(medRequestHeader, medRequestLine))
		}
	},
}

// medRequestHeader heads the table of kept refund requests;
// medRequestLine is a row of it.
const medRequestHeader = "ID\tREPORT\tAMOUNT\tDICT\tWHY\tOUR CLOSE\tDICT MODIFIED\tSINCE"

func medRequestLine(q medKeptRequest) string {
	modified := "-"
	if q.DICTModifiedAt != nil {
		modified = *q.DICTModifiedAt
	}
	return strings.Join([]string{q.ID, q.ReportID, brl(q.AmountCents), q.DICTStatus, q.Why, ourClose(q), modified, q.CreatedAt}, "\t")
}

// ourClose is what the saga did of q at the DICT: REJECTED (its reason),
// the code of why it could not close it ("not closed: dict_refused"), or
// "-".
func ourClose(q medKeptRequest) string {
	switch {
	case q.CloseResult != nil && q.RejectionReason != nil:
		return *q.CloseResult + " (" + *q.RejectionReason + ")"
	case q.CloseResult != nil:
		return *q.CloseResult
	case q.CloseProblem != nil:
		return "not closed: " + *q.CloseProblem
	}
	return "-"
}

// medQuarantined is an item of the DICT's lists the lister quarantined, as
// the operator's routes answer it (GET /pix/med/quarantine).
type medQuarantined struct {
	Kind           string `json:"kind"`
	DICTID         string `json:"dict_id"`
	DICTModifiedAt string `json:"dict_modified_at"`
	Reason         string `json:"reason"`
	FirstListedAt  string `json:"first_listed_at"`
	LastListedAt   string `json:"last_listed_at"`
}

// medCleared is the answer of a clear (DELETE /pix/med/quarantine/{kind}/{id}).
type medCleared struct {
	Kind    string   `json:"kind"`
	DICTID  string   `json:"dict_id"`
	Cleared []string `json:"cleared"`
}

const medQuarantinePath = "/pix/med/quarantine"

var medQuarantineCommand = &command{
	name: "med quarantine", args: "[-limit N] [-cursor C] [-through T] [flags] [list | -through T clear <kind> <dict id>]",
	summary: "the items of the DICT's lists the MED lister quarantined (PixMEDDICTItemQuarantined), or clear one decided by hand",
	about: `Lists the items of the DICT's lists the MED lister could not take in and
nothing cleared yet (GET /pix/med/quarantine), as an operator: refused for
good by the saga's doors, or not the specification's (dict_malformed:<element>).
PixMEDDICTItemQuarantined pages while one is (docs/runbooks.md). A later
listing that takes the item in clears it by itself. Every page is read,
-limit rows at a time.

-through T clear <kind> <dict id> clears one once decided by hand at the
DICT (DELETE /pix/med/quarantine/{kind}/{id}): kind is report or refund,
the id as listed; -through T (required: the DICT MODIFIED of the copy you
decided, as listed) clears that copy and the earlier ones, never one
quarantined since, which stays and holds the 72 hours' expiry back.
-o json prints the answers as they came.
`,
	problem:  "no such quarantined item (med_quarantine_not_found)",
	settings: adminSettings, output: true,
	define: func(fs *flag.FlagSet) runner {
		pages := definePageFlags(fs)
		through := fs.String("through", "", "clear (required): the DICT MODIFIED of the copy decided, as listed (RFC 3339)")
		return func(ctx context.Context, inv *invocation, args []string) error {
			c, err := operatorClient(inv)
			if err != nil {
				return err
			}
			switch {
			case len(args) == 0 || (len(args) == 1 && args[0] == "list"):
				return listRows(ctx, c, inv, medQuarantinePath, url.Values{}, pages, "list the med quarantine", "items",
					medQuarantineHeader, medQuarantineLine)
			case args[0] == "clear" && len(args) == 3:
			default:
				return usageErrorf("list, or clear <kind> <dict id>")
			}
			kind := args[1]
			if kind != "report" && kind != "refund" {
				return usageErrorf("the kind is report or refund, not %q", kind)
			}
			if *through == "" {
				return usageErrorf("clear takes -through: the DICT MODIFIED of the copy you decided, as listed")
			}
			path := medQuarantinePath + "/" + url.PathEscape(kind) + "/" + url.PathEscape(args[2]) + "?" + url.Values{"through": {*through}}.Encode()
			return callAndPrint(ctx, c, inv, http.MethodDelete, path, "clear the med quarantine of "+kind+" "+args[2], func(w io.Writer, r medCleared) error {
				_, err := fmt.Fprintf(w, "cleared %s %s: %d copies (modified %s)\n", r.Kind, r.DICTID, len(r.Cleared), strings.Join(r.Cleared, ", "))
				return err
			})
		}
	},
}

// medQuarantineHeader heads the table of quarantined items;
// medQuarantineLine is a row of it.
const medQuarantineHeader = "KIND\tDICT ID\tDICT MODIFIED\tREASON\tFIRST LISTED\tLAST LISTED"

func medQuarantineLine(q medQuarantined) string {
	return strings.Join([]string{q.Kind, q.DICTID, q.DICTModifiedAt, q.Reason, q.FirstListedAt, q.LastListedAt}, "\t")
}
