//go:build e2e

package e2e

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/pixbank/pix/internal/tooling/pspsim"
)

// modelGen draws a history from a seed: what each next group of
// operations is. Its choices depend on the seed and on the model's state
// (which PIX are stored, which keys answered, the balances' bounds); the
// state follows the service's answers, so a rerun with the same seed
// draws the same history as long as the service answers the same.
type modelGen struct {
	rng   *rand.Rand
	m     *model
	total int
	seq   int
	group int
	nonce string
	// pixSeq numbers the end_to_end_ids.
	pixSeq int

	active  []string
	late    []string
	lateAt  map[string]int // op seq at which a late account opens (beyond total: never)
	closed  string
	ghost   string
	pixKeys []string
	// extraModes are the simulator's modes beyond the five of the first
	// version, when this build has them (see modelExtraModes).
	extraModes []pspsim.Mode

	checkpointEvery int
	nextCheckpoint  int
	crashAt         []int // op seqs of worker crashes
	stopAt          []int // op seqs of Temporal stops
	temporalDown    bool
	upAtGroup       int
	lastCrashGroup  int
	// later are ops decided on for a later group.
	later []laterOp
	// rbGroup is, per PIX, the group in which its refund behaviour last
	// changed, and refundGroup the last group for which a refund of it
	// was drawn: a refund is never drawn into the group of a behaviour
	// change of its PIX, nor a change while a refund of the PIX may be
	// open, so that each refund's outcome is the one its PIX's behaviour
	// says.
	rbGroup     map[string]int
	refundGroup map[string]int
}

func newModelGen(seed int64, total int, m *model) *modelGen {
	rng := rand.New(rand.NewPCG(uint64(seed), uint64(seed)^0x9e3779b97f4a7c15))
	g := &modelGen{rng: rng, m: m, total: total, lateAt: map[string]int{}, rbGroup: map[string]int{}, refundGroup: map[string]int{}}
	g.nonce = fmt.Sprintf("%012X", rng.Uint64()&0xffffffffffff)
	g.active = []string{"acc-0", "acc-1", "acc-2", "acc-3", "acc-4"}
	g.late = []string{"acc-late-0", "acc-late-1"}
	g.closed, g.ghost = "acc-closed", "acc-ghost"
	g.pixKeys = []string{"k0@model.test", "k1@model.test", "k2@model.test", "k3@model.test", "k4@model.test"}
	g.lateAt["acc-late-0"] = total/10 + rng.IntN(total*4/10+1)
	g.lateAt["acc-late-1"] = total*3/10 + rng.IntN(total+1) // past the end a third of the time: never opened
	g.checkpointEvery = min(max(total/4, 100), 900)
	g.nextCheckpoint = g.checkpointEvery*3/4 + rng.IntN(g.checkpointEvery/2+1)
	for range max(2, total/300) {
		g.crashAt = append(g.crashAt, 1+rng.IntN(total))
	}
	if total >= 200 {
		for range 1 + total/2000 {
			g.stopAt = append(g.stopAt, total/10+rng.IntN(total*3/4))
		}
	}
	slices.Sort(g.crashAt)
	slices.Sort(g.stopAt)
	return g
}

// newUUID draws an Idempotency-Key from the seed.
func (g *modelGen) newUUID() uuid.UUID {
	var u uuid.UUID
	binary.LittleEndian.PutUint64(u[:8], g.rng.Uint64())
	binary.LittleEndian.PutUint64(u[8:], g.rng.Uint64())
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	return u
}

// newPixID is a fresh, valid end_to_end_id: E, an ISPB, the run's nonce
// and a sequence number (32 characters).
func (g *modelGen) newPixID() string {
	g.pixSeq++
	return fmt.Sprintf("E99999999%s%011d", g.nonce, g.pixSeq)
}

func (g *modelGen) chance(p float64) bool { return g.rng.Float64() < p }

func pick[T any](g *modelGen, xs []T) T { return xs[g.rng.IntN(len(xs))] }

// creditAccount is the account of a new incoming PIX.
func (g *modelGen) creditAccount() string {
	switch n := g.rng.IntN(100); {
	case n < 72:
		return pick(g, g.active)
	case n < 80:
		return g.closed
	case n < 88:
		return g.ghost
	default:
		return pick(g, g.late)
	}
}

