package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/internal/auth"
	"github.com/pixbank/pix/internal/tooling/pspsim"
	"github.com/pixbank/pix/saga/reconcile"
	"github.com/pixbank/pix/tooling/load"
)

// outcome is one case's result.
type outcome struct {
	number     int
	name       string
	outgoing   bool
	refundCase bool
	inv        load.Invariants
	transfers  transferReport
	refunds    refundReport
	events     eventReport
	violations []string
	requests   int64
	errors     map[string]int64
	// transferErrors are the non-final answers of POST /pix, by status or
	// transport error.
	transferErrors map[string]int64
	// refundErrors are the non-final answers of the refund requests.
	refundErrors map[string]int64
	recovery     time.Duration
	note         string
	err          error
}

func (o outcome) pass() bool { return o.err == nil && len(o.violations) == 0 }

// errFaultMissed is a case's fault that did not happen as planned (a load
// too slow to reach it in its window, on a busy machine): the case proves
// nothing, either way, about that fault. missed words a check's finding of
// it; each is errFaultMissed's text first.
var errFaultMissed = errors.New("the fault did not happen")

func missed(what string) string { return errFaultMissed.Error() + ": " + what }

// onlyMissed says whether the case failed only because its fault did not
// happen: no other error, every violation a missed fault. Such a case is
// run once more (main), on accounts of its own; any other failure is the
// case's result.
func (o outcome) onlyMissed() bool {
	if o.pass() || (o.err != nil && !errors.Is(o.err, errFaultMissed)) {
		return false
	}
	for _, v := range o.violations {
		if !strings.HasPrefix(v, errFaultMissed.Error()+":") {
			return false
		}
	}
	return true
}

func countsText(m map[string]int64) string {
	if len(m) == 0 {
		return "none"
	}
	var parts []string
	for k, v := range m {
		parts = append(parts, fmt.Sprintf("%s: %d", k, v))
	}
	slices.Sort(parts)
	return strings.Join(parts, ", ")
}

func (o outcome) errorsText() string {
	if !o.outgoing && !o.refundCase {
		return countsText(o.errors)
	}
	t := "webhooks " + countsText(o.errors)
	if o.outgoing {
		t += "; POST /pix " + countsText(o.transferErrors)
	}
	if o.refundCase {
		t += "; refunds " + countsText(o.refundErrors)
	}
	return t
}

func (o outcome) refundsText() string {
	if !o.refundCase {
		return "-"
	}
	return o.refunds.text()
}

func (o outcome) transfersText() string {
	if !o.outgoing {
		return "-"
	}
	return fmt.Sprintf("%d: %d settled, %d refunded, %d open", o.transfers.total, o.transfers.settled, o.transfers.refunded, o.transfers.open)
}

func (o outcome) summary() string {
	if !o.pass() {
		var why []string
		if o.err != nil {
			why = append(why, o.err.Error())
		}
		return "FAIL: " + strings.Join(append(why, o.violations...), "; ")
	}
	t := ""
	if o.outgoing {
		t = ", transfers " + o.transfersText()
	}
	if o.refundCase {
		t += ", refunds " + o.refundsText()
	}
	return fmt.Sprintf("pass: %d PIX, %d credits%s, %d events once and in order, invariants hold, recovery %s; %s",
		o.inv.InboxRows, o.inv.Credits, t, o.events.received, o.recovery.Round(100*time.Millisecond), o.note)
}

// caseKeys are the receivers' Pix keys of an outgoing case, its own (the
// PSP's behaviours are per key): ok accepts, reject rejects at submission
// (the refunds the books must show), and the fault keys are what the case
// turns against the bank.
type caseKeys struct {
	ok, reject, fault1, fault2 string
}

func keysOf(runID string) caseKeys {
	k := func(name string) string { return strings.ToLower(name+"-"+runID) + "@faults.example" }
	return caseKeys{ok: k("ok"), reject: k("reject"), fault1: k("fault1"), fault2: k("fault2")}
}

