package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/pixbank/pix/internal/cli"
	"github.com/pixbank/pix/internal/codec"
	"github.com/pixbank/pix/internal/config"
	"github.com/pixbank/pix/internal/logging"
	"github.com/pixbank/pix/internal/runconf"
	"github.com/pixbank/pix/saga/catchup"
)

// The settings of the commands that talk to Temporal, as pixd reads them
// (its TEMPORAL_TLS_*, TEMPORAL_API_KEY and TEMPORAL_CODEC_KEYS too, from
// the environment only).
var (
	temporalAddressSetting   = setting{flag: "temporal-address", env: "TEMPORAL_ADDRESS", def: config.Default().TemporalAddress, usage: "the Temporal frontend the workers use"}
	temporalNamespaceSetting = setting{flag: "temporal-namespace", env: "TEMPORAL_NAMESPACE", def: config.Default().TemporalNamespace, usage: "the workers' Temporal namespace"}
	temporalQueueSetting     = setting{flag: "temporal-task-queue", env: "TEMPORAL_TASK_QUEUE", def: config.Default().TemporalTaskQueue,
		usage: "the workers' TEMPORAL_TASK_QUEUE, whose maintenance queue runs the catch-up"}
)

var pspCatchUpCommand = &command{
	name: "psp catchup", args: "-from <RFC 3339> -to <RFC 3339> [flags]",
	summary: "list one window of the PSP's record of PIX received into the inbox",
	about: `Lists the PIX the PSP received from -from to -to (both included) in its own
record (GET /pix, every page) into the inbox, as the scheduled catch-up does
(docs/psp.md, "The catch-up"): a PIX no webhook told us of is stored and
credited, once; one stored already is compared and changes nothing. A
window larger than one listing takes is listed part by part. For a window
the schedule never covered (older than PSP_CATCHUP_LOOKBACK at its first
run, say): the schedule itself needs no help, whatever its lag. It runs on
the workers, through Temporal (the workflow
pix-psp-catchup-window:<task queue>:<from>/<to>; the same window asked again
while it runs is the same run), waits for it, and prints how many PIX were
listed, new, duplicate, mismatched and refused, and whether it advanced the
scheduled catch-up's covered end: a window that starts at or before that
end advances it, part by part, under the same fence as the schedule's runs
(only forwards, only from the end it read, never past the database's
clock); one that starts after it moves nothing.

It reads the workers' Temporal settings from the environment, as pixd does
(TEMPORAL_TLS_*, TEMPORAL_API_KEY, TEMPORAL_CODEC_KEYS: the run's payloads
are encrypted when the workers' are).
`,
	problem:  "the PSP listed PIX that were not stored: mismatched (stored with other money fields) or refused (each is in the workers' log with its end_to_end_id)",
	settings: []setting{temporalAddressSetting, temporalNamespaceSetting, temporalQueueSetting},
	output:   true,
	define: func(fs *flag.FlagSet) runner {
		from := fs.String("from", "", "the window's start, RFC 3339 (2026-12-01T00:00:00Z)")
		to := fs.String("to", "", "the window's end, RFC 3339, after -from")
		wait := fs.Duration("wait", 30*time.Minute, "how long to wait for the run to end (it goes on on the workers after)")
		return func(ctx context.Context, inv *invocation, args []string) error {
			if len(args) > 0 {
				return usageErrorf("unexpected argument %q", args[0])
			}
			start, end, err := catchUpWindow(*from, *to)
			if err != nil {
				return usageError(err)
			}
			if *wait <= 0 {
				return usageErrorf("-wait: must be positive")
			}
			cfg, err := config.FromLookup(func(name string) (string, bool) {
				v := inv.getenv(name)
				return v, v != ""
			})
			if err != nil {
				return usageError(err)
			}
			c, err := dialTemporal(ctx, cfg)
			if err != nil {
				return unavailable(err)
			}
			defer c.Close()
			return pspCatchUp(ctx, c, cfg.TaskQueues(), start, end, *wait, inv.json, inv.out)
		}
	},
}

