package app

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"go.opentelemetry.io/otel"
	"golang.org/x/sync/errgroup"

	"github.com/pixbank/pix/internal/cli"
	"github.com/pixbank/pix/internal/config"
	"github.com/pixbank/pix/internal/logging"
	"github.com/pixbank/pix/workflows"
)

// The pixd command lives here rather than in package main, so that its tests
// share this package's test binary: a main package's tests link a binary of
// their own, the size of the whole service.

const usage = "usage: pixd api|worker|migrate [up|status]|dev|temporal-setup|search-attribute-flags|healthcheck URL"

// Run runs the pixd command args (without the program's name): the roles,
// the migrations and the set-up commands the package doc of cmd/pixd lists.
// An ExitStatus error means its outcome is printed already.
func Run(ctx context.Context, args []string) error {
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
	if args[0] == "worker" || args[0] == "dev" {
		// Before connecting to anything: a worker without its broker is
		// a mistake of the deployment, not a failure to retry.
		if err := cfg.CheckWorker(); err != nil {
			return err
		}
	}
	log := logging.New(os.Stderr, cfg.LogLevel).With("role", args[0])
	// The OpenTelemetry SDK's own failures (a collector that can't be
	// reached) are logged as the service's lines.
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) { log.Warn("opentelemetry", "error", err) }))
	a, err := New(ctx, cfg, log, WithServiceName("pixd-"+args[0]))
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