func (k caseKeys) faults() []string { return []string{k.fault1, k.fault2} }

// load is the order the transfer load takes the keys in: two in five go
// to the fault keys.
func (k caseKeys) load() []string { return []string{k.ok, k.fault1, k.reject, k.ok, k.fault2} }

// setFaults sets the fault keys' behaviour.
func (r *caseRun) setFaults(ctx context.Context, b pspsim.Behavior) error {
	for _, key := range r.keys.faults() {
		if err := r.st.psp.setBehavior(ctx, key, b); err != nil {
			return err
		}
	}
	return nil
}

// faultSubmissions sums what GET /behaviors counts on the fault keys since
// their behaviour was last set.
func (r *caseRun) faultSubmissions(ctx context.Context) (submissions, resubmissions int, err error) {
	bs, err := r.st.psp.behaviors(ctx)
	if err != nil {
		return 0, 0, err
	}
	for _, key := range r.keys.faults() {
		submissions += bs[key].Submissions
		resubmissions += bs[key].Resubmissions
	}
	return submissions, resubmissions, nil
}

// runCase runs one case on a session of its own: load (webhooks, and
// outgoing PIX for an outgoing case), fault, heal, drain, then the
// invariants and the recovery time.
func runCase(ctx context.Context, st *stack, s settings, c faultCase) outcome {
	o := outcome{name: c.name, outgoing: c.outgoing, refundCase: c.refunds, errors: map[string]int64{}}
	runID := load.NewRunID()
	sess, err := load.NewSession(load.Options{
		APIURL: st.apiURL, RunID: runID, Accounts: s.accounts, DupRatio: 0.2, BurstRatio: 0.02, BurstCopies: 5,
		MaxInFlight: 128, RetryUnacked: true, RetryFor: 2 * time.Minute, Seed: 7, SigningKey: s.signingKey,
	})
	if err != nil {
		o.err = err
		return o
	}
	defer sess.Close()
	r := &caseRun{st: st, s: s, sess: sess, facts: map[string]int{}, refundModes: map[string]pspsim.RefundMode{}}
	if o.err = load.OpenAccounts(ctx, st.pool, runID, s.accounts); o.err != nil {
		return o
	}
	fromSeq, err := lastOutboxSeq(ctx, st.pool)
	if err != nil {
		o.err = err
		return o
	}
	if c.outgoing {
		r.keys = keysOf(runID)
		// One customer acting for every account of the case: one subject,
		// under which its retries and replays find their Idempotency-Keys.
		accounts := make([]string, s.accounts)
		for i := range accounts {
			accounts[i] = load.AccountID(runID, i)
		}
		if r.xfers, err = load.NewTransfers(load.TransferOptions{
			APIURL: st.apiURL, RunID: runID, Accounts: s.accounts, Keys: r.keys.load(), RetryFor: 2 * time.Minute,
			ReplayRatio: 0.1, Seed: 11, Bearer: st.customerTokens("pixfaults-"+runID, []string{auth.ScopeWrite}, accounts),
		}); err != nil {
			o.err = err
			return o
		}
		defer r.xfers.Close()
		if o.err = st.psp.setBehavior(ctx, r.keys.reject, rejectMode); o.err != nil {
			return o
		}
	}
	if c.refunds {
		// One customer acting for every account of the case, as above.
		accounts := make([]string, s.accounts)
		for i := range accounts {
			accounts[i] = load.AccountID(runID, i)
		}
		if r.refunds, err = load.NewRefunds(load.RefundOptions{
			APIURL: st.apiURL, Credited: load.CreditedOf(st.pool, runID), RepeatRatio: 0.2, RetryFor: 2 * time.Minute,
			ReplayRatio: 0.1, Seed: 13, Reason: "devolução pedida pela suíte de falhas",
			Bearer: st.customerTokens("pixfaults-refunds-"+runID, []string{auth.ScopeWrite}, accounts),
		}); err != nil {
			o.err = err
			return o
		}
		defer r.refunds.Close()
		// The PSP's behaviour for every PIX the run may make, before it
		// exists: the fault classes return until the case says otherwise,
		// one PIX in five has its devoluções not made.
		r.refundPIX = refundPIX(s)
		for _, class := range []string{refundFault1, refundFault2, refundNotDone} {
			b := returnMode
			if class == refundNotDone {
				b = pspsim.RefundBehavior{Mode: pspsim.RefundModeNotDone, Reason: "conta do pagador encerrada (fault suite)"}
			}
			if o.err = r.setRefundClass(ctx, class, b); o.err != nil {
				return o
			}
		}
	}
	if c.setup != nil {
		if o.err = c.setup(ctx, r); o.err != nil {
			return o
		}
	}

	// The loads run in goroutines owned here: each ends within its
	// duration plus its retry time, and both are waited for below.
	type stepResult struct {
		step *load.Step
		err  error
	}
	type transferResult struct {
		step *load.TransferStep
		err  error
	}
	done := make(chan stepResult, 1)
	go func() {
		step, err := sess.Run(ctx, s.rate, s.loadFor)
		done <- stepResult{step, err}
	}()
	xdone := make(chan transferResult, 1)
	switch {
	case c.outgoing && !c.ownTransfers:
		go func() {
			step, err := r.xfers.Run(ctx, s.transferRate, s.loadFor)
			xdone <- transferResult{step, err}
		}()
	case c.outgoing:
		xdone <- transferResult{step: &load.TransferStep{}}
	default:
		xdone <- transferResult{}
	}
	type refundResult struct {
		step *load.RefundStep
		err  error
	}
	rdone := make(chan refundResult, 1)
	if c.refunds {
		go func() {
			step, err := r.refunds.Run(ctx, s.refundRate, s.loadFor)
			rdone <- refundResult{step, err}
		}()
	} else {
		rdone <- refundResult{}
	}
	time.Sleep(s.faultAfter)
	healed, note, injectErr := c.inject(ctx, r)
	o.note = note
	res, xres, rres := <-done, <-xdone, <-rdone
	if res.err != nil || xres.err != nil || rres.err != nil {
		o.err = errors.Join(res.err, xres.err, rres.err)
		return o
	}
	o.requests = res.step.Requests
	o.errors = res.step.Errors
	if injectErr != nil {
		o.err = injectErr
	}
	if _, err := load.Drain(ctx, st.pool, runID, s.drainTimeout); err != nil {
		o.violations = append(o.violations, err.Error())
	}
	if c.outgoing {
		o.requests += xres.step.Requests
		o.transferErrors = xres.step.Errors
		if err := drainTransfers(ctx, st.pool, runID, s.transferDrain); err != nil {
			o.err = err
			return o
		}
	}
	if c.refunds {
		o.requests += rres.step.Requests
		o.refundErrors = rres.step.Errors
		if err := drainRefunds(ctx, st.pool, runID, s.refundDrain); err != nil {
			o.err = err
			return o
		}
	}
	if err := st.events.drainEvents(ctx, st.pool, fromSeq, s.eventDrain); err != nil {
		o.violations = append(o.violations, err.Error())
	}

	if o.inv, err = load.Check(ctx, st.pool, sess); err != nil {
		o.err = err
		return o
	}
	o.violations = append(o.violations, o.inv.Violations()...)
	if res.step.Unacked > 0 {
		o.violations = append(o.violations, fmt.Sprintf("%d PIX never acknowledged", res.step.Unacked))
	}
	// The books of every account, not only this case's: a transfer of an
	// earlier case may have ended during this one.
	if rec, err := reconcile.NewStore(db.NewStore(st.pool)).Reconcile(ctx); err != nil {
		o.err = err
		return o
	} else if !rec.Balanced() {
		o.violations = append(o.violations, fmt.Sprintf("reconcile: unbalanced accounts %v, unbalanced holds %v, done without credit %v, "+
			"credit without done %v, refunds over credit %v, refund contradictions %v",
			rec.UnbalancedAccounts, rec.UnbalancedHolds, rec.DoneWithoutCredit, rec.CreditWithoutDone, rec.RefundsOverCredit, rec.RefundContradictions))
	}
	var v []string
	if c.outgoing {
		o.violations = append(o.violations, outgoingClientViolations(o, xres.step)...)
		if o.transfers, v, err = checkTransfers(ctx, st, r.xfers.CreatedTransfers(), runID, healed); err != nil {
			o.err = err
			return o
		}
		o.violations = append(o.violations, v...)
		if len(o.transfers.openVisible) > 0 {
			o.note += fmt.Sprintf("; open, the PSP pending or without a record: %s", abbreviate(o.transfers.openVisible, 5))
		}
	}
	if c.refunds {
		o.violations = append(o.violations, webhookClientViolations(o)...)
		o.violations = append(o.violations, refundClientViolations(rres.step)...)
		if o.refunds, v, err = checkRefunds(ctx, st, r.refunds.CreatedRefunds(), runID, r.refusedByPSP, healed); err != nil {
			o.err = err
			return o
		}
		o.violations = append(o.violations, v...)
		o.note += fmt.Sprintf("; refund requests resent %d, skipped %d (nothing credited yet)", rres.step.Resent, rres.step.Skipped)
	}
	if o.events, v, err = st.events.check(ctx, st.pool, fromSeq, healed); err != nil {
		o.err = err
		return o
	}
	o.violations = append(o.violations, v...)
	if c.check != nil {
		o.violations = append(o.violations, c.check(ctx, r, &o)...)
	}

	// Recovery: from the heal to the last credit, transfer end and event
	// publication of what was under way before it.
	var parts []string
	last := map[string]time.Time{"events": o.events.lastPublished, "transfers": o.transfers.lastFinal, "refunds": o.refunds.lastFinal}
	if t, err := load.LastCreditOfAckedBefore(ctx, st.pool, sess, healed); err == nil {
		last["credits"] = t
	}
	for _, what := range []string{"credits", "transfers", "refunds", "events"} {
		if t := last[what]; t.After(healed) {
			o.recovery = max(o.recovery, t.Sub(healed))
			if d := t.Sub(healed).Round(100 * time.Millisecond); (c.outgoing || c.refunds) && d > 0 {
				parts = append(parts, fmt.Sprintf("%s +%s", what, d))
			}
		}
	}
	if len(parts) > 0 {
		o.note += "; recovered: " + strings.Join(parts, ", ")
	}
	return o
}

