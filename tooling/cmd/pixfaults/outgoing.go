package main

import (
	"context"
	"fmt"
	"time"

	"github.com/pixbank/pix/internal/tooling/pspsim"
)

// outgoingCases are the faults of outgoing PIX and of the outbox, each
// under a load of webhooks and of outgoing PIX. Two keys of each case's
// five are fault keys whose PSP behaviour the case sets; besides the
// common invariants (runCase), checkTransfers holds every transfer against
// the PSP's records and the event log holds the outbox against what a
// consumer received.
func outgoingCases(s settings) []faultCase {
	return []faultCase{
		{name: fmt.Sprintf("PSP down %s (its API stopped, its records kept), then back", s.pspDown), outgoing: true, inject: pspDown},
		{name: "PSP loses its answers (lose_response), then answers resubmissions 409 duplicate_transfer", outgoing: true,
			inject: lostAnswers, check: needFacts("answers lost")},
		{name: "PSP hangs (timeout), then answers the resubmissions 401, then recovers", outgoing: true,
			inject: unauthorizedResubmissions, check: needFacts("submissions hung", "submissions answered 401")},
		{name: "kill -9 the worker while submissions hang at the PSP, restart it", outgoing: true, inject: killWorkerMidSubmission},
		{name: fmt.Sprintf("Temporal stopped for %s mid-saga, restarted", s.temporalDown), outgoing: true,
			setup: func(ctx context.Context, r *caseRun) error {
				// Slow settlements: sagas are polling when Temporal stops.
				return r.setFaults(ctx, pspsim.Behavior{Mode: pspsim.ModeAccept, SettleAfter: s.settleSlow})
			},
			inject: temporalDownMidSaga, check: needFacts("sagas open when Temporal stopped")},
		{name: fmt.Sprintf("NATS stopped for %s mid-load, restarted", s.natsDown), outgoing: true, inject: natsDown,
			check: needFacts("events waiting for NATS")},
		{name: "kill -9 the outbox relay (in the worker) while it drains a backlog, restart it", outgoing: true, inject: killRelay,
			check: needFacts("events waiting for NATS")},
	}
}

// needFacts fails a case whose fault did not happen as planned: a case
// that never lost an answer proves nothing about lost answers.
func needFacts(names ...string) func(context.Context, *caseRun, *outcome) []string {
	return func(_ context.Context, r *caseRun, _ *outcome) []string {
		var v []string
		for _, n := range names {
			if r.facts[n] == 0 {
				v = append(v, missed("no "+n))
			}
		}
		return v
	}
}

// pspDown stops the PSP's API for s.pspDown: every submission and status
// query is refused a connection meanwhile; nothing it held is forgotten.
func pspDown(ctx context.Context, r *caseRun) (time.Time, string, error) {
	if err := r.st.psp.stop(); err != nil {
		return time.Now(), "", err
	}
	down := time.Now()
	time.Sleep(r.s.pspDown)
	if err := r.st.psp.start(); err != nil {
		return time.Now(), "", err
	}
	healed := time.Now()
	var n int
	if err := r.st.pool.QueryRow(ctx, `SELECT count(*) FROM pix_transfers WHERE starts_with(account_id, $1) AND created_at BETWEEN $2 AND $3`,
		"load-"+r.sess.RunID()+"-", down, healed).Scan(&n); err != nil {
		return healed, "", fmt.Errorf("count transfers: %w", err)
	}
	return healed, fmt.Sprintf("%d transfers debited while the PSP was down", n), nil
}

// lostAnswers makes the PSP process the fault keys' submissions and cut
// the connection before answering, for s.faultFor or until one is lost
// (keptUntilMet); then, like a PSP that
// treats a resubmission as an error, answer every resubmission of a
// transfer it holds 409 duplicate_transfer (until the case ends). The
// transfer is at the PSP, pending then settled: it must end settled, never
// refunded.
func lostAnswers(ctx context.Context, r *caseRun) (time.Time, string, error) {
	if err := r.setFaults(ctx, pspsim.Behavior{Mode: pspsim.ModeLoseResponse}); err != nil {
		return time.Now(), "", err
	}
	lost, err := keptUntilMet(ctx, r)
	if err != nil {
		return time.Now(), "", err
	}
	r.facts["answers lost"] = lost
	if err := r.setFaults(ctx, pspsim.Behavior{Mode: pspsim.ModeDuplicateConflict}); err != nil {
		return time.Now(), "", err
	}
	return time.Now(), fmt.Sprintf("%d answers lost (kept %s or until met); resubmissions answered 409 from then on", lost, r.s.faultFor), nil
}

