package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"go.opentelemetry.io/otel"
	"golang.org/x/sync/errgroup"

	"github.com/pixbank/pix/internal/buildinfo"
	"github.com/pixbank/pix/internal/cli"
	"github.com/pixbank/pix/internal/config"
	"github.com/pixbank/pix/internal/logging"
	"github.com/pixbank/pix/saga/registry"
	"github.com/pixbank/pix/workflows"
)

// The pixd command lives here rather than in package main, so that its tests
// share this package's test binary: a main package's tests link a binary of
// their own, the size of the whole service.

// command is one of pixd's commands: how it is called, what its help says,
// and the roles whose variables it reads (none: it reads no configuration).
type command struct {
	name    string
	args    string // what follows the name in its usage line
	summary string // its line in pixd help
	about   string // its help, after the usage line
	roles   config.Role
	// nargs are the numbers of arguments it takes.
	nargs []int
}

// commands are pixd's commands, in the order its help lists them.
var commands = []command{
	{name: "api", summary: "the HTTP API: webhook inbox, queries, admin", roles: config.RoleAPI, nargs: []int{0},
		about: "Serves the HTTP API (the PSP webhooks, the customer and admin routes, /metrics,\n/healthz, /readyz) until SIGTERM. It holds no state: scale it out.\n"},
	{name: "worker", summary: "the Temporal worker, the dispatchers, the outbox relay, the Schedules", roles: config.RoleWorker, nargs: []int{0},
		about: "Runs the Temporal workers (credits, transfers, refunds, maintenance), the\ndispatchers and the outbox relay, and keeps the Schedules, until SIGTERM. Claims are exclusive: scale it out.\n"},
	{name: "migrate", args: "[up|status]", summary: "apply the migrations (up), or say where the database stands (status)", roles: config.RoleMigrate, nargs: []int{0, 1},
		about: "pixd migrate (or pixd migrate up) applies the embedded database migrations and\nexits. pixd migrate status prints each migration, applied or pending, and what\nneeds a human, and exits 0 when the database is current, 5 when migrations are\npending, 4 when something needs a human, 3 when it could not ask\n(docs/operations.md, \"Migrations\").\n"},
	{name: "dev", summary: "migrate, open the demo accounts, run api and worker in one process", roles: config.RoleDev, nargs: []int{0},
		about: "Development only: applies the migrations, opens the demo accounts, and runs the\nAPI and the worker in one process until SIGTERM.\n"},
	{name: "temporal-setup", summary: "register the PIX search attributes on the namespace", roles: config.RoleTemporalSetup, nargs: []int{0},
		about: "Registers the PIX search attributes on TEMPORAL_NAMESPACE (the operator's\npermission) and exits.\n"},
	{name: "search-attribute-flags", summary: "print the temporal server start-dev flags that register them", nargs: []int{0},
		about: "Prints the `temporal server start-dev` flags that register the PIX search\nattributes. Reads no configuration.\n"},
	{name: "healthcheck", args: "URL", summary: "GET URL, exit 0 on a 2xx: the container's healthcheck", nargs: []int{1},
		about: "GETs URL and exits 0 on a 2xx answer within 3 s, 1 otherwise: the container's\nhealthcheck (the image has no shell nor curl). Reads no configuration.\n"},
	{name: "version", summary: "print the build: version, revision, Go", nargs: []int{0},
		about: "Prints the binary's version, the VCS revision it was built from (\"(modified)\"\nwhen the work tree had changes) and the Go toolchain. Reads no configuration.\n"},
}

const usageIntro = `usage: pixd <command> [arguments]

The PIX credit service: one binary, one role per process. The roles read their
configuration from the environment (docs/configuration.md); help and version
read none.

commands:
`

