//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pixbank/pix/cmd/pixd/app"
	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/internal/config"
	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/internal/psp"
	"github.com/pixbank/pix/internal/tooling/temporaltest"
	pixsched "github.com/pixbank/pix/saga/scheduled"
)

// The seed and length of TestModelRandomHistories: flags, else
// PIX_MODEL_SEED and PIX_MODEL_OPS, else a time-based seed and
// defaultModelOps operations.
var (
	modelSeedFlag = flag.Int64("model.seed", 0, "seed of TestModelRandomHistories (0: PIX_MODEL_SEED, else time-based)")
	modelOpsFlag  = flag.Int("model.ops", 0, "operations of TestModelRandomHistories (0: PIX_MODEL_OPS, else 400)")
)

const defaultModelOps = 400

// Bounds of the waits of a model run: a checkpoint waits for every credit
// and transfer to end, the final one for every workflow run to close.
const (
	modelQuiesceWithin   = 3 * time.Minute
	modelWorkflowsWithin = time.Minute
)

func modelSettings(t *testing.T) (seed int64, ops int) {
	t.Helper()
	seed, ops = time.Now().UnixNano(), defaultModelOps
	if v := os.Getenv("PIX_MODEL_SEED"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			t.Fatalf("PIX_MODEL_SEED=%q: %v", v, err)
		}
		seed = n
	}
	if *modelSeedFlag != 0 {
		seed = *modelSeedFlag
	}
	if v := os.Getenv("PIX_MODEL_OPS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("PIX_MODEL_OPS=%q: a positive number of operations", v)
		}
		ops = n
	}
	if *modelOpsFlag > 0 {
		ops = *modelOpsFlag
	}
	return seed, ops
}

// modelBudget is PIX_MODEL_BUDGET: how long the history may run before it
// ends early (the final checks still run); 0 (unset) for no limit but the
// go test timeout.
func modelBudget(t *testing.T) time.Duration {
	v := os.Getenv("PIX_MODEL_BUDGET")
	if v == "" {
		return 0
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		t.Fatalf("PIX_MODEL_BUDGET=%q: a positive duration such as 9m", v)
	}
	return d
}

// TestModelRandomHistories runs a seeded random history of every money path
// (incoming PIX and their redeliveries, variants, copies and re-drives;
// outgoing PIX under Idempotency-Keys, replays, reused keys and overdrafts;
// refunds (devoluções) of received PIX under Idempotency-Keys, beyond the
// credit, of another customer's or a missing PIX, with the PSP's refund
// behaviours; PSP behaviours; worker crashes; Temporal outages) in small
// concurrent groups against a whole stack, and holds every answer and, at each
// checkpoint, the books against a sequential model. On a failure it prints
// the seed and the history: rerun it with
//
//	cd tooling && PIX_MODEL_SEED=<seed> PIX_MODEL_OPS=<ops> go test -tags e2e ./e2e -run TestModelRandomHistories -count=1 -v
func TestModelRandomHistories(t *testing.T) {
	if testing.Short() {
		t.Skip("a randomized history against the whole stack: not under -short")
	}
	seed, ops := modelSettings(t)
	t.Logf("PIX_MODEL_SEED=%d PIX_MODEL_OPS=%d", seed, ops)
	// A scheduled PIX for today runs at once only at the hour 0: the
	// model's today's must not sleep until a later hour.
	t.Setenv(pixsched.HourSetting, "0")
	// Nor refuse one for the account's count still to run (the store's
	// tests hold that limit): however long the history, the model counts
	// on none.
	t.Setenv(pixsched.MaxPendingSetting, "100000")
	srv := temporaltest.StartT(t) // its own server: the history stops and starts it
	s := newStack(t, srv, func(c *config.Config) {
		c.DatabaseMaxConns = 20
		// A saga run that failed visibly is started again soon, however
		// long its row has been open.
		c.DispatchRecheckAfter, c.DispatchRecheckMax = 5*time.Second, 5*time.Second
	},
		// A devolução's run asks the PSP's record every second at most
		// (from 1 s, doubling up to 10 min by default): a checkpoint waits
		// for every refund to end, and a run whose checks met a crash or
		// an outage would otherwise wait out its doubled polls.
		app.WithSettings(map[string]string{"REFUND_POLL_MAX": "1s"}))
	r := newModelRun(t, s, srv, seed, ops)
	t.Cleanup(func() {
		r.h.close()
		if r.temporalDown {
			_ = srv.Restart() // the stack's worker stops against a live server
		}
	})
	r.setup()
	budget := modelBudget(t)
	for !r.gen.done() {
		if budget > 0 && time.Since(r.began) > budget {
			t.Logf("PIX_MODEL_BUDGET=%s spent: the history ends after %d of %d operations; the final checks run on it", budget, r.gen.seq, ops)
			break
		}
		if r.gen.checkpointDue() {
			r.checkpoint(false)
		}
		r.runGroup(r.gen.next())
	}
	r.finish()
	t.Log(r.coverage())
	t.Logf("%d operations in %d groups, %d checkpoints, %s: %d PIX stored, %d transfers, %d refunds, %d keys; the model allowed every answer and the books",
		r.gen.seq, r.gen.group, r.checkpoints, time.Since(r.began).Round(time.Millisecond),
		len(r.m.storedPix(nil)), len(r.m.transOrd), len(r.m.refundOrd), len(r.m.keyOrder))
}

// modelRun is one history being run.
type modelRun struct {
	t     *testing.T
	s     *stack
	srv   *temporaltest.Server
	m     *model
	gen   *modelGen
	h     *modelHTTP
	seed  int64
	ops   int
	began time.Time

	history      []*op
	temporalDown bool
	checkpoints  int
	// spent is where the run's time went: groups, checkpoints, and the
	// crashes and Temporal outages within the groups.
	spent map[string]time.Duration
}

func newModelRun(t *testing.T, s *stack, srv *temporaltest.Server, seed int64, ops int) *modelRun {
	m := newModel()
	return &modelRun{t: t, s: s, srv: srv, m: m, gen: newModelGen(seed, ops, m), h: newModelHTTP(s.baseURL), seed: seed, ops: ops, began: time.Now(),
		spent: map[string]time.Duration{}}
}

