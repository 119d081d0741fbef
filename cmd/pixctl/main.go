// Command pixctl is the operator's and demonstrator's tool for the PIX
// service. It talks to the service's HTTP API, and to NATS for its events.
//
//	pixctl demo                     replay the scenario (see pixctl help demo)
//	pixctl show <end_to_end_id>     one incoming PIX: row, credit, workflow
//	                                link, and its refunds (devoluções)
//	pixctl refund -e2e <end_to_end_id> -amount <centavos> [-reason TEXT] [-key UUID] [-account X]
//	pixctl refund-status [-account X] [-wait D] <refund id>
//	pixctl failed [-account X] [-limit N]  every failed PIX with its reason (every page)
//	pixctl retry <end_to_end_id> | -all-failed -account X
//	pixctl reconcile                the books' check
//	pixctl events tail [-all]       the service's events as they reach the broker
//	pixctl psp catchup -from T -to T  one window of the PSP's record of PIX
//	                                received into the inbox (through Temporal)
//	pixctl psp webhook set|get|delete <chave> [url]  our webhook at the PSP
//	pixctl token -account X ...     a bearer token of the development issuer
//	pixctl dev-issuer [-env]        the development issuer's key pair
//	pixctl dev-pki                  make run's development certificates
//	pixctl version                  the build: version, revision, Go toolchain
//	pixctl help [command]           usage; so do -h and --help anywhere
//
// Every command's settings come from its flags, else the environment, else
// a default (-api-url, PIX_API_URL, http://127.0.0.1:8080; -admin-token,
// ADMIN_TOKEN or ADMIN_TOKEN_FILE; -token, PIX_TOKEN; -psp-url, PSP_URL;
// -nats-url, NATS_URL; -dev-key-dir, AUTH_DEV_KEY_DIR). The read commands
// take -o json. Exit status (one table with pixd's, docs/cli.md): 0 done,
// 1 a problem found (the books do not balance, the request refused), 2
// usage, 3 could not ask (network, timeout, 5xx, credentials refused).
// pixctl help <command> says the rest; docs/operations.md too.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/pixbank/pix/internal/cli"
	"github.com/pixbank/pix/internal/webhooksig"
)

func main() {
	cli.Main("pixctl", func(ctx context.Context, args []string) error {
		return run(ctx, args, os.Stdout, os.Stderr, os.Getenv, time.Now)
	})
}

// commands are pixctl's commands, in the order its help lists them;
// groups, the commands with subcommands.
var (
	commands = []*command{demoCommand, showCommand, refundCommand, refundStatusCommand, failedCommand, retryCommand,
		reconcileCommand, tokenCommand, devIssuerCommand, devPKICommand, versionCommand}
	groups = []*group{{name: "events", summary: "the service's events on the broker", commands: []*command{eventsTailCommand}},
		{name: "psp", summary: "the PSP's own record, and our webhook there", commands: []*command{pspCatchUpCommand, pspWebhookCommand}}}
)

const usageIntro = `usage: pixctl <command> [flags] [arguments]

The PIX service's operator tool: it talks to the service's HTTP API (and to
NATS for its events).

commands:
`

const usageOutro = `
pixctl help <command> (or pixctl <command> -h) prints a command's flags and
settings; no command runs when its arguments ask for help.

Settings: a flag's value, else the environment's, else the default:
  -api-url      PIX_API_URL       http://127.0.0.1:8080
  -admin-token  ADMIN_TOKEN       (or the file ADMIN_TOKEN_FILE names; else the development issuer's)
  -token        PIX_TOKEN         (else the development issuer mints one per call)
  -psp-url      PSP_URL           http://127.0.0.1:8090 (the demo)
  -nats-url     NATS_URL          nats://127.0.0.1:4222 (events tail, the demo)
  -dev-key-dir  AUTH_DEV_KEY_DIR  .data/auth (with AUTH_ISSUER, AUTH_AUDIENCE)
  WEBHOOK_SECRETS signs the demo's webhooks (its first secret).
The read commands (show, failed, refund-status, reconcile, events tail) take
-o json: the API's answer as it is, one JSON value a line.

`

// usage prints pixctl's usage.
func usage(w io.Writer) {
	fmt.Fprint(w, usageIntro)
	line := func(name, summary string) { fmt.Fprintf(w, "  %-16s %s\n", name, summary) }
	for _, c := range commands {
		line(c.name, c.summary)
	}
	for _, g := range groups {
		for _, c := range g.commands {
			line(c.name, c.summary)
		}
	}
	line("help [command]", "this usage, or a command's")
	fmt.Fprint(w, usageOutro)
	// One table for pixd and pixctl (docs/cli.md); pixctl itself ends with
	// 0 to 3.
	cli.PrintStatuses(w)
}

