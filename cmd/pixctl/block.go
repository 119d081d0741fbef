package main

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/google/uuid"
)

// The cautionary block's commands (saga/block), registered here as a
// group of their own: a saga's commands are its own file. Every one is an
// operator's (the block's routes are of scope pix:admin).
func init() {
	groups = append(groups, &group{name: "block", summary: "cautionary blocks of a PIX received: create, show, list, release, return",
		commands: []*command{blockCreateCommand, blockShowCommand, blockListCommand, blockReleaseCommand, blockReturnCommand}})
}

// pixBlock is a block as the API answers it.
type pixBlock struct {
	ID            string  `json:"id"`
	EndToEndID    string  `json:"end_to_end_id"`
	AccountID     string  `json:"account_id"`
	AmountCents   int64   `json:"amount_cents"`
	Reason        string  `json:"reason"`
	Status        string  `json:"status"`
	EndCause      *string `json:"end_cause"`
	ExpiresAt     string  `json:"expires_at"`
	RefundID      *string `json:"refund_id"`
	RequestedBy   string  `json:"requested_by"`
	TemporalUIURL string  `json:"temporal_ui_url"`
}

func blocksPath(endToEndID string) string {
	return "/pix/credits/" + url.PathEscape(endToEndID) + "/blocks"
}

// operatorClient is the invocation's client acting as an operator.
func operatorClient(inv *invocation) (*apiClient, error) {
	c, err := inv.apiClient()
	if err != nil {
		return nil, err
	}
	return c.asOperator(), nil
}

var blockCreateCommand = &command{
	name: "block create", args: "-amount CENTS -reason TEXT [-key UUID] [flags] <end_to_end_id>",
	summary: "hold part of a PIX received for up to 72 hours",
	about: `Holds -amount centavos of a PIX received (POST /pix/credits/{id}/blocks)
as an operator, on a well-founded suspicion of fraud: the money is not
spendable once the answer comes, the customer is told (pix.block.created),
and the block is released at 72 hours unless it is released or returned
before (pixctl block release, pixctl block return).

The Idempotency-Key (-key; by default one derived from the PIX, the amount
and the reason) is printed before the request goes: after a lost answer
run the same command again, and the API answers what it did, nothing held
twice. A second block of the same amount and reason takes a new -key.
`,
	problem:  "the API refused the block (block_exceeds_credit, block_exceeds_available, pix_not_credited: nothing was held)",
	settings: adminSettings, output: true,
	define: func(fs *flag.FlagSet) runner {
		amount := fs.Int64("amount", 0, "how much to hold, in centavos: 1000 is R$ 10,00 (required)")
		reason := fs.String("reason", "", "why, 1 to 140 characters (required; operators only see it)")
		key := fs.String("key", "", "the Idempotency-Key, a UUID (default: derived from the PIX, -amount and -reason)")
		return func(ctx context.Context, inv *invocation, args []string) error {
			switch {
			case len(args) != 1:
				return usageErrorf("name one PIX: its end_to_end_id")
			case *amount <= 0:
				return usageErrorf("-amount: how much to hold, in centavos (1000 is R$ 10,00)")
			case *reason == "":
				return usageErrorf("-reason: say why")
			}
			c, err := operatorClient(inv)
			if err != nil {
				return err
			}
			return keyedPost[pixBlock]{key: *key, space: blockKeySpace, parts: []string{args[0], strconv.FormatInt(*amount, 10), *reason},
				once: "nothing is held twice", path: blocksPath(args[0]), body: map[string]any{"amount_cents": *amount, "reason": *reason},
				made: "the block may have been made", what: "block " + args[0], replayed: "(the key's first answer: nothing held again)",
				print: printBlock}.post(ctx, c, inv)
		}
	},
}

// blockKeySpace is the UUID namespace of pixctl block create's keys.
var blockKeySpace = uuid.MustParse("0c7d5a1e-3b9f-4e2a-8d61-5f4b3a2c1e09")

