// Command pixd is the PIX credit service. One binary, one role per run:
//
//	pixd api       HTTP API (webhook inbox, queries, admin)
//	pixd worker    Temporal worker running the workflows, the dispatchers and the outbox relay
//	pixd migrate   apply the embedded database migrations and exit (also: pixd migrate up)
//	pixd migrate status
//	               print each migration, applied or pending, and what needs a
//	               human; exit 0 when current, 5 when some are pending, 4 when
//	               something needs a human, 3 when it could not ask (docs/cli.md)
//	pixd dev       migrate, open the demo accounts, and run api and worker in one process
//	pixd temporal-setup
//	               register the PIX search attributes on the Temporal namespace
//	               (needs the operator's permission) and exit
//	pixd search-attribute-flags
//	               print the `temporal server start-dev` flags that register them
//	pixd healthcheck URL
//	               GET URL and exit 0 on a 2xx answer: the container's
//	               healthcheck (the image has no shell nor curl)
//	pixd version   print the build: version, revision, Go toolchain
//	pixd help [command]
//	               usage (so do -h and --help, after a command too), with the
//	               variables each role reads; reads no configuration
//
// Configuration comes from the environment; see docs/configuration.md. Exit
// statuses (one table with pixctl's): 0 done, 1 failed, 2 usage, 3 could
// not ask, 4 needs a human, 5 pending; docs/cli.md.
package main

import (
	"github.com/pixbank/pix/cmd/pixd/app"
	"github.com/pixbank/pix/internal/cli"
)

func main() { cli.Main("pixd", app.Run) }