// catchUpWindow reads -from and -to.
func catchUpWindow(from, to string) (start, end time.Time, err error) {
	if from == "" || to == "" {
		return start, end, errors.New("-from and -to are required")
	}
	if start, err = time.Parse(time.RFC3339, from); err != nil {
		return start, end, fmt.Errorf("-from: %q is not an RFC 3339 time such as 2026-12-01T00:00:00Z", from)
	}
	if end, err = time.Parse(time.RFC3339, to); err != nil {
		return start, end, fmt.Errorf("-to: %q is not an RFC 3339 time such as 2026-12-02T00:00:00Z", to)
	}
	if !end.After(start) {
		return start, end, errors.New("-to must be after -from")
	}
	if start.Nanosecond() != 0 || end.Nanosecond() != 0 {
		// The catch-up lists whole seconds (a PSP may read inicio and fim
		// to the second): a fraction would be widened, and the workflow
		// named by another window than the one asked.
		return start, end, errors.New("-from and -to are whole seconds (2026-12-01T00:00:00Z)")
	}
	return start, end, nil
}

// dialTemporal connects to the workers' Temporal as pixd does: address,
// namespace, TLS and API key, and their payload codec.
func dialTemporal(ctx context.Context, cfg config.Config) (client.Client, error) {
	opts, err := cfg.TemporalClientOptions()
	if err != nil {
		return nil, err
	}
	opts.Logger = logging.Temporal(logging.New(io.Discard, "error"))
	if cfg.TemporalCodecKeys != nil {
		codec.NewConverters(cfg.PayloadCodec()).ApplyTo(&opts)
	}
	c, err := client.DialContext(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("temporal at %s: %w", cfg.TemporalAddress, err)
	}
	return c, nil
}

// coveredSaid says what the run did to the scheduled catch-up's covered
// end.
func coveredSaid(r catchup.Result) string {
	switch {
	case r.Advanced && r.CoveredUntil != nil:
		return "advanced to " + r.CoveredUntil.UTC().Format(time.RFC3339)
	case r.Window.CoveredFrom == nil:
		return "not moved: the window starts after it (or none was ever covered)"
	}
	return "not moved: already at or past the window's end, or moved meanwhile by the schedule's run (" +
		r.Window.CoveredFrom.UTC().Format(time.RFC3339) + " when this run began)"
}

// errCatchUpUnstored: the PSP listed PIX the inbox did not store.
var errCatchUpUnstored = errors.New("the PSP listed PIX that were not stored")

// pspCatchUp runs the catch-up of one window and prints what it found.
func pspCatchUp(ctx context.Context, c client.Client, queues runconf.TaskQueues, start, end time.Time, wait time.Duration, asJSON bool, out io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	run, err := catchup.StartWindow(ctx, c, queues, start, end)
	if err != nil {
		return unavailable(fmt.Errorf("start the catch-up: %w", err))
	}
	var result catchup.Result
	if err := run.Get(ctx, &result); err != nil {
		return unavailable(fmt.Errorf("the catch-up %s did not finish: %w", run.GetID(), err))
	}
	counts := result.Counts
	covered := coveredSaid(result)
	if asJSON {
		if err := json.NewEncoder(out).Encode(struct {
			WorkflowID   string     `json:"workflow_id"`
			Start        time.Time  `json:"from"`
			End          time.Time  `json:"to"`
			Parts        int        `json:"parts"`
			Pages        int        `json:"pages"`
			Listed       int        `json:"listed"`
			New          int        `json:"new"`
			Duplicate    int        `json:"duplicate"`
			Mismatched   int        `json:"mismatched"`
			Refused      int        `json:"refused"`
			Advanced     bool       `json:"advanced_covered_end"`
			CoveredUntil *time.Time `json:"covered_until,omitempty"`
		}{run.GetID(), start, end, result.Parts, counts.Pages, counts.Listed, counts.New, counts.Duplicate, counts.Mismatched, counts.Refused,
			result.Advanced, result.CoveredUntil}); err != nil {
			return err
		}
	} else {
		tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
		row := func(k string, v any) { fmt.Fprintf(tw, "%s\t%v\n", k, v) }
		row("workflow", run.GetID())
		row("window", start.Format(time.RFC3339)+" .. "+end.Format(time.RFC3339))
		row("parts", result.Parts)
		row("pages", counts.Pages)
		row("listed", counts.Listed)
		row("new", counts.New)
		row("duplicate", counts.Duplicate)
		row("mismatched", counts.Mismatched)
		row("refused", counts.Refused)
		row("covered end", covered)
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if counts.Mismatched > 0 || counts.Refused > 0 {
		return cli.WithStatus(cli.ExitProblem, fmt.Errorf("%w: %d mismatched, %d refused (the workers' log names each end_to_end_id)",
			errCatchUpUnstored, counts.Mismatched, counts.Refused))
	}
	return nil
}