var blockShowCommand = &command{
	name: "block show", args: "[flags] <end_to_end_id> <id>",
	summary: "one block: its amount, status, deadline, devolução and workflow link",
	about: `Prints one block of a PIX (GET /pix/credits/{id}/blocks/{block}) as an
operator: what it holds, its status and why it ended, when it expires,
the devolução that returns it, and its run in the Temporal UI.
`,
	problem:  "no such block on this PIX (block_not_found)",
	settings: adminSettings, output: true,
	define: oneBlock(http.MethodGet, "", "show block"),
}

var blockReleaseCommand = &command{
	name: "block release", args: "[flags] <end_to_end_id> <id>",
	summary: "release a block now: the money spendable again",
	about: `Releases a block (POST .../blocks/{id}/release) as an operator: the money
is spendable again, the customer told (pix.block.released), its run ends.
Releasing one released already answers the same. One returned (or being
returned) is refused (block_returned).
`,
	problem:  "it is returned or being returned (block_returned), or no such block",
	settings: adminSettings, output: true,
	define: oneBlock(http.MethodPost, "/release", "release block"),
}

var blockReturnCommand = &command{
	name: "block return", args: "[flags] <end_to_end_id> <id>",
	summary: "return a block to the payer: a devolução of the held amount",
	about: `Returns a block (POST .../blocks/{id}/return) as an operator: a devolução
of the PIX for the held amount is recorded and debited with the held money
in one transaction, and the devolução saga sends it; the block ends
returned when it is returned, or released if the devolução is not made.
Asking again answers the same (one devolução). One released is refused
(block_released). Follow the devolução with pixctl refund-status.
`,
	problem:  "it was released (block_released), the PIX can't be returned any more (refund_window_closed), or no such block",
	settings: adminSettings, output: true,
	define: oneBlock(http.MethodPost, "/return", "return block"),
}

var blockListCommand = &command{
	name: "block list", args: "[-limit N] [-cursor C] [flags] <end_to_end_id>",
	summary: "a PIX's blocks, oldest first",
	about: `Prints a PIX's blocks (GET /pix/credits/{id}/blocks) as an operator, oldest
first. Every page of the list is read, -limit rows at a time; -o json
prints each page's answer, one a line.
`,
	settings: adminSettings, output: true,
	define: func(fs *flag.FlagSet) runner {
		pages := definePageFlags(fs)
		return func(ctx context.Context, inv *invocation, args []string) error {
			if len(args) != 1 {
				return usageErrorf("name one PIX: its end_to_end_id")
			}
			c, err := operatorClient(inv)
			if err != nil {
				return err
			}
			return listRows(ctx, c, inv, blocksPath(args[0]), url.Values{}, pages, "list blocks", "blocks", blockHeader, blockLine)
		}
	},
}

// oneBlock defines a command on one block: method on
// /pix/credits/{e2e}/blocks/{id}<suffix>, the answer printed.
func oneBlock(method, suffix, what string) func(fs *flag.FlagSet) runner {
	return func(fs *flag.FlagSet) runner {
		return func(ctx context.Context, inv *invocation, args []string) error {
			if len(args) != 2 {
				return usageErrorf("name one block: its PIX's end_to_end_id and its id")
			}
			c, err := operatorClient(inv)
			if err != nil {
				return err
			}
			return callAndPrint(ctx, c, inv, method, blocksPath(args[0])+"/"+url.PathEscape(args[1])+suffix, what+" "+args[1], printBlock)
		}
	}
}

// blockHeader heads the table of blocks; blockLine is a row of it.
const blockHeader = "ID\tPIX\tACCOUNT\tAMOUNT\tSTATUS\tCAUSE\tEXPIRES\tREFUND\tREASON\tWORKFLOW"

func blockLine(b pixBlock) string {
	cause, refund := "-", "-"
	if b.EndCause != nil {
		cause = *b.EndCause
	}
	if b.RefundID != nil {
		refund = *b.RefundID
	}
	return fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s", b.ID, b.EndToEndID, b.AccountID, brl(b.AmountCents), b.Status,
		cause, b.ExpiresAt, refund, b.Reason, b.TemporalUIURL)
}

// printBlock prints one block as a row of the table.
var printBlock = tableRow(blockHeader, blockLine)