// debitAccount is the account of a new outgoing PIX.
func (g *modelGen) debitAccount() string {
	switch n := g.rng.IntN(100); {
	case n < 80:
		return pick(g, g.active)
	case n < 88:
		return pick(g, g.late)
	case n < 94:
		return g.closed
	default:
		return g.ghost
	}
}

func (g *modelGen) creditAmount() int64 {
	if g.chance(0.15) {
		return 50_000 + g.rng.Int64N(150_000)
	}
	return 1 + g.rng.Int64N(30_000)
}

// debitAmount is within, above or about the account's balance, as the
// model bounds it now.
func (g *modelGen) debitAmount(acct string) (int64, string) {
	a := g.m.accounts[acct]
	if !a.opened || a.kind == kindClosed {
		return 1 + g.rng.Int64N(20_000), "any"
	}
	lo, hi := g.m.bounds(a)
	switch n := g.rng.IntN(100); {
	case n < 50 && lo >= 8:
		return 1 + g.rng.Int64N(lo/4), "within"
	case n < 70:
		return hi + 1 + g.rng.Int64N(10_000), "over"
	default:
		return 1 + g.rng.Int64N(max(hi, 0)+max(hi, 0)/4+1), "about"
	}
}

// behavior draws a PSP behaviour for a key: short delays, finite
// misbehaviour, so that every transfer ends.
func (g *modelGen) behavior() pspsim.Behavior {
	ms := func(lo, hi int) time.Duration { return time.Duration(lo+g.rng.IntN(hi-lo+1)) * time.Millisecond }
	n := g.rng.IntN(20)
	if n >= 18 && len(g.extraModes) > 0 {
		return g.extraBehavior(pick(g, g.extraModes))
	}
	switch {
	case n < 8:
		b := pspsim.Behavior{Mode: pspsim.ModeAccept}
		if g.chance(0.5) {
			b.SettleAfter = ms(20, 400)
		}
		return b
	case n < 11:
		return pspsim.Behavior{Mode: pspsim.ModeReject, Reason: "model: receiver refused"}
	case n < 13:
		return pspsim.Behavior{Mode: pspsim.ModeRejectLater, SettleAfter: ms(20, 400), Reason: "model: rejected later"}
	case n < 15:
		return pspsim.Behavior{Mode: pspsim.ModeFail, Times: 1 + g.rng.IntN(3)}
	default:
		return pspsim.Behavior{Mode: pspsim.ModeTimeout, Times: 1 + g.rng.IntN(2), Delay: ms(50, 1500)}
	}
}

// checkpointDue reports whether a checkpoint is due now.
func (g *modelGen) checkpointDue() bool {
	if g.seq < g.nextCheckpoint || g.seq >= g.total {
		return false
	}
	g.nextCheckpoint = g.seq + g.checkpointEvery*3/4 + g.rng.IntN(g.checkpointEvery/2+1)
	return true
}

func (g *modelGen) done() bool { return g.seq >= g.total }

func (g *modelGen) add(grp []*op, o *op) []*op {
	g.seq++
	o.seq, o.group = g.seq, g.group
	return append(grp, o)
}

// solo returns a group of one op (the Temporal start before a checkpoint).
func (g *modelGen) solo(o *op) []*op {
	g.group++
	if o.kind == opTemporalStart {
		g.temporalDown = false
	}
	return g.add(nil, o)
}

