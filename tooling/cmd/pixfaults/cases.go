package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/pixbank/pix/internal/tooling/pspsim"
	"github.com/pixbank/pix/tooling/load"
)

// faultCase injects one fault while the load runs. inject returns when the
// fault is healed, with that moment and a note for the report.
type faultCase struct {
	name string
	// outgoing: the case sends outgoing PIX (POST /pix) beside the
	// webhooks, and checks them against the PSP's records.
	outgoing bool
	// ownTransfers: an outgoing case that sends its transfers itself
	// (through caseRun.xfers, from the accounts and of the amounts it
	// chooses), without the load of transfers at a rate.
	ownTransfers bool
	// refunds: the case sends refunds of the PIX it credits beside the
	// webhooks, and checks them against the PSP's records.
	refunds bool
	// full: the case runs in the full suite only, not with -smoke (unless
	// -only names it).
	full bool
	// setup, if set, runs before the load (the PSP's behaviours for the
	// case's keys, say).
	setup  func(ctx context.Context, r *caseRun) error
	inject func(ctx context.Context, r *caseRun) (healed time.Time, note string, err error)
	// check adds the case's own verdicts after the common invariants.
	check func(ctx context.Context, r *caseRun, o *outcome) []string
}

// caseRun is what a case's functions work with.
type caseRun struct {
	st   *stack
	s    settings
	sess *load.Session
	// xfers and keys are the outgoing PIX of an outgoing case (nil and
	// zero otherwise).
	xfers *load.Transfers
	keys  caseKeys
	// refunds is the refund load of a refund case (nil otherwise);
	// refundPIX how many of the run's PIX have a refund behaviour set, and
	// refundModes the mode each class of them was last set to.
	refunds     *load.Refunds
	refundPIX   int64
	refundModes map[string]pspsim.RefundMode
	// facts are what inject learned for check (how many answers were
	// lost, ...).
	facts map[string]int
	// noTokenFrom and noTokenTo are when a token case's calls could have
	// no token (see noTokenWindow).
	noTokenFrom, noTokenTo time.Time
	// simPix are the PIX the simulator was told it received, and
	// dropStart, dropEnd when its webhooks were dropped (the webhook-drop
	// case).
	simPix             []simPix
	dropStart, dropEnd time.Time
	// burst is the catch-up burst case's (catchUpBurst).
	burst burstTimes
	// dictOutage is the MED case's (dictOutage).
	dictOutage *dictOutageRun
}

func cases(s settings) []faultCase {
	return append([]faultCase{
		{name: "kill -9 the worker mid-load, restart it", inject: func(ctx context.Context, r *caseRun) (time.Time, string, error) {
			r.st.worker.kill9()
			time.Sleep(2 * time.Second)
			return time.Now(), "worker down 2 s", r.st.worker.start()
		}},
		{name: "kill -9 the API mid-load, restart it", inject: func(ctx context.Context, r *caseRun) (time.Time, string, error) {
			st := r.st
			st.api.kill9()
			time.Sleep(2 * time.Second)
			if err := st.api.start(); err != nil {
				return time.Now(), "", err
			}
			err := st.waitReady(ctx)
			return time.Now(), "API down 2 s; the load resends unacknowledged webhooks", err
		}},
		{name: fmt.Sprintf("Temporal stopped for %s mid-load, restarted", s.temporalDown), inject: func(ctx context.Context, r *caseRun) (time.Time, string, error) {
			r.st.temporal.Stop()
			time.Sleep(r.s.temporalDown)
			err := r.st.temporal.Restart()
			return time.Now(), "webhooks acknowledged throughout", err
		}},
		{name: fmt.Sprintf("PostgreSQL stopped for %s mid-load, restarted", s.postgresDown), inject: func(ctx context.Context, r *caseRun) (time.Time, string, error) {
			s := r.s
			if err := load.Shell(ctx, s.pgStop); err != nil {
				return time.Now(), "", err
			}
			time.Sleep(s.postgresDown)
			err := load.Shell(ctx, s.pgStart)
			return time.Now(), "", err
		}, check: func(_ context.Context, _ *caseRun, o *outcome) []string {
			if o.errors["http 503"] == 0 {
				return []string{"no webhook was answered 503 while PostgreSQL was down"}
			}
			o.note = fmt.Sprintf("%d answers 503 while down, resent until acknowledged", o.errors["http 503"])
			return nil
		}},
		{name: fmt.Sprintf("%d copies of one PIX at the same instant", s.copies), inject: func(ctx context.Context, r *caseRun) (time.Time, string, error) {
			st, s := r.st, r.s
			b := r.sess.Send(ctx, 1, s.copies)
			var problems []string
			if b.Acked != int64(s.copies) {
				problems = append(problems, fmt.Sprintf("%d of %d copies acknowledged", b.Acked, s.copies))
			}
			if b.Firsts != 1 {
				problems = append(problems, fmt.Sprintf("%d copies answered as the first delivery (want 1)", b.Firsts))
			}
			var deliveries int
			if err := st.pool.QueryRow(ctx, `SELECT deliveries FROM inbox_messages WHERE end_to_end_id = $1`, b.EndToEndID).Scan(&deliveries); err != nil {
				return time.Now(), "", err
			}
			if deliveries != s.copies {
				problems = append(problems, fmt.Sprintf("deliveries = %d (want %d)", deliveries, s.copies))
			}
			if len(problems) > 0 {
				return time.Now(), "", fmt.Errorf("%s", strings.Join(problems, "; "))
			}
			return time.Now(), fmt.Sprintf("%d acknowledged, 1 first delivery, deliveries = %d", b.Acked, deliveries), nil
		}},
		{name: fmt.Sprintf("an account row locked by another session for %s", s.lockFor), inject: lockAccount},
		{name: "SIGTERM the API and the worker mid-load (graceful stop), restart them", inject: gracefulStop,
			check: func(_ context.Context, _ *caseRun, o *outcome) []string {
				// A draining API still answers what it takes; only a
				// closed port (the restart's gap) may refuse.
				var problems []string
				for k, n := range o.errors {
					if strings.HasPrefix(k, "http 5") {
						problems = append(problems, fmt.Sprintf("%d webhooks answered %s during the graceful stop", n, k))
					}
				}
				return problems
			}},
	}, slices.Concat(outgoingCases(s), refundCases(s), pspAuthCases(s), medCases(s))...)
}