// setup opens the accounts and gives every Pix key a first behaviour.
func (r *modelRun) setup() {
	g := r.gen
	for _, id := range g.active {
		opening := g.rng.Int64N(200_000)
		if g.chance(0.2) {
			opening = 0
		}
		r.m.addAccount(id, kindActive, opening)
		r.s.openAccount(id, opening)
	}
	r.m.addAccount(g.closed, kindClosed, 10_000)
	r.s.openAccount(g.closed, 10_000)
	if err := r.s.store.CloseAccount(context.Background(), g.closed); err != nil {
		r.t.Fatal(err)
	}
	r.m.addAccount(g.ghost, kindGhost, 0)
	for _, id := range g.late {
		r.m.addAccount(id, kindLate, 0)
	}
	r.m.pixKeys = g.pixKeys
	g.extraModes = modelExtraModes()
	g.group++
	var grp []*op
	for _, k := range g.pixKeys {
		grp = g.add(grp, &op{kind: opBehavior, intent: "initial", pixKey: k, behavior: g.behavior()})
	}
	r.runGroup(grp)
	// The stack's worker is starting: wait until it is up (see probeWorker).
	g.group++
	r.runGroup([]*op{r.probeWorker()})
}

// runGroup runs a group's requests at once, each on its own goroutine, and
// its control ops on the test goroutine meanwhile; then the model judges.
func (r *modelRun) runGroup(grp []*op) {
	defer func(began time.Time) { r.spent["groups"] += time.Since(began) }(time.Now())
	var wg sync.WaitGroup
	defer wg.Wait() // also when a control op stops the test mid-group
	start := make(chan struct{})
	for _, o := range grp {
		if !o.kind.control() && !o.ran {
			wg.Go(func() {
				<-start
				r.h.run(o, r.s.psp, r.m)
			})
		}
	}
	close(start)
	var probes []*op
	for _, o := range grp {
		if o.kind.control() {
			probes = append(probes, r.control(o)...)
		}
	}
	wg.Wait()
	grp = append(grp, probes...)
	r.history = append(r.history, grp...)
	if o := grp[len(grp)-1]; o.kind == opOpenLate {
		if acc := r.m.accounts[o.acct]; acc != nil {
			acc.opening = o.opening
		}
	}
	if vs := r.m.apply(grp); len(vs) > 0 {
		r.fail("an answer the model does not allow", vs)
	}
	if r.gen.group%10 == 0 {
		if vs := r.monitorTransfers(); len(vs) > 0 {
			r.fail("a transfer's final status contradicts the PSP", vs)
		}
		if vs := r.monitorRefunds(); len(vs) > 0 {
			r.fail("a refund's final status contradicts the PSP", vs)
		}
	}
}

// control runs a crash, a Temporal stop or start, or opens a late account.
// A crash returns the probe it delivered (see probeWorker), for the model
// to judge with the group.
func (r *modelRun) control(o *op) []*op {
	began := time.Now()
	defer func() {
		o.took = time.Since(began)
		r.spent[map[opKind]string{opCrash: "groups: worker crashes", opTemporalStop: "groups: Temporal stops", opTemporalStart: "groups: Temporal starts",
			opOpenLate: "groups: accounts opened"}[o.kind]] += o.took
	}()
	switch o.kind {
	case opCrash:
		r.s.killWorker()
		time.Sleep(o.pause)
		r.s.startWorker()
		return []*op{r.probeWorker()}
	case opTemporalStop:
		r.srv.Stop()
		r.temporalDown = true
	case opTemporalStart:
		if o.err = r.srv.Restart(); o.err != nil {
			r.history = append(r.history, o)
			r.fail("the Temporal server did not start again", []violation{{seq: o.seq, msg: o.err.Error()}})
		}
		r.temporalDown = false
	case opOpenLate:
		_, o.err = r.s.store.CreateAccount(context.Background(), db.NewAccount{ID: o.acct, OwnerName: "Late " + o.acct, OpeningBalanceCents: o.opening})
		e2eAccounts.Store(o.acct, true)
		if o.err != nil {
			r.history = append(r.history, o)
			r.fail("could not open a late account", []violation{{seq: o.seq, msg: o.err.Error()}})
		}
	}
	return nil
}

// probeWorker delivers a new PIX to an active account and waits, bounded,
// until a dispatcher has started its credit. A worker starts its
// dispatchers only once its start-up (search attributes, Schedules) is
// done: stopping it, or Temporal, in the middle of that makes it exit
// with an error, which is not what the history is about (and the harness's
// killWorker can't take). The probe is an ordinary first delivery, judged
// by the model with its group.
func (r *modelRun) probeWorker() *op {
	g := r.gen
	p := r.m.newPix(g.newPixID())
	o := &op{kind: opWebhook, intent: "probe: the restarted worker dispatches", pix: p.id, wb: wbody{pick(g, g.active), 1 + g.rng.Int64N(500)}}
	g.add(nil, o)
	r.h.run(o, r.s.psp, r.m)
	o.ran = true
	if o.err != nil || o.status != http.StatusAccepted {
		return o // the model says what is wrong with it
	}
	deadline := time.Now().Add(modelQuiesceWithin)
	for time.Now().Before(deadline) {
		var dispatched bool
		err := r.s.store.Pool().QueryRow(context.Background(),
			`SELECT dispatched_at IS NOT NULL OR status <> 'pending' FROM inbox_messages WHERE end_to_end_id = $1`, p.id).Scan(&dispatched)
		if err == nil && dispatched {
			return o
		}
		time.Sleep(20 * time.Millisecond)
	}
	r.history = append(r.history, o)
	r.fail("the restarted worker never dispatched", []violation{{seq: o.seq, msg: "no dispatcher started the probe PIX " + p.id + " within " + modelQuiesceWithin.String(), ents: []string{p.id}}})
	return o
}