// next draws the next group: 1 to 8 requests at once, with now and then a
// crash, a Temporal outage, a PSP behaviour change; a late account opens
// alone in its group.
func (g *modelGen) next() []*op {
	g.group++
	var grp []*op
	for _, acct := range g.late {
		if a := g.m.accounts[acct]; !a.opened && g.seq >= g.lateAt[acct] {
			return g.add(grp, &op{kind: opOpenLate, acct: acct, opening: g.rng.Int64N(50_000)})
		}
	}
	if g.temporalDown && g.group >= g.upAtGroup {
		g.temporalDown = false
		grp = g.add(grp, &op{kind: opTemporalStart})
	}
	if !g.temporalDown && len(g.stopAt) > 0 && g.seq >= g.stopAt[0] && g.group > g.lastCrashGroup+2 {
		g.stopAt = g.stopAt[1:]
		g.temporalDown, g.upAtGroup = true, g.group+3+g.rng.IntN(10)
		grp = g.add(grp, &op{kind: opTemporalStop})
	} else if !g.temporalDown && len(g.crashAt) > 0 && g.seq >= g.crashAt[0] && len(grp) == 0 {
		g.crashAt = g.crashAt[1:]
		g.lastCrashGroup = g.group
		grp = g.add(grp, &op{kind: opCrash, pause: time.Duration(g.rng.IntN(400)) * time.Millisecond})
	}
	room := 1 + g.rng.IntN(8)
	keep := g.later[:0]
	for _, l := range g.later {
		if l.atGroup <= g.group && room > 0 {
			grp = g.add(grp, l.o)
			room--
			if l.o.kind == opRefund {
				// No change of its PIX's refund behaviour in its group.
				g.refundGroup[l.o.rb.e2e] = max(g.refundGroup[l.o.rb.e2e], g.group)
			}
		} else {
			keep = append(keep, l)
		}
	}
	g.later = keep
	for room > 0 && !g.done() {
		ops := g.draw(room)
		for _, o := range ops {
			grp = g.add(grp, o)
		}
		room -= len(ops)
	}
	return grp
}

// The kinds of draw and their weights.
var modelDraws = []struct {
	name   string
	weight int
}{
	{"first", 24}, {"redeliver", 12}, {"variant", 5}, {"copies", 4}, {"race", 2},
	{"redrive", 4}, {"redrive-unknown", 1}, {"redrive-account", 1},
	{"fresh", 22}, {"replay", 8}, {"reuse", 4}, {"pix-copies", 3}, {"pix-race", 1},
	{"behavior", 4}, {"lost-then-conflict", 3},
	{"refund", 9}, {"refund-replay", 3}, {"refund-reuse", 2}, {"refund-copies", 2}, {"refund-race", 2},
	{"refund-foreign", 2}, {"refund-missing", 1}, {"refund-behavior", 4},
	{"sched-today", 3}, {"sched-later", 2}, {"sched-cancel", 2}, {"sched-get", 1}, {"sched-replay", 1}, {"sched-stranger", 1},
}