// unauthorizedResubmissions makes the PSP take the fault keys' transfers
// and hang past the bank's timeout (timeout mode), for s.faultFor, so the
// bank resubmits; then answer every submission 401 for s.faultFor (each
// kept on until a submission met it: keptUntilMet) (the
// resubmissions of transfers it holds, and new ones, which it does not
// create); then accept again. A 401 says our credentials are wrong, not
// that the transfer is: nothing may be refunded for it.
func unauthorizedResubmissions(ctx context.Context, r *caseRun) (time.Time, string, error) {
	// The delay outlasts PSP_TIMEOUT (3 s): the bank gives up first.
	if err := r.setFaults(ctx, pspsim.Behavior{Mode: pspsim.ModeTimeout, Delay: 10 * time.Second}); err != nil {
		return time.Now(), "", err
	}
	hung, err := keptUntilMet(ctx, r)
	if err != nil {
		return time.Now(), "", err
	}
	r.facts["submissions hung"] = hung
	if err := r.setFaults(ctx, pspsim.Behavior{Mode: pspsim.ModeUnauthorized}); err != nil {
		return time.Now(), "", err
	}
	refused, err := keptUntilMet(ctx, r)
	if err != nil {
		return time.Now(), "", err
	}
	r.facts["submissions answered 401"] = refused
	if err := r.setFaults(ctx, acceptMode); err != nil {
		return time.Now(), "", err
	}
	return time.Now(), fmt.Sprintf("%d submissions hung, then %d answered 401, each fault kept %s or until met", hung, refused, r.s.faultFor), nil
}

