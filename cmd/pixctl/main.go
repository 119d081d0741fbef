// Command pixctl is the operator's and demonstrator's tool for the PIX
// service. It talks to the service's HTTP API only.
//
//	pixctl demo    replay the scenario: several PIX, redeliveries, concurrent
//	               copies, a payload mismatch and a PIX to an unknown account;
//	               outgoing PIX: a lost response retried, a refusal replayed,
//	               a transfer the PSP rejects, refunded; a PIX received
//	               through the PSP partly returned (devolução), and a
//	               devolução beyond its credit refused; then print statuses
//	               and balances
//	pixctl show <end_to_end_id>     one incoming PIX: row, credit, workflow
//	                                link, and its refunds (devoluções)
//	pixctl refund -e2e <end_to_end_id> -amount <centavos> [-reason TEXT] [-key UUID] [-account X]
//	               return (a devolução) all or part of a PIX received, as
//	               its account's customer
//	pixctl refund-status [-account X] [-wait D] <refund id>
//	               one refund: where it stands, its workflow and its link
//	pixctl failed [-account X]      the failed PIX with their reasons
//	pixctl retry <end_to_end_id>    re-drive a failed PIX
//	pixctl retry -all-failed -account X
//	pixctl reconcile                the books' check; exit 1 when they don't balance
//	pixctl events tail [-all]
//	               print the service's events as they reach the broker
//	               (NATS_URL, default nats://127.0.0.1:4222); -all from the
//	               start of the stream
//	pixctl token -account X [-account Y ...] [-scope "pix:read pix:write"] [-ttl 1h] [-sub NAME]
//	               print a bearer token of the development issuer
//	pixctl dev-issuer [-env]
//	               create the development issuer's key pair unless it
//	               exists; print its JWKS file (-env: the API's AUTH_*
//	               settings as shell exports)
//
// PIX_API_URL (default http://127.0.0.1:8080) names the API, PSP_URL
// (default http://127.0.0.1:8090) the PSP simulator the demo configures. Webhooks are
// signed with the first secret of WEBHOOK_SECRETS (as the PSP it belongs
// to). Admin calls (show, failed, retry, reconcile, and refund's look-up of
// the PIX's account) carry ADMIN_TOKEN (or the content of ADMIN_TOKEN_FILE):
// the static admin token, or a JWT of scope pix:admin.
// Customer calls (refund, refund-status, the demo's) carry PIX_TOKEN;
// without it, and in the demo always, a token the development issuer mints
// for the accounts the call acts for and the one scope it needs, valid 5 minutes, when the
// issuer's key pair exists in AUTH_DEV_KEY_DIR (default .data/auth, names
// AUTH_ISSUER and AUTH_AUDIENCE, defaults pix-dev-issuer and pix-api); the
// same issuer mints a pix:admin token when ADMIN_TOKEN is not set.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/pixbank/pix/internal/cli"
	"github.com/pixbank/pix/internal/webhooksig"
)

const usage = "usage: pixctl demo | show <end_to_end_id> | refund -e2e <end_to_end_id> -amount <centavos> [-reason TEXT] [-key UUID] [-account X] | refund-status [-account X] [-wait D] <refund id> | failed [-account X] | retry <end_to_end_id> | retry -all-failed -account X | reconcile | events tail [-all] | token -account X [-scope S] [-ttl D] [-sub NAME] | dev-issuer [-env]"

func main() { cli.Main("pixctl", run) }

func run(ctx context.Context, args []string) error {
	if len(args) == 0 {
		return errors.New(usage)
	}
	switch args[0] {
	case "events":
		if len(args) < 2 || args[1] != "tail" {
			return errors.New(usage)
		}
		return tailEvents(ctx, args[2:], os.Stdout)
	case "token":
		return helpIsNoError(tokenCmd(args[1:], os.Getenv, time.Now(), os.Stdout, os.Stderr))
	case "dev-issuer":
		return helpIsNoError(devIssuerCmd(args[1:], os.Getenv, os.Stdout, os.Stderr))
	}
	apiURL := os.Getenv("PIX_API_URL")
	if apiURL == "" {
		apiURL = "http://127.0.0.1:8080"
	}
	key, err := webhooksig.ClientKey(os.Getenv("WEBHOOK_SECRETS"))
	if err != nil {
		return fmt.Errorf("WEBHOOK_SECRETS: %w", err)
	}
	dev, err := openDevTokens(os.Getenv)
	if err != nil {
		return err
	}
	adminToken, err := adminTokenOf(os.Getenv)
	if err != nil {
		return err
	}
	c := &apiClient{base: apiURL, signingKey: key, adminToken: adminToken, customerToken: os.Getenv("PIX_TOKEN"), dev: dev}
	switch args[0] {
	case "show":
		return show(ctx, c, args[1:], os.Stdout)
	case "refund":
		return helpIsNoError(refundCmd(ctx, c, args[1:], os.Stdout, os.Stderr))
	case "refund-status":
		return helpIsNoError(refundStatusCmd(ctx, c, args[1:], os.Stdout, os.Stderr))
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
		// The demo's customers are the demo accounts, each with a token of
		// its own from the development issuer: PIX_TOKEN names one caller.
		c.customerToken = ""
		return demo(ctx, c, &apiClient{base: pspURL}, os.Stdout)
	default:
		return fmt.Errorf("unknown command %q; %s", args[0], usage)
	}
}

// helpIsNoError: -h printed the usage a subcommand was asked for.
func helpIsNoError(err error) error {
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	return err
}

// adminTokenOf is ADMIN_TOKEN, or the content of the file ADMIN_TOKEN_FILE
// names (its trailing newline trimmed), as pixd reads it; "" when neither
// is set.
func adminTokenOf(getenv func(string) string) (string, error) {
	token, path := getenv("ADMIN_TOKEN"), getenv("ADMIN_TOKEN_FILE")
	switch {
	case token != "" && path != "":
		return "", errors.New("ADMIN_TOKEN and ADMIN_TOKEN_FILE: set one, not both")
	case path == "":
		return token, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("ADMIN_TOKEN_FILE: %w", err)
	}
	return strings.TrimRight(string(b), "\r\n"), nil
}