// draw draws one operation, or several that belong together (copies, a
// race), at most room of them.
func (g *modelGen) draw(room int) []*op {
	total := 0
	for _, d := range modelDraws {
		total += d.weight
	}
	n := g.rng.IntN(total)
	name := ""
	for _, d := range modelDraws {
		if n < d.weight {
			name = d.name
			break
		}
		n -= d.weight
	}
	stored := g.m.storedPix(nil)
	answered := g.m.answeredKeys()
	switch {
	case (name == "redeliver" || name == "variant" || name == "redrive") && len(stored) == 0:
		name = "first"
	case (name == "replay" || name == "reuse") && len(answered) == 0:
		name = "fresh"
	case (name == "race" || name == "pix-race") && room < 2:
		name = map[string]string{"race": "first", "pix-race": "fresh"}[name]
	case name == "lost-then-conflict" && len(g.extraModes) == 0:
		name = "behavior"
	case name == "refund-replay" || name == "refund-reuse":
		if len(g.m.answeredRefundKeys()) == 0 {
			name = "refund"
		}
	case (name == "refund-copies" || name == "refund-race") && room < 2:
		name = "refund"
	}
	if strings.HasPrefix(name, "refund") && name != "refund-missing" && len(stored) == 0 {
		name = "first"
	}
	switch name {
	case "first":
		p := g.m.newPix(g.newPixID())
		return []*op{{kind: opWebhook, intent: "first", pix: p.id, wb: wbody{g.creditAccount(), g.creditAmount()}}}
	case "redeliver":
		p := g.recent(stored)
		return []*op{{kind: opWebhook, intent: "redeliver", pix: p.id, wb: *p.first, payer: g.chance(0.25)}}
	case "variant":
		p := g.recent(stored)
		return []*op{{kind: opWebhook, intent: "variant", pix: p.id, wb: g.variant(*p.first)}}
	case "copies":
		var id string
		var wb wbody
		if len(stored) > 0 && g.chance(0.5) {
			p := g.recent(stored)
			id, wb = p.id, *p.first
		} else {
			id, wb = g.m.newPix(g.newPixID()).id, wbody{g.creditAccount(), g.creditAmount()}
		}
		var ops []*op
		for range min(room, 2+g.rng.IntN(5)) {
			ops = append(ops, &op{kind: opWebhook, intent: "copy", pix: id, wb: wb, payer: g.chance(0.2)})
		}
		return ops
	case "race":
		// Two bodies under one new end_to_end_id at once: whichever the
		// service stores first is the PIX; the other must be refused.
		p := g.m.newPix(g.newPixID())
		wb := wbody{g.creditAccount(), g.creditAmount()}
		ops := []*op{{kind: opWebhook, intent: "race", pix: p.id, wb: wb}, {kind: opWebhook, intent: "race", pix: p.id, wb: g.variant(wb)}}
		if room > 2 && g.chance(0.5) {
			ops = append(ops, &op{kind: opWebhook, intent: "race", pix: p.id, wb: wb})
		}
		return ops
	case "redrive":
		failable := g.m.storedPix(func(p *mPix) bool { return g.m.expect(p) != expectCredit })
		p := g.recent(stored)
		if len(failable) > 0 && g.chance(0.7) {
			p = g.recent(failable)
		}
		return []*op{{kind: opRedrive, intent: "redrive", pix: p.id}}
	case "redrive-unknown":
		return []*op{{kind: opRedrive, intent: "never-delivered", pix: g.m.newPix(g.newPixID()).id}}
	case "redrive-account":
		accts := append([]string{g.closed, g.ghost, pick(g, g.active)}, g.late...)
		return []*op{{kind: opRedriveAccount, intent: "redrive-account", acct: pick(g, accts)}}
	case "fresh", "pix-copies", "pix-race":
		acct := g.debitAccount()
		amount, why := g.debitAmount(acct)
		tb := tbody{acct, amount, pick(g, g.pixKeys)}
		k := g.m.newKey(g.newUUID(), tb)
		ops := []*op{{kind: opTransfer, intent: name + " " + why, key: k.key, tb: tb, raw: transferJSON(tb, g.rng.IntN(3))}}
		switch name {
		case "pix-copies":
			for range min(room, 2+g.rng.IntN(3)) - 1 {
				ops = append(ops, &op{kind: opTransfer, intent: "pix-copy", key: k.key, tb: tb, raw: transferJSON(tb, g.rng.IntN(3))})
			}
		case "pix-race":
			other := g.otherTransfer(tb)
			ops = append(ops, &op{kind: opTransfer, intent: "pix-race", key: k.key, tb: other, raw: transferJSON(other, g.rng.IntN(3))})
		}
		return ops
	case "replay":
		k := g.recentKey(answered)
		return []*op{{kind: opTransfer, intent: "replay", key: k.key, tb: k.tb, raw: transferJSON(k.tb, g.rng.IntN(3))}}
	case "reuse":
		k := g.recentKey(answered)
		other := g.otherTransfer(k.tb)
		return []*op{{kind: opTransfer, intent: "reuse", key: k.key, tb: other, raw: transferJSON(other, g.rng.IntN(3))}}
	case "lost-then-conflict":
		return g.lostThenConflict(room)
	case "sched-today", "sched-later", "sched-cancel", "sched-get", "sched-replay", "sched-stranger":
		return g.drawScheduled(name, room)
	case "refund", "refund-copies", "refund-race", "refund-replay", "refund-reuse", "refund-foreign", "refund-missing", "refund-behavior":
		return g.drawRefund(name, room)
	default: // behavior
		return []*op{{kind: opBehavior, intent: "behavior", pixKey: pick(g, g.pixKeys), behavior: g.behavior()}}
	}
}

// recent picks a stored PIX, the recent ones more often (they are the
// ones in flight).
func (g *modelGen) recent(ps []*mPix) *mPix {
	if len(ps) > 12 && g.chance(0.6) {
		return ps[len(ps)-12+g.rng.IntN(12)]
	}
	return pick(g, ps)
}

func (g *modelGen) recentKey(ks []*mKey) *mKey {
	if len(ks) > 12 && g.chance(0.6) {
		return ks[len(ks)-12+g.rng.IntN(12)]
	}
	return pick(g, ks)
}