// gracefulStop stops the API and the worker with SIGTERM at the same
// moment, as a deployment does: the API answers /readyz 503 while it goes
// on serving, then finishes its in-flight requests; the worker lets its
// running activities finish. Both must exit on their own with status 0; the
// load resends what was not acknowledged, and the common invariants say
// whether anything acknowledged was lost.
func gracefulStop(ctx context.Context, r *caseRun) (time.Time, string, error) {
	st := r.st
	type exit struct {
		name   string
		code   int
		killed bool
		took   time.Duration
	}
	exits := make(chan exit, 2)
	for _, p := range []*process{st.api, st.worker} {
		go func() {
			began := time.Now()
			code, killed := p.terminate()
			exits <- exit{p.name, code, killed, time.Since(began)}
		}()
	}
	var problems, notes []string
	for range 2 {
		e := <-exits
		switch {
		case e.killed:
			problems = append(problems, fmt.Sprintf("the %s did not stop within 20 s of SIGTERM and was killed", e.name))
		case e.code != 0:
			problems = append(problems, fmt.Sprintf("the %s exited with status %d after SIGTERM", e.name, e.code))
		}
		notes = append(notes, fmt.Sprintf("%s stopped in %s", e.name, e.took.Round(100*time.Millisecond)))
	}
	if err := st.worker.start(); err != nil {
		return time.Now(), "", err
	}
	if err := st.api.start(); err != nil {
		return time.Now(), "", err
	}
	if err := st.waitReady(ctx); err != nil {
		return time.Now(), "", err
	}
	slices.Sort(notes)
	if len(problems) > 0 {
		return time.Now(), "", fmt.Errorf("%s", strings.Join(problems, "; "))
	}
	return time.Now(), strings.Join(notes, ", ") + ", exit 0", nil
}

// lockAccount holds account 0's row locked while a PIX for it arrives, and
// checks that the other accounts' PIX were credited meanwhile and that the
// locked account's PIX was credited after the lock.
func lockAccount(ctx context.Context, r *caseRun) (time.Time, string, error) {
	st, s, sess := r.st, r.s, r.sess
	tx, err := st.pool.Begin(ctx)
	if err != nil {
		return time.Now(), "", err
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // rolled back below; this is for the error paths
	if _, err := tx.Exec(ctx, `SELECT 1 FROM accounts WHERE id = $1 FOR UPDATE`, load.AccountID(sess.RunID(), 0)); err != nil {
		return time.Now(), "", err
	}
	lockedAt := time.Now()
	b := sess.Send(ctx, 0, 1)
	time.Sleep(time.Until(lockedAt.Add(s.lockFor)))
	// The lock goes as the server rolls back, before its answer reaches
	// us: a credit waiting on it may commit before Rollback returns (seen
	// once on a loaded machine). The check below holds the credit to the
	// instant the release began; the recovery counts from its end.
	releasing := time.Now()
	if err := tx.Rollback(ctx); err != nil {
		return time.Now(), "", err
	}
	released := time.Now()

	var others int
	if err := st.pool.QueryRow(ctx, `
		SELECT count(*) FROM pix_credits WHERE starts_with(end_to_end_id, $1) AND account_id <> $2
		AND credited_at > $3 AND credited_at < $4`,
		load.EndToEndPrefix(sess.RunID()), load.AccountID(sess.RunID(), 0), lockedAt, released).Scan(&others); err != nil {
		return released, "", err
	}
	if others == 0 {
		return released, "", fmt.Errorf("no other account was credited while the row was locked")
	}
	if _, err := load.Drain(ctx, st.pool, sess.RunID(), 2*time.Minute); err != nil {
		return released, "", err
	}
	var creditedAt time.Time
	var attempts int
	if err := st.pool.QueryRow(ctx, `
		SELECT c.credited_at, m.attempts FROM pix_credits c JOIN inbox_messages m USING (end_to_end_id) WHERE c.end_to_end_id = $1`,
		b.EndToEndID).Scan(&creditedAt, &attempts); err != nil {
		return released, "", fmt.Errorf("the locked account's PIX: %w", err)
	}
	if creditedAt.Before(releasing) {
		return released, "", fmt.Errorf("the locked account's PIX was credited before the lock was released")
	}
	return released, fmt.Sprintf("%d other credits during the lock; the locked account's PIX credited after %d attempts", others, attempts), nil
}