// usage prints pixd's usage: its commands, the variables each role uses,
// and the exit statuses.
func usage(w io.Writer) {
	fmt.Fprint(w, usageIntro)
	for _, c := range commands {
		fmt.Fprintf(w, "  %-24s %s\n", strings.TrimSpace(c.name+" "+c.args), c.summary)
	}
	fmt.Fprintf(w, "  %-24s %s\n", "help [command]", "this usage, or a command's (so do -h and --help)")
	fmt.Fprint(w, "\nenvironment: the roles that use each variable (every role checks them all at\nstart: a value that does not parse stops it; docs/configuration.md has each\ndefault and meaning):\n")
	// One line per set of roles, in the order Variables declares them.
	var sets []config.Role
	byRoles := map[config.Role][]string{}
	for _, v := range config.Variables {
		if byRoles[v.Roles] == nil {
			sets = append(sets, v.Roles)
		}
		byRoles[v.Roles] = append(byRoles[v.Roles], v.Name)
	}
	for _, r := range sets {
		fmt.Fprintf(w, "  %s:\n", r)
		wrap(w, "    ", byRoles[r])
	}
	sagaHelp(w)
	fmt.Fprintln(w)
	cli.PrintStatuses(w)
}

// sagaHelp prints what the sagas say of their settings (saga.Descriptor.Help).
func sagaHelp(w io.Writer) {
	for _, d := range registry.All {
		if d.Help == "" {
			continue
		}
		fmt.Fprintf(w, "\n%s:\n", d.Name)
		wrap(w, "  ", strings.Fields(d.Help))
	}
}

// help prints a command's usage.
func (c command) help(w io.Writer) {
	fmt.Fprintf(w, "usage: pixd %s\n\n%s", strings.TrimSpace(c.name+" "+c.args), c.about)
	if c.roles != 0 {
		fmt.Fprint(w, "\nenvironment (docs/configuration.md has each default and meaning; the others\nare checked too: a value that does not parse stops it):\n")
		wrap(w, "  ", config.VariablesOf(c.roles))
	}
	fmt.Fprintln(w)
	cli.PrintStatuses(w)
}

// wrap prints words after indent, as many a line as fit in 80 columns.
func wrap(w io.Writer, indent string, words []string) {
	line := indent
	for _, word := range words {
		if len(line) > len(indent) && len(line)+1+len(word) > 80 {
			fmt.Fprintln(w, line)
			line = indent
		}
		if len(line) > len(indent) {
			line += " "
		}
		line += word
	}
	fmt.Fprintln(w, line)
}

func commandNamed(name string) (command, bool) {
	for _, c := range commands {
		if c.name == name {
			return c, true
		}
	}
	return command{}, false
}

// usageError prints why, and usage, on errOut: exit status 2.
func usageError(errOut io.Writer, why string, usage func(io.Writer)) error {
	fmt.Fprintf(errOut, "pixd: %s\n\n", why)
	usage(errOut)
	return cli.Exit(cli.ExitUsage)
}

// Run runs the pixd command args (without the program's name) on stdout
// and stderr: the roles, the migrations and the set-up commands the
// package doc of cmd/pixd lists. Its error's exit status is cli.Status's.
func Run(ctx context.Context, args []string) error {
	return run(ctx, args, os.Stdout, os.Stderr)
}