// variant is another PIX under the same end_to_end_id: another amount or
// another account.
func (g *modelGen) variant(w wbody) wbody {
	if g.chance(0.5) {
		return wbody{w.acct, w.amount + 1 + g.rng.Int64N(1000)}
	}
	return wbody{g.other(w.acct, g.creditAccount), w.amount}
}

// other draws from draw until it differs from x (20 tries at most: bounded;
// the last resort differs by construction).
func (g *modelGen) other(x string, draw func() string) string {
	for range 20 {
		if y := draw(); y != x {
			return y
		}
	}
	return x + "-other"
}

// otherTransfer is another request than t (amount, account or key).
func (g *modelGen) otherTransfer(t tbody) tbody {
	switch g.rng.IntN(3) {
	case 0:
		t.amount += 1 + g.rng.Int64N(100)
	case 1:
		t.pixKey = g.other(t.pixKey, func() string { return pick(g, g.pixKeys) })
	default:
		t.acct = g.other(t.acct, g.debitAccount)
	}
	return t
}

// extraBehavior is a behaviour in one of the modes the simulator gained
// after the first version: always a finite number of misbehaving
// submissions, so that every transfer can end.
func (g *modelGen) extraBehavior(md pspsim.Mode) pspsim.Behavior {
	b := pspsim.Behavior{Mode: md, Times: 1 + g.rng.IntN(2)}
	switch md {
	case pspsim.ModeDuplicateConflict:
		b.Times = 1 + g.rng.IntN(3)
	case pspsim.ModeUnauthorized:
		if g.chance(0.3) {
			b.StatusCode = http.StatusForbidden
		}
		b.StatusQueries = g.chance(0.4)
	}
	if g.chance(0.3) {
		b.SettleAfter = time.Duration(20+g.rng.IntN(380)) * time.Millisecond
	}
	return b
}

// modelExtraModes are the simulator's modes beyond the first five that this
// test drives.
func modelExtraModes() []pspsim.Mode {
	return []pspsim.Mode{pspsim.ModeLoseResponse, pspsim.ModeDuplicateConflict, pspsim.ModeUnauthorized}
}

// lostThenConflict makes a resubmission likely to meet a PSP that treats it
// as an error: a key loses the answer of its next submission (cut, or hung
// past the client's timeout), a transfer goes to it, and one or two groups
// later the key answers resubmissions 409 duplicate_transfer (or refuses
// our credentials 401) for a while. The PSP holds the transfer all along.
func (g *modelGen) lostThenConflict(room int) []*op {
	key := pick(g, g.pixKeys)
	lose := pspsim.Behavior{Mode: pspsim.ModeLoseResponse, Times: 1}
	if g.chance(0.4) {
		lose = pspsim.Behavior{Mode: pspsim.ModeTimeout, Times: 1, Delay: time.Duration(1100+g.rng.IntN(400)) * time.Millisecond}
	}
	then := pspsim.Behavior{Mode: pspsim.ModeDuplicateConflict, Times: 1 + g.rng.IntN(2)}
	if g.chance(0.3) {
		then = pspsim.Behavior{Mode: pspsim.ModeUnauthorized, Times: 1 + g.rng.IntN(2)}
	}
	ops := []*op{{kind: opBehavior, intent: "lose", pixKey: key, behavior: lose}}
	if room < 2 {
		return ops
	}
	acct := pick(g, g.active)
	amount, why := g.debitAmount(acct)
	if lo, _ := g.m.bounds(g.m.accounts[acct]); lo >= 2 {
		amount, why = 1+g.rng.Int64N(lo/2), "within"
	}
	tb := tbody{acct, amount, key}
	k := g.m.newKey(g.newUUID(), tb)
	g.later = append(g.later, laterOp{atGroup: g.group + 1,
		o: &op{kind: opBehavior, intent: "then", pixKey: key, behavior: then, afterHeld: k.key}})
	return append(ops, &op{kind: opTransfer, intent: "fresh " + why, key: k.key, tb: tb, raw: transferJSON(tb, g.rng.IntN(3))})
}

// laterOp is an op the generator decided on earlier, for a later group.
type laterOp struct {
	atGroup int
	o       *op
}