// checkpoint waits until every credit and transfer has ended, then holds
// the whole database, the PSP and the reconciliation against the model.
func (r *modelRun) checkpoint(final bool) {
	r.checkpoints++
	if r.temporalDown {
		r.runGroup(r.gen.solo(&op{kind: opTemporalStart, intent: "checkpoint"}))
	}
	if grp := r.gen.heal(); len(grp) > 0 {
		r.runGroup(grp)
	}
	began := time.Now()
	defer func() { r.spent["checkpoints (settling, verifying)"] += time.Since(began) }()
	if vs := r.quiesce(); len(vs) > 0 {
		r.fail(fmt.Sprintf("the service did not settle down within %s", modelQuiesceWithin), vs)
	}
	if vs := r.verify(final); len(vs) > 0 {
		r.fail("the books disagree with the model", vs)
	}
	r.t.Logf("checkpoint %d after op #%d (group %d, %s in, settled and verified in %s): %d PIX stored, %d transfers, %d refunds",
		r.checkpoints, r.gen.seq, r.gen.group, time.Since(r.began).Round(time.Millisecond), time.Since(began).Round(time.Millisecond),
		len(r.m.storedPix(nil)), len(r.m.transOrd), len(r.m.refundOrd))
}

// finish runs the final sweep (every failed PIX of an opened late account
// re-driven) between two checkpoints, the last of which also waits for
// every workflow run to close.
func (r *modelRun) finish() {
	r.checkpoint(false)
	g := r.gen
	g.group++
	var grp []*op
	var swept []*mAccount
	for _, id := range g.late {
		if a := r.m.accounts[id]; a.opened {
			grp = g.add(grp, &op{kind: opRedriveAccount, intent: "final sweep", acct: id})
			swept = append(swept, a)
		}
	}
	if len(grp) > 0 {
		r.runGroup(grp)
		for _, a := range swept {
			a.swept = true
		}
	}
	r.checkpoint(true)
}

