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
	"os"

	"github.com/pixbank/pix/cmd/pixd/app"
	"github.com/pixbank/pix/internal/cli"
)

func main() {
	cli.Main("pixd", func(ctx context.Context, args []string) error {
		err := app.Run(ctx, args)
		if status, ok := errors.AsType[app.ExitStatus](err); ok {
			os.Exit(int(status)) // what it means is printed already; Run's deferred closes have run
		}
		return err
	})
}