// heal returns the behaviour changes that let every transfer end before a
// checkpoint: a key that refuses status queries until its next submission
// may never get one.
func (g *modelGen) heal() []*op {
	var ops []*op
	for _, k := range g.pixKeys {
		if b := g.m.behaviors[k]; b.Mode == pspsim.ModeUnauthorized && b.StatusQueries {
			ops = append(ops, &op{kind: opBehavior, intent: "heal before a checkpoint", pixKey: k, behavior: pspsim.Behavior{Mode: pspsim.ModeAccept}})
		}
	}
	for _, l := range g.later {
		if l.o.behavior.Mode == pspsim.ModeUnauthorized {
			l.o.behavior.StatusQueries = false
		}
	}
	if len(ops) == 0 {
		return nil
	}
	g.group++
	var grp []*op
	for _, o := range ops {
		grp = g.add(grp, o)
	}
	return grp
}

// refundable picks a PIX to refund: one known credited most of the time,
// else one that may be, else one that never is; never one whose refund
// behaviour changes in this group. nil if there is none.
func (g *modelGen) refundable() *mPix {
	ok := func(p *mPix) bool { return g.rbGroup[p.id] < g.group }
	credited := g.m.storedPix(func(p *mPix) bool { return ok(p) && p.credited })
	maybe := g.m.storedPix(func(p *mPix) bool { return ok(p) && !p.credited && g.m.expect(p) != expectFail })
	never := g.m.storedPix(func(p *mPix) bool { return ok(p) && !p.credited && g.m.expect(p) == expectFail })
	n := g.rng.IntN(100)
	switch {
	case n < 75 && len(credited) > 0:
		return g.recent(credited)
	case n < 92 && len(maybe) > 0:
		return g.recent(maybe)
	case len(never) > 0:
		return g.recent(never)
	}
	if all := g.m.storedPix(ok); len(all) > 0 {
		return g.recent(all)
	}
	return nil
}

// refundAmount is within, above or about what is left of the PIX's credit,
// as the model knows it now.
func (g *modelGen) refundAmount(p *mPix) (int64, string) {
	_, held := p.held()
	room := p.first.amount - held
	switch n := g.rng.IntN(100); {
	case n < 55 && room >= 2:
		return 1 + g.rng.Int64N(room/2), "within"
	case n < 75:
		return max(room, 0) + 1 + g.rng.Int64N(1_000), "over"
	default:
		return 1 + g.rng.Int64N(p.first.amount), "about"
	}
}

// refundReasons are the reasons a refund may give ("" gives none).
var refundReasons = []string{"", "", "pagamento em duplicidade", "devolução pedida pelo cliente", "valor incorreto"}

// canChangeRefundBehavior reports whether p's refund behaviour may change
// now: no refund of it drawn for this group or a later one, none that may
// still be open (every one verified final at a checkpoint).
func (g *modelGen) canChangeRefundBehavior(p *mPix) bool {
	if g.refundGroup[p.id] >= g.group {
		return false
	}
	for _, f := range p.refunds {
		if f.final == "" {
			return false
		}
	}
	return true
}

// refundBehavior draws a refund behaviour: every one ends (a finite number
// of 503s or lost answers), returned or not made.
func (g *modelGen) refundBehavior() pspsim.RefundBehavior {
	settle := func() time.Duration {
		if g.chance(0.5) {
			return time.Duration(20+g.rng.IntN(380)) * time.Millisecond
		}
		return 0
	}
	switch n := g.rng.IntN(100); {
	case n < 25:
		return pspsim.RefundBehavior{Mode: pspsim.RefundModeReturn, SettleAfter: settle()}
	case n < 45:
		return pspsim.RefundBehavior{Mode: pspsim.RefundModeNotDone, SettleAfter: settle(), Reason: "model: conta encerrada"}
	case n < 65:
		return pspsim.RefundBehavior{Mode: pspsim.RefundModeReject, Reason: "model: recusada"}
	case n < 85:
		return pspsim.RefundBehavior{Mode: pspsim.RefundModeFail, Times: 1 + g.rng.IntN(3), SettleAfter: settle()}
	default:
		return pspsim.RefundBehavior{Mode: pspsim.RefundModeLoseResponse, Times: 1 + g.rng.IntN(2), SettleAfter: settle()}
	}
}