// run is pixctl with its arguments: out and errOut its stdout and stderr,
// getenv its environment. A help flag or word prints usage on out, with
// nothing else done (status 0); an unknown command prints it on errOut
// (status 2).
func run(ctx context.Context, args []string, out, errOut io.Writer, getenv func(string) string, now func() time.Time) error {
	switch {
	case len(args) == 0:
		usage(errOut)
		return cli.Exit(cli.ExitUsage)
	case cli.IsHelp(args[0]):
		usage(out)
		return nil
	case args[0] == "help":
		return help(args[1:], out, errOut)
	}
	for _, g := range groups {
		if args[0] == g.name {
			return g.run(ctx, args[1:], out, errOut, getenv, now)
		}
	}
	if c := commandNamed(commands, args[0]); c != nil {
		return c.run(ctx, args[1:], out, errOut, getenv, now)
	}
	return unknown(fmt.Sprintf("unknown command %q", args[0]), errOut)
}

// unknown reports a command pixctl does not have, with its usage.
func unknown(why string, errOut io.Writer) error {
	fmt.Fprintf(errOut, "pixctl: %s\n\n", why)
	usage(errOut)
	return cli.Exit(cli.ExitUsage)
}

func commandNamed(cs []*command, name string) *command {
	for _, c := range cs {
		if c.name == name || strings.HasSuffix(c.name, " "+name) {
			return c
		}
	}
	return nil
}

// help is pixctl help [command [subcommand]].
func help(args []string, out, errOut io.Writer) error {
	if len(args) == 0 {
		usage(out)
		return nil
	}
	for _, g := range groups {
		if args[0] != g.name {
			continue
		}
		if len(args) == 1 {
			g.help(out)
			return nil
		}
		if c := commandNamed(g.commands, args[1]); c != nil && len(args) == 2 {
			c.help(out)
			return nil
		}
		return unknown(fmt.Sprintf("no help for %q", strings.Join(args, " ")), errOut)
	}
	if c := commandNamed(commands, args[0]); c != nil && len(args) == 1 {
		c.help(out)
		return nil
	}
	return unknown(fmt.Sprintf("no help for %q", strings.Join(args, " ")), errOut)
}

// run runs the group's subcommand: pixctl events tail ...; pixctl events,
// -h or help print the group's usage.
func (g *group) run(ctx context.Context, args []string, out, errOut io.Writer, getenv func(string) string, now func() time.Time) error {
	switch {
	case len(args) == 0:
		fmt.Fprintf(errOut, "pixctl %s: name a command\n\n", g.name)
		g.help(errOut)
		return cli.Exit(cli.ExitUsage)
	case cli.IsHelp(args[0]):
		g.help(out)
		return nil
	case args[0] == "help":
		return help(append([]string{g.name}, args[1:]...), out, errOut)
	}
	if c := commandNamed(g.commands, args[0]); c != nil {
		return c.run(ctx, args[1:], out, errOut, getenv, now)
	}
	fmt.Fprintf(errOut, "pixctl %s: unknown command %q\n\n", g.name, args[0])
	g.help(errOut)
	return cli.Exit(cli.ExitUsage)
}

// help prints the group's usage.
func (g *group) help(w io.Writer) {
	fmt.Fprintf(w, "usage: pixctl %s <command> [flags]\n\n%s.\n\ncommands:\n", g.name, g.summary)
	for _, c := range g.commands {
		fmt.Fprintf(w, "  %-16s %s\n", c.name, c.summary)
	}
	fmt.Fprintf(w, "\npixctl help %s <command> prints a command's flags.\n", g.name)
}

// apiClient is the client of the API the invocation's settings name.
// Settings that do not parse are usage errors.
func (inv *invocation) apiClient() (*apiClient, error) {
	key, err := webhooksig.ClientKey(inv.getenv("WEBHOOK_SECRETS"))
	if err != nil {
		return nil, usageErrorf("WEBHOOK_SECRETS: %w", err)
	}
	dev, err := openDevTokens(inv.getenv)
	if err != nil {
		return nil, usageError(err)
	}
	adminToken, err := adminTokenOf(inv.getenv)
	if err != nil {
		return nil, usageError(err)
	}
	return &apiClient{base: strings.TrimRight(inv.get(apiURLSetting), "/"), signingKey: key, adminToken: adminToken,
		customerToken: inv.getenv(customerTokenSetting.env), dev: dev}, nil
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
