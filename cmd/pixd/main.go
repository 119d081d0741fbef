// Command pixd is the PIX credit service. One binary, one role per run:
//
//	pixd api       HTTP API (webhook inbox, queries, admin) and the dispatcher
//	pixd worker    Temporal worker running the credit workflows
//	pixd migrate   apply the embedded database migrations and exit (also: pixd migrate up)
//	pixd migrate status
//	               print each migration, applied or pending, and what needs a
//	               human; exit 0 when current, 3 when some are pending, 4 when
//	               something needs a human (docs/operations.md)
//	pixd dev       migrate, open the demo accounts, and run api and worker in one process
//	pixd temporal-setup
//	               register the PIX search attributes on the Temporal namespace
//	               (needs the operator's permission) and exit
//	pixd search-attribute-flags
//	               print the `temporal server start-dev` flags that register them
//	pixd healthcheck URL
//	               GET URL and exit 0 on a 2xx answer: the container's
//	               healthcheck (the image has no shell nor curl)
//
// Configuration comes from the environment; see docs/configuration.md.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"go.opentelemetry.io/otel"
	"golang.org/x/sync/errgroup"

	"github.com/pixbank/pix/cmd/pixd/app"
	"github.com/pixbank/pix/internal/cli"
	"github.com/pixbank/pix/internal/config"
	"github.com/pixbank/pix/internal/logging"
	"github.com/pixbank/pix/workflows"
)

const usage = "usage: pixd api|worker|migrate [up|status]|dev|temporal-setup|search-attribute-flags|healthcheck URL"

func main() {
	cli.Main("pixd", func(ctx context.Context, args []string) error {
		err := run(ctx, args)
		if status, ok := errors.AsType[exitStatus](err); ok {
			os.Exit(int(status)) // what it means is printed already; run's deferred closes have run
		}
		return err
	})
}

func run(ctx context.Context, args []string) error {
	if len(args) > 0 && args[0] == "healthcheck" {
		if len(args) != 2 {
			return errors.New("usage: pixd healthcheck URL")
		}
		return cli.Probe(ctx, args[1])
	}
	migrate := "up"
	switch {
	case len(args) == 2 && args[0] == "migrate" && (args[1] == "up" || args[1] == "status"):
		migrate = args[1]
	case len(args) != 1:
		return errors.New(usage)
	}
	if args[0] == "search-attribute-flags" {
		fmt.Println(strings.Join(workflows.DevServerFlags(), " "))
		return nil
	}
	cfg, err := config.Load()
	if err != nil {
		return err
	}
	log := logging.New(os.Stderr, cfg.LogLevel).With("role", args[0])
	// The OpenTelemetry SDK's own failures (a collector that can't be
	// reached) are logged as the service's lines.
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { log.Warn("opentelemetry", "error", err) }))
	a, err := app.New(ctx, cfg, log, app.WithServiceName("pixd-"+args[0]))
	if err != nil {
		return err
	}
	defer a.Close()

	switch args[0] {
	case "api":
		return a.RunAPI(ctx)
	case "worker":
		return a.RunWorker(ctx)
	case "migrate":
		if migrate == "status" {
			report, err := a.MigrationStatus(ctx)
			if err != nil {
				return err
			}
			return printMigrationStatus(os.Stdout, report)
		}
		return a.Migrate(ctx)
	case "temporal-setup":
		return a.RegisterSearchAttributes(ctx)
	case "dev":
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
	default:
		return fmt.Errorf("unknown command %q; %s", args[0], usage)
	}
}
