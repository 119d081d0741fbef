package main

import (
	"context"
	"fmt"
	"time"

	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/internal/tooling/pspsim"
	"github.com/pixbank/pix/tooling/load"
)

// refundCases are the faults of the refund saga (devolução), each under a
// load of webhooks and of refunds of the PIX it credits. Two PIX in five
// are fault PIX whose refund behaviour at the PSP the case sets, one in
// five has its devoluções not made (NAO_REALIZADO: reversed); besides the
// common invariants (runCase), checkRefunds holds every refund against the
// PSP's records, the reversals and the outbox. The smoke run keeps two:
// lost answers (a reversal on a lost answer would pay twice) and the worker
// killed while sagas wait for their outcome.
func refundCases(s settings) []faultCase {
	return []faultCase{
		{name: "PSP loses the answers of devolução PUTs (lose_response), then recovers", refunds: true,
			inject: refundLostAnswers, check: needFacts("devolução answers lost")},
		{name: "PSP answers devolução PUTs 503 for a while, then recovers", refunds: true, full: true,
			inject: refundUnavailable, check: needFacts("devolução PUTs answered 503")},
		{name: "PSP refuses our credentials (401) on devolução PUTs for a while, then recovers", refunds: true, full: true,
			inject: refundUnauthorized, check: refundUnauthorizedCheck},
		{name: "kill -9 the worker while refunds wait for their outcome, restart it", refunds: true,
			setup: slowRefunds, inject: killWorkerMidRefund, check: needFacts("refunds waiting for their outcome")},
		{name: fmt.Sprintf("Temporal stopped for %s while refunds wait for their outcome, restarted", s.temporalDown), refunds: true, full: true,
			setup: slowRefunds, inject: temporalDownMidRefund, check: needFacts("refunds waiting for their outcome")},
		{name: "PSP refuses devoluções (400, nothing made) and rejects others (NAO_REALIZADO) under load", refunds: true, full: true,
			setup: func(ctx context.Context, r *caseRun) error {
				if err := r.setRefundClass(ctx, refundFault1, pspsim.RefundBehavior{Mode: pspsim.RefundModeRefuse}); err != nil {
					return err
				}
				return r.setRefundClass(ctx, refundFault2, pspsim.RefundBehavior{Mode: pspsim.RefundModeReject, Reason: "pagador recusou (fault suite)"})
			},
			inject: refundRefusals, check: refundRefusalsCheck},
	}
}

// refundFault turns the fault classes' devoluções to b for s.faultFor,
// then back to return; it counts the PUTs that met b as fact. The refund
// load picks the PIX it refunds at random among those credited: when no
// PUT to a fault PIX came within s.faultFor (the smoke run's 4 s, early in
// a run, now and then), the fault stays until one does, up to 3 times as
// long, rather than the case proving nothing.
func refundFault(ctx context.Context, r *caseRun, b pspsim.RefundBehavior, fact string) (time.Time, error) {
	if err := r.setRefundFaults(ctx, b); err != nil {
		return time.Now(), err
	}
	time.Sleep(r.s.faultFor)
	n, err := r.refundFaultPUTs(ctx)
	for deadline := time.Now().Add(3 * r.s.faultFor); err == nil && n == 0 && time.Now().Before(deadline); {
		time.Sleep(200 * time.Millisecond)
		n, err = r.refundFaultPUTs(ctx)
	}
	if err != nil {
		return time.Now(), err
	}
	r.facts[fact] = n
	if err := r.setRefundFaults(ctx, returnMode); err != nil {
		return time.Now(), err
	}
	return time.Now(), nil
}