// quiesce waits, bounded, until no PIX is pending, no transfer or refund
// open and no scheduled PIX past its time still to run.
func (r *modelRun) quiesce() []violation {
	ctx := context.Background()
	pool := r.s.store.Pool()
	began := time.Now()
	deadline := began.Add(modelQuiesceWithin)
	logged := false
	for {
		var pending, open int
		err := pool.QueryRow(ctx, `SELECT
			(SELECT count(*) FROM inbox_messages WHERE status = 'pending'),
			(SELECT count(*) FROM pix_transfers WHERE status IN ('debited', 'submitted')) +
			(SELECT count(*) FROM pix_refunds WHERE status IN ('debited', 'requested')) +
			(SELECT count(*) FROM pix_scheduled WHERE status = 'scheduled' AND run_at <= now())`).Scan(&pending, &open)
		if err != nil {
			return []violation{{seq: -1, msg: "read the database: " + err.Error()}}
		}
		if pending == 0 && open == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return r.stuck(pending, open)
		}
		if !logged && time.Since(began) > 5*time.Second {
			logged = true
			var b strings.Builder
			for _, v := range r.stuck(pending, open) {
				fmt.Fprintf(&b, "\n  %s", v.msg)
			}
			r.t.Logf("still settling after %s:%s", time.Since(began).Round(time.Millisecond), b.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// stuck describes what did not end.
func (r *modelRun) stuck(pending, open int) []violation {
	ctx := context.Background()
	vs := []violation{{seq: -1, msg: fmt.Sprintf("%d PIX still pending and %d transfers, refunds and scheduled PIX past their time still open", pending, open)}}
	rows, err := r.s.store.Pool().Query(ctx, `SELECT end_to_end_id, attempts, COALESCE(last_error, '') FROM inbox_messages WHERE status = 'pending' ORDER BY received_at LIMIT 10`)
	if err == nil {
		for rows.Next() {
			var id, last string
			var attempts int
			if rows.Scan(&id, &attempts, &last) == nil {
				vs = append(vs, violation{seq: -1, msg: fmt.Sprintf("PIX %s pending, %d attempts, last error %q", id, attempts, last), ents: []string{id}})
			}
		}
		rows.Close()
	}
	rows, err = r.s.store.Pool().Query(ctx, `SELECT id::text, end_to_end_id, status FROM pix_transfers WHERE status IN ('debited', 'submitted') ORDER BY created_at LIMIT 10`)
	if err == nil {
		for rows.Next() {
			var id, e2e, status string
			if rows.Scan(&id, &e2e, &status) == nil {
				view, held := r.s.psp.Transfer(e2e)
				vs = append(vs, violation{seq: -1, msg: fmt.Sprintf("transfer %s (%s) %s; the PSP holds it: %v %+v", id, e2e, status, held, view), ents: []string{id, e2e}})
			}
		}
		rows.Close()
	}
	rows, err = r.s.store.Pool().Query(ctx, `SELECT id::text, account_id, run_at::text FROM pix_scheduled WHERE status = 'scheduled' AND run_at <= now() ORDER BY run_at LIMIT 10`)
	if err == nil {
		for rows.Next() {
			var id, acct, runAt string
			if rows.Scan(&id, &acct, &runAt) == nil {
				vs = append(vs, violation{seq: -1, msg: fmt.Sprintf("scheduled PIX %s of %s still scheduled, its run_at %s past", id, acct, runAt), ents: []string{id, acct}})
			}
		}
		rows.Close()
	}
	rows, err = r.s.store.Pool().Query(ctx, `SELECT id, end_to_end_id, status FROM pix_refunds WHERE status IN ('debited', 'requested') ORDER BY created_at LIMIT 10`)
	if err == nil {
		for rows.Next() {
			var id, e2e, status string
			if rows.Scan(&id, &e2e, &status) == nil {
				view, held := r.s.psp.Refund(e2e, id)
				vs = append(vs, violation{seq: -1, msg: fmt.Sprintf("refund %s of %s %s; the PSP holds it: %v %+v", id, e2e, status, held, view), ents: []string{id, e2e}})
			}
		}
		rows.Close()
	}
	return vs
}

// dbPix is an inbox row (inboxPresence 1) and its credit (creditRows),
// either of which may be missing.
type dbPix struct {
	acct                      string
	amount                    int64
	status                    string
	deliveries                int
	credited                  bool
	creditAcct                string
	creditAmount              int64
	creditRows, inboxPresence int
}

// verify holds the quiesced service against the model, then makes the
// model's open questions (which PIX of a late account were credited, how
// each transfer ended) what the service and the PSP settled.
func (r *modelRun) verify(final bool) []violation {
	ctx := context.Background()
	pool := r.s.store.Pool()
	v := &verdicts{}
	fatal := func(err error) []violation { return []violation{{seq: -1, msg: "read the database: " + err.Error()}} }

	rows := map[string]*dbPix{}
	q, err := pool.Query(ctx, `SELECT end_to_end_id, COALESCE(account_id, ''), amount_cents, status, deliveries FROM inbox_messages`)
	if err != nil {
		return fatal(err)
	}
	for q.Next() {
		var id string
		d := &dbPix{inboxPresence: 1}
		if err := q.Scan(&id, &d.acct, &d.amount, &d.status, &d.deliveries); err != nil {
			q.Close()
			return fatal(err)
		}
		rows[id] = d
	}
	q.Close()
	q, err = pool.Query(ctx, `SELECT end_to_end_id, account_id, amount_cents FROM pix_credits`)
	if err != nil {
		return fatal(err)
	}
	for q.Next() {
		var id, acct string
		var amount int64
		if err := q.Scan(&id, &acct, &amount); err != nil {
			q.Close()
			return fatal(err)
		}
		d := rows[id]
		if d == nil {
			d = &dbPix{}
			rows[id] = d
		}
		d.credited, d.creditAcct, d.creditAmount = true, acct, amount
		d.creditRows++
	}
	q.Close()

	for _, p := range r.m.pixOrder {
		d := rows[p.id]
		delete(rows, p.id)
		ents := []string{p.id}
		if p.first == nil {
			if d != nil {
				v.add(nil, ents, "PIX %s was never stored (no delivery answered 202), but the database has it: %+v", p.id, *d)
			}
			continue
		}
		ents = append(ents, p.first.acct)
		exp := r.m.expect(p)
		switch {
		case d == nil || d.inboxPresence == 0:
			v.add(nil, ents, "PIX %s was acknowledged (202) but has no inbox row (%+v)", p.id, d)
			continue
		case d.acct != p.first.acct || d.amount != p.first.amount:
			v.add(nil, ents, "PIX %s is stored as %s %d, but the first delivery acknowledged was %s %d", p.id, d.acct, d.amount, p.first.acct, p.first.amount)
		case d.deliveries != p.deliveries:
			v.add(nil, ents, "PIX %s counts %d deliveries; %d were acknowledged (202)", p.id, d.deliveries, p.deliveries)
		}
		switch d.status {
		case pix.StatusDone:
			if exp == expectFail {
				v.add(nil, ents, "PIX %s to %s account %s was credited; it must have failed", p.id, r.m.accounts[p.first.acct].kind, p.first.acct)
			}
			if !d.credited || d.creditAcct != p.first.acct || d.creditAmount != p.first.amount || d.creditRows != 1 {
				v.add(nil, ents, "PIX %s is done but its credit is %v %s %d (%d rows)", p.id, d.credited, d.creditAcct, d.creditAmount, d.creditRows)
			}
		case pix.StatusFailed:
			if exp == expectCredit {
				v.add(nil, ents, "PIX %s to %s account %s failed; it must be credited", p.id, r.m.accounts[p.first.acct].kind, p.first.acct)
			}
			if d.credited {
				v.add(nil, ents, "PIX %s is failed but has a credit", p.id)
			}
		default:
			v.add(nil, ents, "PIX %s is %s after the service settled down", p.id, d.status)
		}
		p.verified, p.touched, p.credited = d.status, false, d.status == pix.StatusDone
	}
	for id, d := range rows {
		v.add(nil, []string{id}, "the database has PIX %s, which no request of the history stored: %+v", id, *d)
	}

	// The scheduled PIX first: an executed one's transfer joins the
	// transfers verified next.
	v.list = append(v.list, r.verifyScheduled()...)
	v.list = append(v.list, r.verifyTransfers()...)
	v.list = append(v.list, r.verifyRefunds()...)

	// The balances, to the centavo.
	balances := map[string]int64{}
	q, err = pool.Query(ctx, `SELECT id, balance_cents FROM accounts`)
	if err != nil {
		return fatal(err)
	}
	for q.Next() {
		var id string
		var b int64
		if err := q.Scan(&id, &b); err != nil {
			q.Close()
			return fatal(err)
		}
		balances[id] = b
	}
	q.Close()
	for _, a := range r.m.acctOrder {
		b, exists := balances[a.id]
		if exists != a.opened {
			v.add(nil, []string{a.id}, "account %s exists=%v in the database; the model says %v", a.id, exists, a.opened)
			continue
		}
		if !exists {
			continue
		}
		lo, hi := r.m.bounds(a)
		if lo != hi || b != lo {
			v.add(nil, []string{a.id}, "account %s has balance %d; the model says %d (%s)", a.id, b, lo, r.breakdown(a))
		}
	}

	v.list = append(v.list, r.verifyEvents()...)

	// The service's own reconciliation.
	status, body, _, err := r.h.send(http.MethodGet, "/admin/reconcile", nil, nil)
	var rec struct {
		Balanced bool `json:"balanced"`
	}
	if err != nil || status != http.StatusOK || json.Unmarshal(body, &rec) != nil || !rec.Balanced {
		v.add(nil, nil, "GET /admin/reconcile must report the books balanced: %d %s %v", status, body, err)
	}
	if final && len(v.list) == 0 {
		v.list = append(v.list, r.waitWorkflowsClosed()...)
		v.list = append(v.list, r.waitEventsPublished()...)
	}
	r.m.lastCheckpoint = r.m.group
	return v.list
}

// verifyTransfers holds every transfer against what the PSP finally holds
// for its end_to_end_id.
func (r *modelRun) verifyTransfers() []violation {
	ctx := context.Background()
	v := &verdicts{}
	type dbTransfer struct {
		e2e, acct, pixKey, status string
		amount                    int64
		refunds                   int
		refunded                  int64
	}
	trs := map[string]*dbTransfer{}
	q, err := r.s.store.Pool().Query(ctx, `
		SELECT t.id::text, t.end_to_end_id, t.account_id, t.pix_key, t.status, t.amount_cents,
		       (SELECT count(*) FROM pix_transfer_refunds f WHERE f.transfer_id = t.id),
		       COALESCE((SELECT sum(amount_cents) FROM pix_transfer_refunds f WHERE f.transfer_id = t.id), 0)::bigint
		FROM pix_transfers t`)
	if err != nil {
		return []violation{{seq: -1, msg: "read the database: " + err.Error()}}
	}
	trs, err = collect(q, trs, func(row pgx.Rows) (string, *dbTransfer, error) {
		var id string
		d := &dbTransfer{}
		err := row.Scan(&id, &d.e2e, &d.acct, &d.pixKey, &d.status, &d.amount, &d.refunds, &d.refunded)
		return id, d, err
	})
	if err != nil {
		return []violation{{seq: -1, msg: "read the database: " + err.Error()}}
	}
	for _, t := range r.m.transOrd {
		d := trs[t.id]
		delete(trs, t.id)
		ents := []string{t.id, t.e2e, t.pixKey}
		if d == nil {
			v.add(nil, ents, "transfer %s was answered 201 but is not in the database", t.id)
			continue
		}
		if d.e2e != t.e2e || d.acct != t.acct || d.pixKey != t.pixKey || d.amount != t.amount {
			v.add(nil, ents, "transfer %s is stored as %+v, not as answered", t.id, *d)
		}
		view, held := r.s.psp.Transfer(t.e2e)
		want := ""
		switch {
		case held && view.Status == psp.StatusSettled:
			want = pix.TransferSettled
		case held && view.Status == psp.StatusRejected:
			want = pix.TransferRefunded
		case held:
			v.add(nil, ents, "transfer %s is %s here while the PSP still holds it %s", t.id, d.status, view.Status)
			t.final = d.status // the books are then checked on the status it has
			continue
		default:
			// I8: a refund needs the PSP's own record saying rejected;
			// and nothing settles what the PSP never held.
			v.add(nil, ents, "transfer %s is %s here, but the PSP holds no transfer %s", t.id, d.status, t.e2e)
			t.final = d.status
			continue
		}
		if held && (view.AmountCents != t.amount || view.AccountID != t.acct || view.PixKey != t.pixKey) {
			v.add(nil, ents, "the PSP holds transfer %s as %+v, not as debited", t.e2e, view)
		}
		switch {
		case d.status != want:
			v.add(nil, ents, "transfer %s is %s here, but the PSP holds it %s: it must be %s", t.id, d.status, view.Status, want)
			want = d.status // the books are then checked on the status it has
		case want == pix.TransferSettled && d.refunds != 0:
			v.add(nil, ents, "settled transfer %s has %d refunds", t.id, d.refunds)
		case want == pix.TransferRefunded && (d.refunds != 1 || d.refunded != t.amount):
			v.add(nil, ents, "refunded transfer %s has %d refunds of %d in all; one of %d expected", t.id, d.refunds, d.refunded, t.amount)
		}
		t.final = want
	}
	for id, d := range trs {
		v.add(nil, []string{id, d.e2e, d.acct}, "the database has transfer %s (%+v), which no answer of the history told of: a debit nobody was answered", id, *d)
	}
	return v.list
}

// verifyRefunds holds every refund against the model and against what the
// PSP finally holds under its id: ended (no refund open after quiescing),
// returned if the PSP returned it and reversed, once, if it did not, as the
// PIX's refund behaviour says; no PIX's refunds hold more than its credit;
// no refund nobody was answered.
func (r *modelRun) verifyRefunds() []violation {
	ctx := context.Background()
	v := &verdicts{}
	type dbRefund struct {
		e2e, acct, status string
		amount            int64
		reversals         int
		reversed          int64
	}
	rows, err := r.s.store.Pool().Query(ctx, `
		SELECT f.id, f.end_to_end_id, f.account_id, f.status, f.amount_cents,
		       (SELECT count(*) FROM pix_refund_reversals x WHERE x.refund_id = f.id),
		       COALESCE((SELECT sum(amount_cents) FROM pix_refund_reversals x WHERE x.refund_id = f.id), 0)::bigint
		FROM pix_refunds f`)
	if err != nil {
		return []violation{{seq: -1, msg: "read the database: " + err.Error()}}
	}
	refunds, err := collect(rows, map[string]*dbRefund{}, func(row pgx.Rows) (string, *dbRefund, error) {
		var id string
		d := &dbRefund{}
		err := row.Scan(&id, &d.e2e, &d.acct, &d.status, &d.amount, &d.reversals, &d.reversed)
		return id, d, err
	})
	if err != nil {
		return []violation{{seq: -1, msg: "read the database: " + err.Error()}}
	}
	// I2 per PIX: what its refunds hold (all but the reversed) never
	// exceeds its credit.
	rows, err = r.s.store.Pool().Query(ctx, `
		SELECT c.end_to_end_id, c.amount_cents, sum(f.amount_cents)::bigint FROM pix_credits c
		JOIN pix_refunds f ON f.end_to_end_id = c.end_to_end_id AND f.status <> 'reversed'
		GROUP BY 1, 2 HAVING sum(f.amount_cents) > c.amount_cents`)
	if err != nil {
		return []violation{{seq: -1, msg: "read the database: " + err.Error()}}
	}
	for rows.Next() {
		var e2e string
		var credit, held int64
		if err := rows.Scan(&e2e, &credit, &held); err != nil {
			rows.Close()
			return []violation{{seq: -1, msg: "read the database: " + err.Error()}}
		}
		v.add(nil, []string{e2e}, "the refunds of PIX %s hold %d, more than its credit %d", e2e, held, credit)
	}
	rows.Close()
	for _, f := range r.m.refundOrd {
		d := refunds[f.id]
		delete(refunds, f.id)
		ents := []string{f.id, f.e2e, f.acct}
		if d == nil {
			v.add(nil, ents, "refund %s was answered 201 but is not in the database", f.id)
			continue
		}
		if d.e2e != f.e2e || d.acct != f.acct || d.amount != f.amount {
			v.add(nil, ents, "refund %s is stored as %+v, not as answered", f.id, *d)
		}
		view, held := r.s.psp.Refund(f.e2e, f.id)
		want := ""
		switch {
		case held && view.Status == psp.RefundReturned:
			want = pix.RefundReturned
		case held && view.Status == psp.RefundNotDone:
			want = pix.RefundReversed
		case held:
			v.add(nil, ents, "refund %s is %s here while the PSP still holds it %s", f.id, d.status, view.Status)
		default:
			v.add(nil, ents, "refund %s is %s here, but the PSP holds no devolução %s of %s", f.id, d.status, f.id, f.e2e)
		}
		if held && (view.AmountCents != f.amount || view.EndToEndID != f.e2e) {
			v.add(nil, ents, "the PSP holds devolução %s as %+v, not as debited", f.id, view)
		}
		switch {
		case want != "" && d.status != want:
			v.add(nil, ents, "refund %s is %s here, but the PSP holds it %s: it must be %s", f.id, d.status, view.Status, want)
		case d.status != f.exp:
			v.add(nil, ents, "refund %s is %s, but its PIX's refund behaviour (%s) says %s", f.id, d.status, f.mode, f.exp)
		}
		switch {
		case d.status == pix.RefundReversed && (d.reversals != 1 || d.reversed != f.amount):
			v.add(nil, ents, "reversed refund %s has %d reversals of %d in all; one of %d expected", f.id, d.reversals, d.reversed, f.amount)
		case d.status != pix.RefundReversed && d.reversals != 0:
			v.add(nil, ents, "%s refund %s has %d reversals", d.status, f.id, d.reversals)
		}
		f.final = d.status // the books are checked on the status it has
	}
	for id, d := range refunds {
		v.add(nil, []string{id, d.e2e, d.acct}, "the database has refund %s (%+v), which no answer of the history told of: a debit nobody was answered", id, *d)
	}
	return v.list
}

// monitorRefunds checks, while the history runs, that no refund's final
// status here contradicts the PSP's record (both only ever move to a final
// status): returned only if the PSP returned it, reversed only if the PSP
// did not make it.
func (r *modelRun) monitorRefunds() []violation {
	rows, err := r.finalRows(`SELECT id, end_to_end_id, status FROM pix_refunds WHERE status IN ('returned', 'reversed')`)
	if err != nil {
		return []violation{{seq: -1, msg: "read the database: " + err.Error()}}
	}
	v := &verdicts{}
	for _, x := range rows {
		view, held := r.s.psp.Refund(x.e2e, x.id)
		switch {
		case x.status == pix.RefundReturned && (!held || view.Status != psp.RefundReturned):
			v.add(nil, []string{x.id, x.e2e}, "refund %s is returned here while the PSP holds it %v %s", x.id, held, view.Status)
		case x.status == pix.RefundReversed && (!held || view.Status != psp.RefundNotDone):
			v.add(nil, []string{x.id, x.e2e}, "refund %s is reversed here while the PSP holds it %v %s: the money is returned and credited back", x.id, held, view.Status)
		}
	}
	return v.list
}

// finalRow is a saga's row in a final status, as a monitor reads it.
type finalRow struct{ id, e2e, status string }

// finalRows reads query's (id, end_to_end_id, status) rows.
func (r *modelRun) finalRows(query string) ([]finalRow, error) {
	q, err := r.s.store.Pool().Query(context.Background(), query)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(q, func(row pgx.CollectableRow) (finalRow, error) {
		var x finalRow
		err := row.Scan(&x.id, &x.e2e, &x.status)
		return x, err
	})
}

// collect reads rows into a map.
func collect[T any](rows pgx.Rows, into map[string]T, scan func(pgx.Rows) (string, T, error)) (map[string]T, error) {
	defer rows.Close()
	for rows.Next() {
		k, v, err := scan(rows)
		if err != nil {
			return into, err
		}
		into[k] = v
	}
	return into, rows.Err()
}

// monitorTransfers checks, while the history runs, that no final status
// here contradicts the PSP: settled here only if the PSP settled it,
// refunded here only if the PSP rejected it. Both sides
// only ever move to a final status, so reading one then the other is sound.
// (I8: refunded only once the PSP's own record says rejected.)
func (r *modelRun) monitorTransfers() []violation {
	rows, err := r.finalRows(`SELECT id::text, end_to_end_id, status FROM pix_transfers WHERE status IN ('settled', 'refunded')`)
	if err != nil {
		return []violation{{seq: -1, msg: "read the database: " + err.Error()}}
	}
	v := &verdicts{}
	for _, x := range rows {
		view, held := r.s.psp.Transfer(x.e2e)
		ents := []string{x.id, x.e2e}
		if t := r.m.transfers[x.id]; t != nil {
			ents = append(ents, t.pixKey)
		}
		switch {
		case x.status == pix.TransferSettled && (!held || view.Status != psp.StatusSettled):
			v.add(nil, ents, "transfer %s is settled here while the PSP holds it %v %s", x.id, held, view.Status)
		case x.status == pix.TransferRefunded && !held:
			v.add(nil, ents, "transfer %s is refunded here while the PSP holds no such transfer (I8: a refund needs the PSP's record saying rejected)", x.id)
		case x.status == pix.TransferRefunded && view.Status != psp.StatusRejected:
			v.add(nil, ents, "transfer %s is refunded here while the PSP holds it %s: the money is sent and given back", x.id, view.Status)
		}
	}
	return v.list
}

// waitWorkflowsClosed waits, bounded, until no run of the stack's task
// queues is open but the scheduled PIX's still to come (each of which must
// be open, sleeping until its date) and a cancelled one's whose wake-up
// signal may have been lost.
func (r *modelRun) waitWorkflowsClosed() []violation {
	ctx := context.Background()
	mayStay, mustStay := r.scheduledRuns()
	deadline := time.Now().Add(modelWorkflowsWithin)
	for {
		open, err := r.openRuns(ctx)
		var stray, missing []string
		if err == nil {
			for id := range open {
				if !mayStay[id] {
					stray = append(stray, id)
				}
			}
			for id := range mustStay {
				if !open[id] {
					missing = append(missing, id)
				}
			}
			if len(stray) == 0 && len(missing) == 0 {
				return nil
			}
		}
		if time.Now().After(deadline) {
			if err != nil {
				return []violation{{seq: -1, msg: "list the open workflow runs: " + err.Error()}}
			}
			var vs []violation
			if len(stray) > 0 {
				slices.Sort(stray)
				vs = append(vs, violation{seq: -1, msg: fmt.Sprintf("workflow runs still open after %s, with nothing left to do: %v", modelWorkflowsWithin, stray), ents: stray})
			}
			if len(missing) > 0 {
				slices.Sort(missing)
				vs = append(vs, violation{seq: -1, msg: fmt.Sprintf("the runs of scheduled PIX still to come are not open (sleeping until their date): %v", missing), ents: missing})
			}
			return vs
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// breakdown explains the model's balance of an account.
func (r *modelRun) breakdown(a *mAccount) string {
	var credits, debits, refunds int64
	var nc, nd, nr int
	for _, p := range a.pix {
		if p.credited {
			credits += p.first.amount
			nc++
		}
	}
	for _, t := range a.transfers {
		debits += t.amount
		nd++
		if t.final == pix.TransferRefunded {
			refunds += t.amount
			nr++
		}
	}
	var returned, reversals int64
	var nf, nv int
	for _, f := range a.refunds {
		returned += f.amount
		nf++
		if f.final == pix.RefundReversed {
			reversals += f.amount
			nv++
		}
	}
	return fmt.Sprintf("opening %d + %d credits %d - %d debits %d + %d refunds %d - %d devoluções %d + %d reversals %d",
		a.opening, nc, credits, nd, debits, nr, refunds, nf, returned, nv, reversals)
}

// fail reports the violations with the seed and the history, and stops the
// test.
func (r *modelRun) fail(what string, vs []violation) {
	r.t.Helper()
	ents := map[string]bool{}
	var b strings.Builder
	fmt.Fprintf(&b, "MODEL: %s (seed %d, %d ops planned, %d run, group %d, %s in)\n", what, r.seed, r.ops, r.gen.seq, r.gen.group,
		time.Since(r.began).Round(time.Millisecond))
	for i, v := range vs {
		if i == 20 {
			fmt.Fprintf(&b, "  ... and %d more\n", len(vs)-i)
			break
		}
		if v.seq >= 0 {
			fmt.Fprintf(&b, "  at op #%d: %s\n", v.seq, v.msg)
		} else {
			fmt.Fprintf(&b, "  %s\n", v.msg)
		}
		for _, e := range v.ents {
			ents[e] = true
		}
	}
	fmt.Fprintf(&b, "reproduce (in tooling/): PIX_MODEL_SEED=%d PIX_MODEL_OPS=%d go test -tags e2e ./e2e -run TestModelRandomHistories -count=1 -v\n", r.seed, r.ops)
	path := filepath.Join(os.TempDir(), fmt.Sprintf("pix-model-%d.history", r.seed))
	var all strings.Builder
	for _, o := range r.history {
		all.WriteString(o.String())
		all.WriteByte('\n')
	}
	if err := os.WriteFile(path, []byte(all.String()), 0o644); err == nil {
		fmt.Fprintf(&b, "the whole history (%d ops): %s\n", len(r.history), path)
	}
	if len(ents) > 0 {
		var rel []*op
		for _, o := range r.history {
			if o.touches(ents) {
				rel = append(rel, o)
			}
		}
		if len(rel) > 300 {
			rel = rel[len(rel)-300:]
		}
		fmt.Fprintf(&b, "the history of %v (%d ops, crashes and outages included):\n", slices.Sorted(maps.Keys(ents)), len(rel))
		for _, o := range rel {
			fmt.Fprintf(&b, "  %s\n", o)
		}
	}
	tail := r.history
	if len(ents) > 0 && len(tail) > 60 {
		tail = tail[len(tail)-60:]
	} else if len(tail) > 600 {
		tail = tail[len(tail)-600:]
	}
	fmt.Fprintf(&b, "the last %d ops:\n", len(tail))
	for _, o := range tail {
		fmt.Fprintf(&b, "  %s\n", o)
	}
	r.t.Fatal(b.String())
}

// coverage says what the history exercised: the answers by kind, the PIX
// and transfers by outcome, the resubmissions the PSP saw.
func (r *modelRun) coverage() string {
	answers := map[string]int{}
	for _, o := range r.history {
		key := ""
		switch o.kind {
		case opWebhook:
			key = fmt.Sprintf("webhook %d", o.status)
			if m := o.answer(); o.status == http.StatusAccepted && m != nil {
				key += fmt.Sprintf(" duplicate=%v %v", m["duplicate"], m["status"])
			}
		case opRedrive:
			key = fmt.Sprintf("redrive %d", o.status)
		case opRedriveAccount:
			key = fmt.Sprintf("redrive-account %d", o.status)
		case opTransfer:
			key = fmt.Sprintf("POST /pix %d", o.status)
			if o.replayed {
				key += " replay"
			}
		case opRefund:
			key = fmt.Sprintf("refund %d", o.status)
			if o.replayed {
				key += " replay"
			}
			if o.stranger {
				key += " stranger"
			}
		case opScheduled:
			key = fmt.Sprintf("POST /pix/scheduled %d", o.status)
			if o.replayed {
				key += " replay"
			}
			if m := o.answer(); o.status == http.StatusCreated && m != nil && m["scheduled_for"] == saoPauloDate(r.began, 0) {
				key += " today"
			}
		case opScheduledGet, opScheduledCancel:
			key = fmt.Sprintf("%s /pix/scheduled %d", map[opKind]string{opScheduledGet: "GET", opScheduledCancel: "DELETE"}[o.kind], o.status)
			if s, _ := o.answer()["status"].(string); s != "" {
				key += " " + s
			}
			if o.stranger {
				key += " stranger"
			}
		case opRefundBehavior:
			key = "psp refunds " + string(o.rbehavior.Mode)
		case opBehavior:
			key = "psp " + string(o.behavior.Mode)
		case opCrash:
			key = "worker crash"
		case opTemporalStop:
			key = "temporal stop"
		default:
			continue
		}
		if c := o.errCode(); c != "" {
			key += " " + c
		}
		answers[key]++
	}
	outcomes := map[string]int{}
	for _, p := range r.m.storedPix(nil) {
		outcomes["pix "+p.verified]++
	}
	for _, f := range r.m.refundOrd {
		outcomes["refund "+string(f.mode)+" "+f.final]++
		if view, ok := r.s.psp.Refund(f.e2e, f.id); ok && view.Received > 1 {
			outcomes["refund asked again at the psp"]++
		}
	}
	for _, s := range r.m.schedOrd {
		outcomes["scheduled "+map[bool]string{true: "today ", false: "later "}[s.today]+s.status]++
	}
	for _, t := range r.m.transOrd {
		outcomes["transfer "+t.final]++
		if view, ok := r.s.psp.Transfer(t.e2e); ok && view.Received > 1 {
			outcomes["transfer resubmitted to the psp"]++
		}
	}
	var b strings.Builder
	b.WriteString("time:")
	for _, k := range slices.Sorted(maps.Keys(r.spent)) {
		fmt.Fprintf(&b, "\n  %10s  %s", r.spent[k].Round(time.Millisecond), k)
	}
	b.WriteString("\ncoverage:")
	for _, m := range []map[string]int{answers, outcomes} {
		for _, k := range slices.Sorted(maps.Keys(m)) {
			fmt.Fprintf(&b, "\n  %5d  %s", m[k], k)
		}
	}
	return b.String()
}

// verifyEvents holds the outbox against the model (I6): one
// pix.credit.settled per credited PIX and none for the others, at least one
// pix.credit.failed per failed PIX, one pix.transfer.debited per transfer
// and one settled or refunded event as it ended; no event of anything the
// history did not make. Run after verify and verifyTransfers, on their
// findings.
func (r *modelRun) verifyEvents() []violation {
	ctx := context.Background()
	counts := map[[2]string]map[string]int{} // aggregate -> event type -> count
	q, err := r.s.store.Pool().Query(ctx, `SELECT aggregate_type, aggregate_id, event_type, count(*) FROM outbox_events GROUP BY 1, 2, 3`)
	if err != nil {
		return []violation{{seq: -1, msg: "read the outbox: " + err.Error()}}
	}
	for q.Next() {
		var typ, id, event string
		var n int
		if err := q.Scan(&typ, &id, &event, &n); err != nil {
			q.Close()
			return []violation{{seq: -1, msg: "read the outbox: " + err.Error()}}
		}
		agg := [2]string{typ, id}
		if counts[agg] == nil {
			counts[agg] = map[string]int{}
		}
		counts[agg][event] = n
	}
	q.Close()
	v := &verdicts{}
	take := func(typ, id string) map[string]int {
		c := counts[[2]string{typ, id}]
		delete(counts, [2]string{typ, id})
		return c
	}
	for _, p := range r.m.pixOrder {
		c := take(db.AggregateCredit, p.id)
		if p.first == nil {
			if len(c) > 0 {
				v.add(nil, []string{p.id}, "events %v for PIX %s, which was never stored", c, p.id)
			}
			continue
		}
		want := 0
		if p.verified == pix.StatusDone {
			want = 1
		}
		if c[db.EventCreditSettled] != want {
			v.add(nil, []string{p.id}, "PIX %s is %s with %d %s events; %d expected", p.id, p.verified, c[db.EventCreditSettled], db.EventCreditSettled, want)
		}
		if p.verified == pix.StatusFailed && c[db.EventCreditFailed] == 0 {
			v.add(nil, []string{p.id}, "PIX %s is failed without a %s event", p.id, db.EventCreditFailed)
		}
		for e := range c {
			if e != db.EventCreditSettled && e != db.EventCreditFailed {
				v.add(nil, []string{p.id}, "PIX %s has a %s event", p.id, e)
			}
		}
	}
	for _, t := range r.m.transOrd {
		c := take(db.AggregateTransfer, t.id)
		want := map[string]int{db.EventTransferDebited: 1}
		switch t.final {
		case pix.TransferSettled:
			want[db.EventTransferSettled] = 1
		case pix.TransferRefunded:
			want[db.EventTransferRefunded] = 1
		}
		for _, e := range []string{db.EventTransferDebited, db.EventTransferSettled, db.EventTransferRefunded} {
			if c[e] != want[e] {
				v.add(nil, []string{t.id, t.e2e, t.pixKey}, "transfer %s (%s) has events %v; expected %v", t.id, t.final, c, want)
				break
			}
		}
	}
	for _, f := range r.m.refundOrd {
		c := take(db.AggregateRefund, f.id)
		want := map[string]int{db.EventRefundDebited: 1}
		switch f.final {
		case pix.RefundReturned:
			want[db.EventRefundReturned] = 1
		case pix.RefundReversed:
			want[db.EventRefundReversed] = 1
		}
		for _, e := range []string{db.EventRefundDebited, db.EventRefundReturned, db.EventRefundReversed} {
			if c[e] != want[e] {
				v.add(nil, []string{f.id, f.e2e, f.acct}, "refund %s (%s) has events %v; expected %v", f.id, f.final, c, want)
				break
			}
		}
		if len(c) > len(want) {
			v.add(nil, []string{f.id, f.e2e, f.acct}, "refund %s (%s) has events %v; expected %v", f.id, f.final, c, want)
		}
	}
	r.verifyScheduledEvents(take, v)
	for agg, c := range counts {
		v.add(nil, []string{agg[1]}, "events %v of %s %s, which the history did not make", c, agg[0], agg[1])
	}
	return v.list
}

// waitEventsPublished waits, bounded, until the relay has published every
// event to the broker (I6: at least once).
func (r *modelRun) waitEventsPublished() []violation {
	deadline := time.Now().Add(modelWorkflowsWithin)
	for {
		var n int
		err := r.s.store.Pool().QueryRow(context.Background(), `SELECT count(*) FROM outbox_events WHERE published_at IS NULL`).Scan(&n)
		if err == nil && n == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return []violation{{seq: -1, msg: fmt.Sprintf("%d outbox events still unpublished after %s (err %v)", n, modelWorkflowsWithin, err)}}
		}
		time.Sleep(100 * time.Millisecond)
	}
}
