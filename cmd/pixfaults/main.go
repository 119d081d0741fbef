// Command pixfaults runs the fault suite: the service as separate processes
// (API with dispatcher, worker, a Temporal dev server that keeps its state in
// a file, PostgreSQL), each case under load from internal/load, bounded in
// time, on loopback only. After each case the invariants are checked in the
// database and the recovery time is reported: from the moment the fault was
// healed to the credit of the last PIX acknowledged before that moment.
//
// scripts/faults.sh (make faults) prepares the binaries and a PostgreSQL
// cluster of its own (which the PostgreSQL case restarts) and runs it.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/pixbank/pix/internal/cli"
	"github.com/pixbank/pix/internal/webhooksig"
)

func main() {
	cli.Main("pixfaults", func(ctx context.Context, args []string) error { return run(ctx, args, os.Stdout) })
}

// settings are the suite's knobs; -smoke shrinks them for CI.
type settings struct {
	rate            float64
	loadFor         time.Duration
	faultAfter      time.Duration
	temporalDown    time.Duration
	postgresDown    time.Duration
	lockFor         time.Duration
	copies          int
	accounts        int
	drainTimeout    time.Duration
	only            string
	pgStop, pgStart string
	// signingKey signs the load's webhooks (the first secret of
	// WEBHOOK_SECRETS, which the API under test reads too).
	signingKey []byte
}

func run(ctx context.Context, args []string, out io.Writer) error {
	s := settings{rate: 20, loadFor: 40 * time.Second, faultAfter: 10 * time.Second, temporalDown: 30 * time.Second,
		postgresDown: 10 * time.Second, lockFor: 20 * time.Second, copies: 1000, accounts: 50, drainTimeout: 5 * time.Minute}
	fs := flag.NewFlagSet("pixfaults", flag.ContinueOnError)
	smoke := fs.Bool("smoke", false, "short, correctness-only version (CI)")
	dir := fs.String("dir", ".data/faults", "working directory for logs and state")
	fs.StringVar(&s.only, "only", "", "comma-separated case numbers to run (default: all)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *smoke {
		s.rate, s.loadFor, s.faultAfter, s.temporalDown, s.postgresDown, s.lockFor = 10, 12*time.Second, 3*time.Second, 8*time.Second, 4*time.Second, 8*time.Second
	}
	for _, v := range []string{"PIXD", "TEMPORAL_CLI", "DATABASE_URL", "PIX_FAULTS_PG_STOP", "PIX_FAULTS_PG_START"} {
		if os.Getenv(v) == "" {
			return fmt.Errorf("%s is not set; run scripts/faults.sh", v)
		}
	}
	s.pgStop, s.pgStart = os.Getenv("PIX_FAULTS_PG_STOP"), os.Getenv("PIX_FAULTS_PG_START")
	var err error
	if s.signingKey, err = webhooksig.ClientKey(os.Getenv("WEBHOOK_SECRETS")); err != nil {
		return fmt.Errorf("WEBHOOK_SECRETS: %w", err)
	}

	st, err := startStack(ctx, *dir)
	if err != nil {
		return err
	}
	defer st.close()

	var rows []outcome
	for i, c := range cases(s) {
		if s.only != "" && !strings.Contains(","+s.only+",", fmt.Sprintf(",%d,", i+1)) {
			continue
		}
		fmt.Fprintf(out, "case %d: %s ...\n", i+1, c.name)
		o := runCase(ctx, st, s, c)
		o.number = i + 1
		fmt.Fprintf(out, "  %s\n", o.summary())
		rows = append(rows, o)
		if ctx.Err() != nil {
			break
		}
	}

	fmt.Fprintln(out)
	tw := tabwriter.NewWriter(out, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "#\tCASE\tRESULT\tPIX\tCREDITS\tREQUESTS\tNON-2XX / TRANSPORT ERRORS\tRECOVERY\tNOTE")
	failed := 0
	for _, o := range rows {
		result := "pass"
		if !o.pass() {
			result = "FAIL"
			failed++
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%d\t%d\t%s\t%s\t%s\n", o.number, o.name, result, o.inv.InboxRows, o.inv.Credits, o.requests,
			o.errorsText(), o.recovery.Round(100*time.Millisecond), o.note)
	}
	tw.Flush()
	fmt.Fprintf(out, "%d passed, %d failed\n", len(rows)-failed, failed)
	if failed > 0 {
		return fmt.Errorf("%d fault cases failed", failed)
	}
	return nil
}