// refundLostAnswers makes the PSP make the fault PIX's devoluções and cut
// the connection before answering, for s.faultFor: the devolução exists,
// the bank does not know. Asked again under the same id, the PSP answers
// the one it holds: each refund must end returned, with one devolução,
// never reversed.
func refundLostAnswers(ctx context.Context, r *caseRun) (time.Time, string, error) {
	healed, err := refundFault(ctx, r, pspsim.RefundBehavior{Mode: pspsim.RefundModeLoseResponse}, "devolução answers lost")
	return healed, fmt.Sprintf("%d devolução answers lost in %s", r.facts["devolução answers lost"], r.s.faultFor), err
}

// refundUnavailable makes the PSP answer the fault PIX's devolução PUTs
// 503 (making nothing) for s.faultFor: the outcome is unknown, retried.
func refundUnavailable(ctx context.Context, r *caseRun) (time.Time, string, error) {
	healed, err := refundFault(ctx, r, pspsim.RefundBehavior{Mode: pspsim.RefundModeFail}, "devolução PUTs answered 503")
	return healed, fmt.Sprintf("%d devolução PUTs answered 503 in %s", r.facts["devolução PUTs answered 503"], r.s.faultFor), err
}

// refundUnauthorized makes the PSP answer the fault PIX's devolução PUTs
// 401 for s.faultFor (long enough, in the full run, for a run to give up
// and the dispatcher's recheck to start another). A 401 says our
// credentials are wrong, not that the devolução is: the refunds it meets
// must stay open, never reversed, and be returned once the PSP takes them.
// Just before the heal it reads the fault PIX's refunds.
func refundUnauthorized(ctx context.Context, r *caseRun) (time.Time, string, error) {
	began := time.Now()
	if err := r.setRefundFaults(ctx, pspsim.RefundBehavior{Mode: pspsim.RefundModeUnauthorized}); err != nil {
		return time.Now(), "", err
	}
	time.Sleep(r.s.faultFor)
	n, err := r.refundFaultPUTs(ctx)
	if err != nil {
		return time.Now(), "", err
	}
	r.facts["devolução PUTs answered 401"] = n
	rows, err := refundsOf(ctx, r.st.pool, r.sess.RunID())
	if err != nil {
		return time.Now(), "", err
	}
	for _, t := range rows {
		if !faultPIX(r.sess.RunID(), t.endToEndID) {
			continue
		}
		switch {
		case t.status == pix.RefundReversed && t.reversedAt != nil && t.reversedAt.After(began):
			r.facts["fault PIX's refunds reversed during the 401s"]++
		case t.status == pix.RefundDebited || t.status == pix.RefundRequested:
			r.facts["fault PIX's refunds open at the heal"]++
		}
	}
	if err := r.setRefundFaults(ctx, returnMode); err != nil {
		return time.Now(), "", err
	}
	return time.Now(), fmt.Sprintf("%d devolução PUTs answered 401 in %s; %d refunds open at the heal, none reversed", n, r.s.faultFor,
		r.facts["fault PIX's refunds open at the heal"]), nil
}

func refundUnauthorizedCheck(ctx context.Context, r *caseRun, o *outcome) []string {
	v := needFacts("devolução PUTs answered 401", "fault PIX's refunds open at the heal")(ctx, r, o)
	if n := r.facts["fault PIX's refunds reversed during the 401s"]; n > 0 {
		v = append(v, fmt.Sprintf("%d refunds of fault PIX REVERSED while the PSP answered 401 (a refusal of our credentials taken for a refusal of the devolução)", n))
	}
	return v
}

// faultPIX reports whether e2e is a PIX of a fault class of the run.
func faultPIX(runID, e2e string) bool {
	seq := load.EndToEndSeq(runID, e2e)
	c := refundClassOf(seq)
	return seq > 0 && (c == refundFault1 || c == refundFault2)
}

