// Command pixctl is the operator's and demonstrator's tool for the PIX
// service. It talks to the service's HTTP API only.
//
//	pixctl demo    replay the scenario: several PIX, redeliveries, concurrent
//	               copies, a payload mismatch and a PIX to an unknown account;
//	               outgoing PIX: a lost response retried, a refusal replayed,
//	               a transfer the PSP rejects, refunded; then print statuses
//	               and balances
//	pixctl show <end_to_end_id>     one incoming PIX: row, credit, workflow link
//	pixctl failed [-account X]      the failed PIX with their reasons
//	pixctl retry <end_to_end_id>    re-drive a failed PIX
//	pixctl retry -all-failed -account X
//	pixctl reconcile                the books' check; exit 1 when they don't balance
//	pixctl events tail [-all]
//	               print the service's events as they reach the broker
//	               (NATS_URL, default nats://127.0.0.1:4222); -all from the
//	               start of the stream
//
// PIX_API_URL (default http://127.0.0.1:8080) names the API, PSP_URL
// (default http://127.0.0.1:8090) the PSP simulator the demo configures. Webhooks are
// signed with the first secret of WEBHOOK_SECRETS (as the PSP it belongs
// to); admin calls carry ADMIN_TOKEN.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/pixbank/pix/internal/cli"
	"github.com/pixbank/pix/internal/webhooksig"
)

const usage = "usage: pixctl demo | show <end_to_end_id> | failed [-account X] | retry <end_to_end_id> | retry -all-failed -account X | reconcile | events tail [-all]"

func main() { cli.Main("pixctl", run) }

func run(ctx context.Context, args []string) error {
	if len(args) == 0 {
		return errors.New(usage)
	}
	if args[0] == "events" {
		if len(args) < 2 || args[1] != "tail" {
			return errors.New(usage)
		}
		return tailEvents(ctx, args[2:], os.Stdout)
	}
	apiURL := os.Getenv("PIX_API_URL")
	if apiURL == "" {
		apiURL = "http://127.0.0.1:8080"
	}
	key, err := webhooksig.ClientKey(os.Getenv("WEBHOOK_SECRETS"))
	if err != nil {
		return fmt.Errorf("WEBHOOK_SECRETS: %w", err)
	}
	c := &apiClient{base: apiURL, signingKey: key, adminToken: os.Getenv("ADMIN_TOKEN")}
	switch args[0] {
	case "show":
		return show(ctx, c, args[1:], os.Stdout)
	case "failed":
		return failed(ctx, c, args[1:], os.Stdout)
	case "retry":
		return retry(ctx, c, args[1:], os.Stdout)
	case "reconcile":
		return reconcile(ctx, c, os.Stdout)
	case "demo":
		pspURL := os.Getenv("PSP_URL")
		if pspURL == "" {
			pspURL = "http://127.0.0.1:8090"
		}
		return demo(ctx, c, &apiClient{base: pspURL}, os.Stdout)
	default:
		return fmt.Errorf("unknown command %q; %s", args[0], usage)
	}
}
