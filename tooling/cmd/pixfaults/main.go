// Command pixfaults runs the fault suite: the service as separate processes
// (API, worker with the dispatchers and the outbox relay, a Temporal dev
// server that keeps its state in a file, PostgreSQL), with the PSP
// simulator and a NATS server run inside this process (so that a case can
// stop and start them without losing their state), each case under load
// from tooling/load, bounded in time, on loopback only. Cases 1-7 send
// webhooks; cases 8-14 send outgoing PIX too, with some Pix keys turned
// against the bank at the PSP; cases 15-20 send refunds (devoluções) of the
// PIX credited, with some PIX's devoluções turned against the bank; cases
// 21-23 fault the PSP's security and its own record: its OAuth 2.0 token
// endpoint down, its webhooks dropped (the catch-up must credit their
// PIX), our client secret wrong then right; case 24 a burst of 3,000 PIX
// the catch-up alone can credit, from a PSP that lists 2 a page; case 25
// the DICT down while MED's infraction reports arrive and outgoing PIX
// leave the reported accounts. The worker meets
// the simulator as a real PSP (OAuth 2.0, mutual TLS), and the DICT
// simulator as the DICT (mutual TLS, signatures both ways), in every case. After
// each case the invariants are checked in the database, against the PSP's
// records and against what a durable JetStream consumer received, and the
// recovery time is reported: from the moment the fault was healed to the
// credit, the transfer's or refund's end or the event's publication,
// whichever is last, of what was under way before it.
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
	rate         float64
	loadFor      time.Duration
	faultAfter   time.Duration
	temporalDown time.Duration
	postgresDown time.Duration
	lockFor      time.Duration
	copies       int
	accounts     int
	drainTimeout time.Duration
	// The outgoing cases': transfers per second beside the webhooks; how
	// long the PSP and NATS are down; how long each PSP misbehaviour
	// lasts; the slow settlement of the Temporal case; the outage that
	// builds the relay's backlog; the drains of transfers and events.
	transferRate  float64
	pspDown       time.Duration
	natsDown      time.Duration
	faultFor      time.Duration
	settleSlow    time.Duration
	backlogFor    time.Duration
	transferDrain time.Duration
	eventDrain    time.Duration
	// The refund cases': refunds per second beside the webhooks, and the
	// drain of refunds.
	refundRate  float64
	refundDrain time.Duration
	// The PSP security cases': how long the token endpoint is down, the
	// webhooks dropped, our client secret wrong.
	tokenDown      time.Duration
	webhookDrop    time.Duration
	secretWrongFor time.Duration
	// tokenHitWait is how much longer than tokenDown the token endpoint
	// stays down, and than secretWrongFor the secret stays wrong, while
	// no call of a kind has failed for want of a token yet (a loaded
	// machine's worker calls the PSP late; see keepFault).
	tokenHitWait time.Duration
	// The MED case's: how long the DICT is down, and how long after it
	// every report must be acknowledged (the saga's retries back off to
	// 32 s, the lister's too).
	dictDown, dictRecovery time.Duration
	smoke                  bool
	only                   string
	pgStop, pgStart        string
	// signingKey signs the load's webhooks (the first secret of
	// WEBHOOK_SECRETS, which the API under test reads too).
	signingKey []byte
}

func run(ctx context.Context, args []string, out io.Writer) error {
	s := settings{rate: 20, loadFor: 40 * time.Second, faultAfter: 10 * time.Second, temporalDown: 30 * time.Second,
		postgresDown: 10 * time.Second, lockFor: 20 * time.Second, copies: 1000, accounts: 50, drainTimeout: 5 * time.Minute,
		transferRate: 5, pspDown: 30 * time.Second, natsDown: 30 * time.Second, faultFor: 15 * time.Second,
		settleSlow: 10 * time.Second, backlogFor: 5 * time.Second, transferDrain: 5 * time.Minute, eventDrain: 2 * time.Minute,
		refundRate: 5, refundDrain: 5 * time.Minute, tokenDown: 30 * time.Second, webhookDrop: 2 * time.Minute, secretWrongFor: 20 * time.Second,
		tokenHitWait: time.Minute, dictDown: 30 * time.Second, dictRecovery: time.Minute}
	fs := flag.NewFlagSet("pixfaults", flag.ContinueOnError)
	smoke := fs.Bool("smoke", false, "short, correctness-only version (CI)")
	dir := fs.String("dir", ".data/faults", "working directory for logs and state")
	fs.StringVar(&s.only, "only", "", "comma-separated case numbers to run (default: all)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *smoke {
		s.rate, s.loadFor, s.faultAfter, s.temporalDown, s.postgresDown, s.lockFor = 10, 12*time.Second, 3*time.Second, 8*time.Second, 4*time.Second, 8*time.Second
		s.transferRate, s.pspDown, s.natsDown, s.faultFor, s.settleSlow, s.backlogFor = 3, 5*time.Second, 5*time.Second, 4*time.Second, 4*time.Second, 3*time.Second
		s.transferDrain, s.eventDrain = 90*time.Second, time.Minute
		s.refundRate, s.refundDrain, s.smoke = 3, 2*time.Minute, true
		// The token endpoint down 20 s: a token is sent 6 s after its
		// fetch at most (pspTokenUsable), so from 10 s into the outage no
		// call has one at all (see noTokenWindow). The webhooks dropped 15 s: three catch-up runs
		// fall in it.
		s.tokenDown, s.webhookDrop, s.secretWrongFor = 20*time.Second, 15*time.Second, 8*time.Second
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
		if s.only == "" && s.smoke && c.full {
			continue
		}
		fmt.Fprintf(out, "case %d: %s ...\n", i+1, c.name)
		began := time.Now()
		o := runCase(ctx, st, s, c)
		if o.onlyMissed() && ctx.Err() == nil {
			// Inconclusive, not failed: said, and run once more; the
			// second run's result is the case's.
			fmt.Fprintf(out, "  inconclusive, run again: %s (took %s)\n", o.summary(), time.Since(began).Round(time.Second))
			began = time.Now()
			o = runCase(ctx, st, s, c)
			o.note = strings.TrimPrefix(o.note+"; run twice, the first run's fault did not happen", "; ")
		}
		o.number = i + 1
		fmt.Fprintf(out, "  %s (case took %s)\n", o.summary(), time.Since(began).Round(time.Second))
		rows = append(rows, o)
		if ctx.Err() != nil {
			break
		}
	}

	fmt.Fprintln(out)
	tw := tabwriter.NewWriter(out, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "#\tCASE\tRESULT\tPIX\tCREDITS\tTRANSFERS\tREFUNDS\tEVENTS\tREQUESTS\tNON-2XX / TRANSPORT ERRORS\tRECOVERY\tNOTE")
	failed := 0
	for _, o := range rows {
		result := "pass"
		if !o.pass() {
			result = "FAIL"
			failed++
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%d\t%s\t%s\t%d\t%d\t%s\t%s\t%s\n", o.number, o.name, result, o.inv.InboxRows, o.inv.Credits,
			o.transfersText(), o.refundsText(), o.events.received, o.requests, o.errorsText(), o.recovery.Round(100*time.Millisecond), o.note)
	}
	tw.Flush()
	fmt.Fprintf(out, "%d passed, %d failed\n", len(rows)-failed, failed)
	if failed > 0 {
		return fmt.Errorf("%d fault cases failed", failed)
	}
	return nil
}