// slowRefunds makes the fault PIX's devoluções stay in process for
// s.settleSlow, so that sagas wait for their outcome when the fault
// strikes; the second class's PUTs also take 2 s to answer (under
// PSP_TIMEOUT), so that some are in flight.
func slowRefunds(ctx context.Context, r *caseRun) error {
	if err := r.setRefundClass(ctx, refundFault1, pspsim.RefundBehavior{Mode: pspsim.RefundModeReturn, SettleAfter: r.s.settleSlow}); err != nil {
		return err
	}
	return r.setRefundClass(ctx, refundFault2, pspsim.RefundBehavior{Mode: pspsim.RefundModeReturn, SettleAfter: r.s.settleSlow, Delay: 2 * time.Second})
}

// waitRefundsRequested waits (up to 15 s) until some refund of the run is
// requested: its saga waits for the PSP's outcome.
func waitRefundsRequested(ctx context.Context, r *caseRun) (open, requested int, err error) {
	deadline := time.Now().Add(15 * time.Second)
	for {
		if open, requested, err = openRefunds(ctx, r.st.pool, r.sess.RunID()); err != nil || requested > 0 || time.Now().After(deadline) {
			return open, requested, err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// killWorkerMidRefund kills the worker with SIGKILL while refunds wait for
// the PSP's outcome (and PUTs are in flight), and restarts it 2 s later:
// the sagas go on from Temporal's history, the activities that were under
// way are retried after their timeout and ask again under the same id.
func killWorkerMidRefund(ctx context.Context, r *caseRun) (time.Time, string, error) {
	open, requested, err := waitRefundsRequested(ctx, r)
	if err != nil {
		return time.Now(), "", err
	}
	r.facts["refunds waiting for their outcome"] = requested
	r.st.worker.kill9()
	time.Sleep(2 * time.Second)
	if err := r.st.worker.start(); err != nil {
		return time.Now(), "", err
	}
	return time.Now(), fmt.Sprintf("killed with %d refunds open, %d of them waiting for their outcome; down 2 s", open, requested), nil
}

// temporalDownMidRefund stops Temporal while refunds wait for the PSP's
// outcome, for s.temporalDown, and starts it again on its state.
func temporalDownMidRefund(ctx context.Context, r *caseRun) (time.Time, string, error) {
	open, requested, err := waitRefundsRequested(ctx, r)
	if err != nil {
		return time.Now(), "", err
	}
	r.facts["refunds waiting for their outcome"] = requested
	r.st.temporal.Stop()
	time.Sleep(r.s.temporalDown)
	err = r.st.temporal.Restart()
	return time.Now(), fmt.Sprintf("%d refunds open when Temporal stopped, %d of them waiting for their outcome", open, requested), err
}

// refundRefusals lets the load meet the PSP's refusals (setup: the first
// fault class refused, 400 and nothing made; the second rejected,
// NAO_REALIZADO at once) for s.faultFor. Nothing heals: the refused
// refunds are reversed a quiet period (REFUND_REFUSAL_QUIET_PERIOD) after
// their refusal, once the PSP still holds no record of them.
func refundRefusals(ctx context.Context, r *caseRun) (time.Time, string, error) {
	time.Sleep(r.s.faultFor)
	counts, err := r.st.psp.refundRequests(ctx)
	if err != nil {
		return time.Now(), "", err
	}
	for e2e, n := range counts {
		if seq := load.EndToEndSeq(r.sess.RunID(), e2e); seq > 0 && refundClassOf(seq) == refundFault1 {
			r.facts["devolução PUTs refused"] += n
		}
	}
	return time.Now(), fmt.Sprintf("%d devolução PUTs refused (400) in the first %s", r.facts["devolução PUTs refused"], r.s.faultFor), nil
}

// refundRefusalsCheck: the refusal happened, and the refused refunds were
// reversed (checkRefunds has held each against the PSP: no record).
func refundRefusalsCheck(ctx context.Context, r *caseRun, o *outcome) []string {
	v := needFacts("devolução PUTs refused")(ctx, r, o)
	if o.refunds.refused == 0 {
		v = append(v, "no refund the PSP refused was reversed")
	}
	return v
}