// run is Run with its output streams. Help (-h, --help, help, anywhere
// among a command's arguments) prints on out and runs nothing; a usage
// error prints on errOut (exit status 2). Neither reads the configuration:
// only a command that runs does.
func run(ctx context.Context, args []string, out, errOut io.Writer) error {
	switch {
	case len(args) == 0:
		return usageError(errOut, "name a command", usage)
	case cli.IsHelp(args[0]):
		usage(out)
		return nil
	case args[0] == "help":
		switch len(args) {
		case 1:
			usage(out)
			return nil
		case 2:
			if c, ok := commandNamed(args[1]); ok {
				c.help(out)
				return nil
			}
		}
		return usageError(errOut, fmt.Sprintf("no help for %q", strings.Join(args[1:], " ")), usage)
	}
	c, ok := commandNamed(args[0])
	if !ok {
		return usageError(errOut, fmt.Sprintf("unknown command %q", args[0]), usage)
	}
	rest := args[1:]
	for _, a := range rest {
		if cli.IsHelp(a) {
			c.help(out)
			return nil
		}
	}
	migrate := "up"
	switch {
	case !slices.Contains(c.nargs, len(rest)):
		return usageError(errOut, fmt.Sprintf("%s: wrong number of arguments", c.name), c.help)
	case c.name == "migrate" && len(rest) == 1:
		if rest[0] != "up" && rest[0] != "status" {
			return usageError(errOut, fmt.Sprintf("migrate: unknown subcommand %q", rest[0]), c.help)
		}
		migrate = rest[0]
	}
	switch c.name {
	case "healthcheck":
		return cli.Probe(ctx, rest[0])
	case "search-attribute-flags":
		fmt.Fprintln(out, strings.Join(workflows.DevServerFlags(), " "))
		return nil
	case "version":
		fmt.Fprintln(out, "pixd", buildinfo.Read())
		return nil
	}
	return runRole(ctx, c.name, migrate, out)
}

// runRole loads the configuration and runs the role (migrate: migrate up
// or status).
func runRole(ctx context.Context, role, migrate string, out io.Writer) error {
	// The sagas' own settings, read in their packages, are checked as
	// Load's are, before anything is connected, and told with Load's: one
	// start names every mistake (New checks them again for its other
	// callers).
	cfg, err := config.Load()
	if err := errors.Join(err, registry.CheckSettings(os.LookupEnv)); err != nil {
		return err
	}
	if role == "worker" || role == "dev" {
		// Before connecting to anything: a worker without its broker is
		// a mistake of the deployment, not a failure to retry.
		if err := cfg.CheckWorker(); err != nil {
			return err
		}
	}
	log := logging.New(os.Stderr, cfg.LogLevel).With("role", role)
	// The OpenTelemetry SDK's own failures (a collector that can't be
	// reached) are logged as the service's lines.
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { log.Warn("opentelemetry", "error", err) }))
	a, err := New(ctx, cfg, log, WithServiceName("pixd-"+role))
	if err != nil {
		if role == "migrate" && migrate == "status" {
			// A status that could not be asked is not an answer.
			return cli.WithStatus(cli.ExitUnavailable, err)
		}
		return err
	}
	defer a.Close()

	// A service role the fences are no lock against stops the service
	// (checkServiceRole): its error is the process's.
	ctx, refuse := context.WithCancelCause(ctx)
	defer refuse(nil)
	if role == "api" || role == "worker" || role == "dev" {
		go func() { // dev: once it migrated
			if err := a.checkServiceRole(ctx); err != nil {
				refuse(err)
			}
		}()
	}
	err = a.runAs(ctx, role, migrate, out)
	if cause := context.Cause(ctx); errors.Is(cause, errUnfenced) {
		return cause
	}
	return err
}

// runAs runs the role with its App.
func (a *App) runAs(ctx context.Context, role, migrate string, out io.Writer) error {
	switch role {
	case "api":
		return a.RunAPI(ctx)
	case "worker":
		return a.RunWorker(ctx)
	case "migrate":
		if migrate == "status" {
			report, err := a.MigrationStatus(ctx)
			if err != nil {
				return cli.WithStatus(cli.ExitUnavailable, err)
			}
			return printMigrationStatus(out, report)
		}
		return a.Migrate(ctx)
	case "temporal-setup":
		return a.RegisterSearchAttributes(ctx)
	default: // dev
		if err := a.Migrate(ctx); err != nil {
			return err
		}
		if err := a.SeedDemoAccounts(ctx); err != nil {
			return err
		}
		g, ctx := errgroup.WithContext(ctx)
		g.Go(func() error { return a.RunAPI(ctx) })
		g.Go(func() error { return a.RunWorker(ctx) })
		return g.Wait()
	}
}