// newRefund is a new refund request of p under a new key.
func (g *modelGen) newRefund(p *mPix, intent string) *op {
	amount, why := g.refundAmount(p)
	rb := rbody{p.id, amount, pick(g, refundReasons)}
	k := g.m.newRefundKey(g.newUUID(), rb)
	return &op{kind: opRefund, intent: intent + " " + why, key: k.key, rb: rb, raw: refundJSON(rb, g.rng.IntN(2))}
}

// drawRefund draws the refund operations: a refund (now, or in the next
// group after a new refund behaviour for its PIX), copies of one under one
// key, several of one PIX at once under different keys, replays and reused
// keys, another customer's refund, a refund of a PIX never delivered, a
// refund behaviour.
func (g *modelGen) drawRefund(name string, room int) []*op {
	switch name {
	case "refund-missing":
		rb := rbody{g.m.newPix(g.newPixID()).id, 1 + g.rng.Int64N(10_000), ""}
		k := g.m.newRefundKey(g.newUUID(), rb)
		return []*op{{kind: opRefund, intent: "refund never-delivered", key: k.key, rb: rb, raw: refundJSON(rb, 0)}}
	case "refund-replay":
		k := g.recentKey(g.m.answeredRefundKeys())
		return []*op{{kind: opRefund, intent: "refund-replay", key: k.key, rb: k.rb, raw: refundJSON(k.rb, g.rng.IntN(2))}}
	case "refund-reuse":
		// A refund's key with another refund, or a transfer's key.
		var k *mKey
		if ts := g.m.answeredKeys(); len(ts) > 0 && g.chance(0.3) {
			k = g.recentKey(ts)
		} else {
			k = g.recentKey(g.m.answeredRefundKeys())
		}
		rb := k.rb
		if !k.refund {
			rb = rbody{g.recent(g.m.storedPix(nil)).id, 1 + g.rng.Int64N(1_000), ""}
		} else if g.chance(0.5) {
			rb.amount += 1 + g.rng.Int64N(100)
		} else {
			rb.e2e = g.other(rb.e2e, func() string { return g.recent(g.m.storedPix(nil)).id })
		}
		return []*op{{kind: opRefund, intent: "refund-reuse", key: k.key, rb: rb, raw: refundJSON(rb, g.rng.IntN(2))}}
	case "refund-foreign":
		p := g.recent(g.m.storedPix(nil))
		rb := rbody{p.id, 1 + g.rng.Int64N(p.first.amount), ""}
		return []*op{{kind: opRefund, intent: "refund by another customer", key: g.newUUID(), rb: rb, raw: refundJSON(rb, 0), stranger: true}}
	}
	p := g.refundable()
	if p == nil {
		return nil
	}
	if name == "refund-behavior" {
		if !g.canChangeRefundBehavior(p) {
			name = "refund"
		} else {
			g.rbGroup[p.id] = g.group
			return []*op{{kind: opRefundBehavior, intent: "refund-behavior", pix: p.id, rbehavior: g.refundBehavior()}}
		}
	}
	if _, has := g.m.rbehaviors[p.id]; name == "refund" && !has && g.canChangeRefundBehavior(p) && g.chance(0.5) {
		// Its PIX's first refund behaviour now, the refund in the next
		// group.
		g.rbGroup[p.id] = g.group
		g.refundGroup[p.id] = g.group + 1
		g.later = append(g.later, laterOp{atGroup: g.group + 1, o: g.newRefund(p, "refund")})
		return []*op{{kind: opRefundBehavior, intent: "before a refund", pix: p.id, rbehavior: g.refundBehavior()}}
	}
	g.refundGroup[p.id] = max(g.refundGroup[p.id], g.group)
	switch name {
	case "refund-copies":
		o := g.newRefund(p, "refund-copies")
		ops := []*op{o}
		for range min(room, 2+g.rng.IntN(3)) - 1 {
			ops = append(ops, &op{kind: opRefund, intent: "refund-copy", key: o.key, rb: o.rb, raw: refundJSON(o.rb, g.rng.IntN(2))})
		}
		return ops
	case "refund-race":
		var ops []*op
		for range min(room, 2+g.rng.IntN(3)) {
			ops = append(ops, g.newRefund(p, "refund-race"))
		}
		return ops
	}
	return []*op{g.newRefund(p, "refund")}
}