// outgoingClientViolations: in the outgoing cases the API itself is never
// the fault (the PSP, the worker, Temporal or NATS is), so every request
// must be answered, and answered without a 5xx: outgoing PIX are accepted
// whatever happens behind the API. A replay must answer the same transfer.
func outgoingClientViolations(o outcome, x *load.TransferStep) []string {
	v := webhookClientViolations(o)
	for k, n := range x.Errors {
		v = append(v, fmt.Sprintf("%d POST /pix answered %s", n, k))
	}
	if x.Unanswered > 0 {
		v = append(v, fmt.Sprintf("%d POST /pix never answered", x.Unanswered))
	}
	if x.ReplayMismatches > 0 {
		v = append(v, fmt.Sprintf("%d of %d replays of POST /pix did not answer the same transfer", x.ReplayMismatches, x.Replays))
	}
	for k, n := range x.Refused {
		v = append(v, fmt.Sprintf("%d POST /pix refused (%s): the accounts should cover every transfer", n, k))
	}
	slices.Sort(v)
	return v
}

// webhookClientViolations: where the API is never the fault, every webhook
// is acknowledged at the first try.
func webhookClientViolations(o outcome) []string {
	var v []string
	for k, n := range o.errors {
		v = append(v, fmt.Sprintf("%d webhooks answered %s", n, k))
	}
	slices.Sort(v)
	return v
}