// keptUntilMet keeps the fault just set for r.s.faultFor, then on until a
// submission to a fault key reached the PSP under it (the simulator counts
// them from the set), r.s.tokenHitWait longer at most, and says how many
// reached it. A fault no call met proves nothing, and on a loaded machine
// the worker's next call to a fault key can come after faultFor (the smoke
// run's 4 s: case 10 failed "the fault did not happen" on both of its runs
// at a load average of 14, no call sent yet in either phase).
func keptUntilMet(ctx context.Context, r *caseRun) (int, error) {
	time.Sleep(r.s.faultFor)
	deadline := time.Now().Add(r.s.tokenHitWait)
	for {
		submissions, _, err := r.faultSubmissions(ctx)
		if err != nil || submissions > 0 || !time.Now().Before(deadline) {
			return submissions, err
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// killWorkerMidSubmission makes the fault keys' submissions hang at the
// PSP (created there, no answer), kills the worker with SIGKILL just after
// one began to hang, lets the PSP recover, and restarts the worker: the
// activities that were under way are retried by Temporal after their
// timeout, and resubmit under the same end_to_end_id.
func killWorkerMidSubmission(ctx context.Context, r *caseRun) (time.Time, string, error) {
	if err := r.setFaults(ctx, pspsim.Behavior{Mode: pspsim.ModeTimeout, Delay: pspsim.MaxDelay}); err != nil {
		return time.Now(), "", err
	}
	// Wait for a submission to arrive, then kill at once: it hangs for
	// PSP_TIMEOUT (3 s) before the worker would give up on it.
	deadline := time.Now().Add(15 * time.Second)
	var hanging int
	for time.Now().Before(deadline) && hanging == 0 {
		time.Sleep(50 * time.Millisecond)
		var err error
		if hanging, _, err = r.faultSubmissions(ctx); err != nil {
			return time.Now(), "", err
		}
	}
	if hanging == 0 {
		// Healed before the case's checks: the fault keys' submissions
		// settle as any other (the case is then only missed, not broken).
		if err := r.setFaults(ctx, acceptMode); err != nil {
			return time.Now(), "", err
		}
		return time.Now(), "", fmt.Errorf("%w: no submission to a fault key arrived within 15 s", errFaultMissed)
	}
	r.st.worker.kill9()
	time.Sleep(2 * time.Second)
	if err := r.setFaults(ctx, acceptMode); err != nil {
		return time.Now(), "", err
	}
	if err := r.st.worker.start(); err != nil {
		return time.Now(), "", err
	}
	return time.Now(), fmt.Sprintf("killed with %d submission(s) hanging at the PSP; down 2 s", hanging), nil
}

// temporalDownMidSaga stops Temporal while sagas wait for slow settlements
// (setup), for s.temporalDown, and starts it again on its state.
func temporalDownMidSaga(ctx context.Context, r *caseRun) (time.Time, string, error) {
	var open int
	if err := r.st.pool.QueryRow(ctx, `SELECT count(*) FROM pix_transfers WHERE starts_with(account_id, $1) AND status IN ('debited', 'submitted')`,
		"load-"+r.sess.RunID()+"-").Scan(&open); err != nil {
		return time.Now(), "", fmt.Errorf("count transfers: %w", err)
	}
	r.facts["sagas open when Temporal stopped"] = open
	r.st.temporal.Stop()
	time.Sleep(r.s.temporalDown)
	err := r.st.temporal.Restart()
	return time.Now(), fmt.Sprintf("%d sagas open when Temporal stopped", open), err
}

// natsDown stops the broker for s.natsDown: the relay keeps the events in
// the outbox meanwhile, and the API takes webhooks and transfers as usual.
func natsDown(ctx context.Context, r *caseRun) (time.Time, string, error) {
	r.st.nats.Stop()
	time.Sleep(r.s.natsDown)
	waiting, err := unpublished(ctx, r.st.pool)
	if err != nil {
		return time.Now(), "", err
	}
	r.facts["events waiting for NATS"] = waiting
	err = r.st.nats.Restart()
	return time.Now(), fmt.Sprintf("%d events waiting when NATS came back", waiting), err
}

// killRelay builds a backlog in the outbox (the broker stopped for
// s.backlogFor), starts the broker again, and kills the worker, where the
// relay runs, with SIGKILL as soon as the broker routes the first event of
// the backlog: the relay has published (part of) a round and not yet
// committed its marks. After the restart the relay publishes those events
// again, and the broker must drop the copies (Nats-Msg-Id): the consumer
// must see each once.
func killRelay(ctx context.Context, r *caseRun) (time.Time, string, error) {
	r.st.nats.Stop()
	time.Sleep(r.s.backlogFor)
	backlog, err := unpublished(ctx, r.st.pool)
	if err != nil {
		return time.Now(), "", err
	}
	r.facts["events waiting for NATS"] = backlog
	if err := r.st.nats.Restart(); err != nil {
		return time.Now(), "", err
	}
	w, err := watchPublishes(r.st.nats.URL)
	if err != nil {
		return time.Now(), "", err
	}
	defer w.close()
	// The relay backs off up to 10 poll intervals (5 s) while the broker
	// is down: its first round after comes within that.
	first, publishing := w.next(15 * time.Second)
	r.st.worker.kill9()
	// What the dead relay had published: the rest of its last round.
	ids := []string{first}
	for publishing {
		id, ok := w.next(200 * time.Millisecond)
		if !ok {
			break
		}
		ids = append(ids, id)
	}
	unmarked, err := countUnpublished(ctx, r.st.pool, ids)
	if err != nil {
		return time.Now(), "", err
	}
	time.Sleep(time.Second)
	if err := r.st.worker.start(); err != nil {
		return time.Now(), "", err
	}
	note := fmt.Sprintf("backlog %d events; killed with %d of the %d events it had published not marked published", backlog, unmarked, len(ids))
	switch {
	case !publishing:
		note = fmt.Sprintf("backlog %d events; the relay published nothing within 15 s of the broker's return; killed anyway", backlog)
	case unmarked == 0:
		note += " (the kill fell between rounds)"
	}
	return time.Now(), note, nil
}
