// Command pspsim runs the PSP simulator (package pspsim): an in-memory PSP
// with the HTTP API that the worker's psp.HTTPClient speaks, told per Pix
// key to accept, reject, time out, fail, lose its answers, answer
// resubmissions 409 or refuse our credentials (PUT /behaviors/{pix_key}).
//
//	PSP_SIM_ADDR          listen address (default 127.0.0.1:8090)
//	PSP_SIM_SETTLE_AFTER  how long an accepted transfer stays pending when
//	                      its key's behaviour does not say (default 100ms)
//	LOG_LEVEL             debug, info, warn, error (default info)
//
// It logs JSON to stderr, one line per request, and shuts down gracefully
// on SIGINT or SIGTERM.
package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/pixbank/pix/internal/cli"
	"github.com/pixbank/pix/internal/logging"
	"github.com/pixbank/pix/internal/pspsim"
)

const usage = "usage: pspsim (configured by PSP_SIM_ADDR, PSP_SIM_SETTLE_AFTER, LOG_LEVEL)"

func main() { cli.Main("pspsim", run) }

func run(ctx context.Context, args []string) error {
	if len(args) != 0 {
		return errors.New(usage)
	}
	addr := cmp.Or(os.Getenv("PSP_SIM_ADDR"), "127.0.0.1:8090")
	var settleAfter time.Duration
	if v := os.Getenv("PSP_SIM_SETTLE_AFTER"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return fmt.Errorf("PSP_SIM_SETTLE_AFTER: want a positive duration such as 200ms, got %q", v)
		}
		settleAfter = d
	}
	log := logging.New(os.Stderr, os.Getenv("LOG_LEVEL")).With("role", "pspsim")
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", addr, err)
	}
	sim := pspsim.New(pspsim.Options{Logger: log, DefaultSettleAfter: settleAfter})
	log.Info("psp simulator listening", "addr", ln.Addr().String())
	return sim.Serve(ctx, ln)
}
