//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"sort"

	"github.com/google/uuid"

	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/internal/tooling/pspsim"
)

// The sequential model of the PIX service that TestModelRandomHistories
// holds every answer and the books against. Operations run in small
// concurrent groups; the model judges a group once all its answers are in,
// allowing every outcome that some order of the group's operations (and of
// the background credits and refunds) allows, and then follows the answers
// actually given.

// acctKind is what the service must make of an account.
type acctKind int

const (
	kindActive acctKind = iota // exists, active: takes credits, may send PIX
	kindClosed                 // exists, closed: refuses both
	kindGhost                  // never exists
	kindLate                   // opened in the middle of the history (or never)
)

func (k acctKind) String() string {
	return [...]string{"active", "closed", "ghost", "late"}[k]
}

type mAccount struct {
	id      string
	kind    acctKind
	opening int64
	// opened: the account exists (active and closed from the start, late
	// once its open op ran), since group openedGroup.
	opened      bool
	openedGroup int
	// swept: every failed PIX of the (late, opened) account was re-driven
	// by the final sweep after a checkpoint: all its PIX must end credited.
	swept     bool
	pix       []*mPix // the PIX whose first stored body names the account
	transfers []*mTransfer
	refunds   []*mRefund
	scheduled []*mScheduled
}

// expectation is how a stored PIX must end.
type expectation int

const (
	expectCredit expectation = iota // credited, once
	expectFail                      // failed, never credited
	expectEither                    // a late account opened after it failed: re-driven or not
)

func (e expectation) String() string { return [...]string{"credit", "fail", "either"}[e] }

type mPix struct {
	id string
	// first is the body the service stored (the first delivery it
	// answered duplicate=false); nil until then.
	first       *wbody
	storedGroup int
	// deliveries counts the 202 answers: inbox_messages.deliveries.
	deliveries int
	// credited: an answer said done, or a checkpoint found it credited.
	credited bool
	// verified is what the last checkpoint found (done or failed), and
	// touched whether a delivery or re-drive reached it since.
	verified string
	touched  bool
	// redrivenAfterOpen: a re-drive put it back to pending after its late
	// account was opened (and nothing of the old runs was still running):
	// the new run must credit it.
	redrivenAfterOpen bool
	// refunds are the refunds of the PIX answered 201.
	refunds []*mRefund
}

type mKey struct {
	key uuid.UUID
	// tb (rb for a refund's key) is the request the key was first used
	// with (the one that ran); until it answered, the generator's intended
	// body.
	tb       tbody
	refund   bool
	rb       rbody
	sched    bool // a scheduled PIX's key (its request sb)
	sb       sbody
	answered bool
	status   int
	body     []byte
}

type mTransfer struct {
	id, e2e      string
	acct, pixKey string
	amount       int64
	seq          int
	// final is what the PSP decided, learned at a checkpoint: settled or
	// refunded; "" while it may still be either.
	final string
}

// mRefund is a refund (devolução) answered 201.
type mRefund struct {
	id, e2e, acct string
	amount        int64
	seq           int
	// mode is the PIX's refund behaviour when the refund was made, and exp
	// how it must end by it: returned or reversed.
	mode pspsim.RefundMode
	exp  string
	// final is what the service and the PSP settled, learned at a
	// checkpoint; "" until then.
	final string
}

// refundExpectation is how a devolução the PSP makes under mode ends.
func refundExpectation(mode pspsim.RefundMode) string {
	if mode == pspsim.RefundModeNotDone || mode == pspsim.RefundModeReject {
		return pix.RefundReversed
	}
	return pix.RefundReturned
}

// held is what the PIX's refunds may hold: all but those known reversed
// (hi), and those that can't be reversed any more or ever (lo).
func (p *mPix) held() (lo, hi int64) {
	for _, r := range p.refunds {
		switch {
		case r.final == pix.RefundReversed:
		case r.final == pix.RefundReturned, r.final == "" && r.exp == pix.RefundReturned:
			lo += r.amount
			hi += r.amount
		default:
			hi += r.amount
		}
	}
	return lo, hi
}

type model struct {
	accounts  map[string]*mAccount
	acctOrder []*mAccount
	pix       map[string]*mPix
	pixOrder  []*mPix
	keys      map[uuid.UUID]*mKey
	keyOrder  []*mKey
	transfers map[string]*mTransfer // by transfer id
	byE2E     map[string]*mTransfer
	transOrd  []*mTransfer
	behaviors map[string]pspsim.Behavior // each Pix key's current behaviour
	refunds   map[string]*mRefund        // by refund id
	refundOrd []*mRefund
	// rbehaviors are the PIX's refund behaviours, by end_to_end_id (none:
	// return).
	rbehaviors map[string]pspsim.RefundBehavior
	// sched are the scheduled PIX answered 201, by id.
	sched    map[string]*mScheduled
	schedOrd []*mScheduled
	// temporalDown: the last Temporal stop or start was a stop.
	temporalDown bool
	pixKeys      []string
	group        int
	// lastCheckpoint is the last group before which everything was
	// quiesced and verified.
	lastCheckpoint int
}

func newModel() *model {
	return &model{
		accounts:  map[string]*mAccount{},
		pix:       map[string]*mPix{},
		keys:      map[uuid.UUID]*mKey{},
		transfers: map[string]*mTransfer{},
		byE2E:     map[string]*mTransfer{},
		behaviors: map[string]pspsim.Behavior{},
		refunds:   map[string]*mRefund{},

		rbehaviors: map[string]pspsim.RefundBehavior{},
		sched:      map[string]*mScheduled{},
	}
}

func (m *model) addAccount(id string, kind acctKind, opening int64) *mAccount {
	a := &mAccount{id: id, kind: kind, opening: opening, opened: kind == kindActive || kind == kindClosed, openedGroup: -1}
	m.accounts[id] = a
	m.acctOrder = append(m.acctOrder, a)
	return a
}

func (m *model) newPix(id string) *mPix {
	p := &mPix{id: id}
	m.pix[id] = p
	m.pixOrder = append(m.pixOrder, p)
	return p
}

func (m *model) newKey(key uuid.UUID, tb tbody) *mKey {
	k := &mKey{key: key, tb: tb}
	m.keys[k.key] = k
	m.keyOrder = append(m.keyOrder, k)
	return k
}

func (m *model) newRefundKey(key uuid.UUID, rb rbody) *mKey {
	k := &mKey{key: key, refund: true, rb: rb}
	m.keys[k.key] = k
	m.keyOrder = append(m.keyOrder, k)
	return k
}

// expect is how a stored PIX must end, as of now.
func (m *model) expect(p *mPix) expectation {
	a := m.accounts[p.first.acct]
	switch a.kind {
	case kindActive:
		return expectCredit
	case kindClosed, kindGhost:
		return expectFail
	}
	switch {
	case !a.opened:
		return expectFail
	case p.storedGroup > a.openedGroup, p.redrivenAfterOpen, a.swept:
		return expectCredit
	}
	return expectEither
}

// bounds are the least and the most the account's balance can be now: the
// credits, refunds that are certain, and those that may have happened.
func (m *model) bounds(a *mAccount) (lo, hi int64) {
	lo = a.opening
	var maybe int64
	for _, p := range a.pix {
		switch {
		case p.credited:
			lo += p.first.amount
		case p.verified == pix.StatusFailed && !p.touched:
			// Failed at the last checkpoint; only a delivery or a
			// re-drive can change that.
		case m.expect(p) != expectFail:
			maybe += p.first.amount
		}
	}
	for _, t := range a.transfers {
		lo -= t.amount
		switch t.final {
		case pix.TransferRefunded:
			lo += t.amount
		case "":
			maybe += t.amount
		}
	}
	for _, r := range a.refunds {
		lo -= r.amount
		switch {
		case r.final == pix.RefundReversed:
			lo += r.amount
		case r.final == "" && r.exp == pix.RefundReversed:
			maybe += r.amount
		}
	}
	for _, s := range a.scheduled {
		if s.pending() { // its run may have debited it
			lo -= s.amount
			maybe += s.amount
		}
	}
	return lo, lo + maybe
}

// violation is an answer or a state the model does not allow.
type violation struct {
	seq  int
	msg  string
	ents []string // what it is about: ids, keys, accounts
}

type verdicts struct{ list []violation }

func (v *verdicts) add(o *op, ents []string, format string, args ...any) {
	seq := -1
	if o != nil {
		seq = o.seq
	}
	v.list = append(v.list, violation{seq: seq, msg: fmt.Sprintf(format, args...), ents: ents})
}

// apply judges one group's answers and moves the model on.
func (m *model) apply(g []*op) []violation {
	m.group++
	v := &verdicts{}
	for _, o := range g {
		if o.err != nil && o.kind != opBehavior && o.kind != opRefundBehavior && !o.kind.control() {
			v.add(o, nil, "the request got no answer: %v", o.err)
		}
	}
	if len(v.list) > 0 {
		return v.list
	}
	// The least each account's balance could be at any moment of the
	// group is fixed before the group's own answers tell of credits.
	lo := map[string]int64{}
	for _, a := range m.acctOrder {
		lo[a.id], _ = m.bounds(a)
	}
	shaky := m.temporalDown // a cancel's wake-up signal may be lost
	modes := map[string][]pspsim.Mode{}
	for k, b := range m.behaviors {
		modes[k] = []pspsim.Mode{b.Mode}
	}
	// Whether each PIX was known credited before the group: a credit is
	// never undone, but one the group's answers tell of may have come
	// after a refund of the group was refused.
	creditedBefore := map[string]bool{}
	for _, p := range m.pixOrder {
		creditedBefore[p.id] = p.credited
	}
	for _, o := range g {
		switch o.kind {
		case opRefundBehavior:
			if o.err != nil {
				v.add(o, []string{o.pix}, "the simulator refused the refund behaviour: %v", o.err)
			}
			m.rbehaviors[o.pix] = o.rbehavior
		case opBehavior:
			if o.err != nil {
				v.add(o, []string{o.pixKey}, "the simulator refused the behaviour: %v", o.err)
			}
			m.behaviors[o.pixKey] = o.behavior
			modes[o.pixKey] = append(modes[o.pixKey], o.behavior.Mode)
		case opOpenLate:
			a := m.accounts[o.acct]
			a.opened, a.openedGroup = true, m.group
		case opTemporalStop, opTemporalStart:
			shaky = true
			m.temporalDown = o.kind == opTemporalStop
		}
	}
	// The runs of the scheduled PIX made for today in the group may debit
	// within it: the least balances count them.
	loStart := maps.Clone(lo)
	madeToday := m.applyScheduledCreates(g, v)
	for acct, amount := range madeToday {
		lo[acct] -= amount
	}
	acctRedrives := map[string]bool{}
	for _, o := range g {
		if o.kind == opRedriveAccount {
			acctRedrives[o.acct] = true
		}
	}
	m.applyWebhooks(g, acctRedrives, v)
	m.applyAccountRedrives(g, v)
	transfers := m.applyTransfers(g, v)
	refunds := m.applyRefunds(g, creditedBefore, v)
	// The debits per account: transfers and refunds take from one balance.
	var accts []string
	for id := range transfers {
		accts = append(accts, id)
	}
	for id := range refunds {
		if _, ok := transfers[id]; !ok {
			accts = append(accts, id)
		}
	}
	sort.Strings(accts)
	for _, id := range accts {
		m.applyDebits(m.accounts[id], transfers[id], refunds[id], lo[id], modes, v)
	}
	m.followScheduledRuns(g, loStart, madeToday)
	m.applyScheduledReads(g, shaky, v)
	return v.list
}

func (m *model) applyWebhooks(g []*op, acctRedrives map[string]bool, v *verdicts) {
	byPix := map[string][]*op{}
	var ids []string
	for _, o := range g {
		if o.kind != opWebhook && o.kind != opRedrive {
			continue
		}
		if _, ok := byPix[o.pix]; !ok {
			ids = append(ids, o.pix)
		}
		byPix[o.pix] = append(byPix[o.pix], o)
	}
	for _, id := range ids {
		m.applyPix(m.pix[id], byPix[id], acctRedrives, v)
	}
}

// applyPix judges the group's deliveries and re-drives of one PIX.
func (m *model) applyPix(p *mPix, ops []*op, acctRedrives map[string]bool, v *verdicts) {
	ents := []string{p.id}
	storedBefore := p.first != nil
	creditedBefore := p.credited
	touchedBefore := p.touched
	var first *op
	if !storedBefore {
		for _, o := range ops {
			if o.kind == opWebhook && o.status == http.StatusAccepted && o.answer()["duplicate"] == false {
				if first != nil {
					v.add(o, ents, "two first deliveries of %s (#%d and #%d): one PIX stored twice", p.id, first.seq, o.seq)
					return
				}
				first = o
			}
		}
		if first != nil {
			wb := first.wb
			p.first, p.storedGroup, p.touched = &wb, m.group, true
			a := m.accounts[wb.acct]
			a.pix = append(a.pix, p)
		}
	}
	var exp expectation
	if p.first != nil {
		exp = m.expect(p)
		ents = append(ents, p.first.acct)
	}
	sawDone := false
	for _, o := range ops {
		ans := o.answer()
		switch o.kind {
		case opWebhook:
			switch {
			case p.first == nil:
				v.add(o, ents, "a first delivery of %s was not stored: %d %s", p.id, o.status, o.body)
			case o == first:
				if ans["status"] != pix.StatusPending || ans["end_to_end_id"] != p.id {
					v.add(o, ents, "the first delivery of %s must answer pending, not %s", p.id, o.body)
				}
				p.deliveries++
			case o.wb == *p.first:
				// A redelivery (or a copy): counted, and answered with the
				// row's status. A failed row is re-driven: pending.
				ok := o.status == http.StatusAccepted && ans["duplicate"] == true && ans["end_to_end_id"] == p.id
				status, _ := ans["status"].(string)
				switch status {
				case pix.StatusPending:
					ok = ok && !creditedBefore
				case pix.StatusDone:
					ok = ok && exp != expectFail
				default:
					ok = false
				}
				if !ok {
					why := fmt.Sprintf("expected 202 duplicate=true with status pending%s", map[bool]string{true: " or done", false: ""}[exp != expectFail])
					if creditedBefore {
						why = "expected 202 duplicate=true status=done (it was credited already)"
					}
					if exp == expectFail {
						why += " (its account " + p.first.acct + " takes no credit: never done)"
					}
					v.add(o, ents, "redelivery of %s (%s): %s; got %d %s", p.id, exp, why, o.status, o.body)
				}
				if o.status == http.StatusAccepted {
					p.deliveries++
					p.touched = true
					sawDone = sawDone || status == pix.StatusDone
					if a := m.accounts[p.first.acct]; a.kind == kindLate && a.opened && m.lastCheckpoint >= a.openedGroup && !creditedBefore {
						// Quiesced since the opening: this re-drives a
						// failed row, or finds it done; either way no run
						// from before the opening is left.
						p.redrivenAfterOpen = true
					}
				}
			default:
				if o.status != http.StatusUnprocessableEntity || o.errCode() != "payload_mismatch" {
					v.add(o, ents, "another body under %s (stored: %s %d) must be refused 422 payload_mismatch; got %d %s",
						p.id, p.first.acct, p.first.amount, o.status, o.body)
				}
			}
		case opRedrive:
			code := o.errCode()
			switch {
			case p.first == nil:
				if o.status != http.StatusNotFound || code != "pix_credit_not_found" {
					v.add(o, ents, "re-drive of %s, never stored, must be 404 pix_credit_not_found; got %d %s", p.id, o.status, o.body)
				}
			case o.status == http.StatusAccepted:
				// The row was failed.
				if exp == expectCredit || creditedBefore {
					v.add(o, ents, "re-drive of %s answered 202: its row was failed, but its account %s is %s (it must be credited, never failed)",
						p.id, p.first.acct, m.accounts[p.first.acct].kind)
				}
				p.touched = true
				if a := m.accounts[p.first.acct]; a.kind == kindLate && a.opened {
					p.redrivenAfterOpen = true
				}
			case o.status == http.StatusConflict && code == "pix_credit_not_failed":
				if storedBefore && p.verified == pix.StatusFailed && !touchedBefore && len(ops) == 1 && !acctRedrives[p.first.acct] {
					v.add(o, ents, "re-drive of %s answered 409 pix_credit_not_failed, but it was failed at the last checkpoint and nothing reached it since", p.id)
				}
			case o.status == http.StatusNotFound && code == "pix_credit_not_found" && !storedBefore:
				// The first delivery of the group was not in yet.
			default:
				v.add(o, ents, "re-drive of %s: unexpected answer %d %s", p.id, o.status, o.body)
			}
		}
	}
	if sawDone {
		p.credited = true
	}
}

// applyAccountRedrives judges POST /admin/accounts/{id}/pix/credits/retry.
// Concurrent re-drives of one account share its failed rows: each row is
// re-driven by one of them, and together they re-drive every row that was
// failed at the last checkpoint and that nothing else reached since.
func (m *model) applyAccountRedrives(g []*op, v *verdicts) {
	inGroup := map[string]bool{}
	byAcct := map[string][]*op{}
	var accts []string
	for _, o := range g {
		switch o.kind {
		case opWebhook, opRedrive:
			inGroup[o.pix] = true
		case opRedriveAccount:
			if _, ok := byAcct[o.acct]; !ok {
				accts = append(accts, o.acct)
			}
			byAcct[o.acct] = append(byAcct[o.acct], o)
		}
	}
	for _, acct := range accts {
		ops := byAcct[acct]
		listedBy := map[string]*op{}
		for _, o := range ops {
			ents := []string{acct}
			ans := o.answer()
			if o.status != http.StatusAccepted || ans == nil || ans["account_id"] != acct {
				v.add(o, ents, "account re-drive of %s: expected 202; got %d %s", acct, o.status, o.body)
				continue
			}
			ids, _ := ans["redriven"].([]any)
			for _, x := range ids {
				id, _ := x.(string)
				p := m.pix[id]
				switch {
				case listedBy[id] != nil:
					v.add(o, append(ents, id), "%s was re-driven by two account re-drives at once (#%d and #%d)", id, listedBy[id].seq, o.seq)
				case p == nil || p.first == nil || p.first.acct != acct:
					v.add(o, append(ents, id), "account re-drive of %s re-drove %s, which is no stored PIX of that account", acct, id)
				case m.expect(p) == expectCredit || p.credited:
					v.add(o, append(ents, id), "account re-drive of %s re-drove %s: its row was failed, but it must be credited, never failed", acct, id)
				default:
					p.touched = true
					if a := m.accounts[acct]; a.kind == kindLate && a.opened {
						p.redrivenAfterOpen = true
					}
				}
				listedBy[id] = o
			}
		}
		for _, p := range m.accounts[acct].pix {
			if p.verified == pix.StatusFailed && !p.touched && !inGroup[p.id] && listedBy[p.id] == nil {
				v.add(ops[0], []string{acct, p.id}, "account re-drive of %s left out %s, failed at the last checkpoint and untouched since", acct, p.id)
			}
		}
	}
}

// judgeKey judges a group's requests under one Idempotency-Key k. On a
// key answered before, each is its request again (mine), replayed with the
// key's answer, or another request, refused idempotency_key_reused. On a
// new key exactly one runs, which judgeKey returns, and the key takes its
// answer; a copy of it (same) waits (409) or gets its answer replayed;
// another request is refused.
func judgeKey(k *mKey, ops []*op, mine func(*op) bool, same func(a, b *op) bool, v *verdicts) *op {
	ents := []string{k.key.String()}
	if k.answered {
		for _, o := range ops {
			if mine(o) {
				if o.status != k.status || !sameJSON(o.body, k.body) || !o.replayed {
					v.add(o, ents, "the same key and request again must replay the key's answer (%d %s) with X-Idempotent-Replay; got %d replay=%v %s",
						k.status, k.body, o.status, o.replayed, o.body)
				}
			} else if o.status != http.StatusUnprocessableEntity || o.errCode() != "idempotency_key_reused" {
				v.add(o, ents, "the key with another request must be 422 idempotency_key_reused; got %d %s", o.status, o.body)
			}
		}
		return nil
	}
	var runner *op
	for _, o := range ops {
		code := o.errCode()
		if o.replayed || (o.status == http.StatusConflict && code == "request_in_progress") ||
			(o.status == http.StatusUnprocessableEntity && code == "idempotency_key_reused") {
			continue
		}
		if runner != nil {
			v.add(o, ents, "two requests ran under one Idempotency-Key (#%d and #%d)", runner.seq, o.seq)
		}
		runner = o
	}
	if runner == nil {
		v.add(ops[0], ents, "no request under a new Idempotency-Key ran (every one waited, replayed or was refused)")
		return nil
	}
	k.answered, k.status, k.body = true, runner.status, runner.body
	for _, o := range ops {
		switch {
		case o == runner:
		case same(o, runner):
			inProgress := o.status == http.StatusConflict && o.errCode() == "request_in_progress" && !o.replayed
			replay := o.replayed && o.status == runner.status && sameJSON(o.body, runner.body)
			if !inProgress && !replay {
				v.add(o, ents, "a copy of the request that ran (#%d) must wait (409 request_in_progress) or replay its answer; got %d replay=%v %s",
					runner.seq, o.status, o.replayed, o.body)
			}
		case o.status != http.StatusUnprocessableEntity || o.errCode() != "idempotency_key_reused":
			v.add(o, ents, "another request under the key that #%d ran with must be 422 idempotency_key_reused; got %d %s",
				runner.seq, o.status, o.body)
		}
	}
	return runner
}

// byKeyOf groups the ops of kind by Idempotency-Key, keys in order of
// first appearance.
func byKeyOf(g []*op, keep func(*op) bool) ([]uuid.UUID, map[uuid.UUID][]*op) {
	byKey := map[uuid.UUID][]*op{}
	var keys []uuid.UUID
	for _, o := range g {
		if !keep(o) {
			continue
		}
		if _, ok := byKey[o.key]; !ok {
			keys = append(keys, o.key)
		}
		byKey[o.key] = append(byKey[o.key], o)
	}
	return keys, byKey
}

// applyTransfers judges the group's POST /pix under the Idempotency-Key
// layer, per key; it returns the requests that ran, by account, for
// applyDebits.
func (m *model) applyTransfers(g []*op, v *verdicts) map[string][]*op {
	keys, byKey := byKeyOf(g, func(o *op) bool { return o.kind == opTransfer })
	byAcct := map[string][]*op{}
	for _, key := range keys {
		k := m.keys[key]
		runner := judgeKey(k, byKey[key], func(o *op) bool { return o.tb == k.tb }, func(a, b *op) bool { return a.tb == b.tb }, v)
		if runner != nil {
			k.tb = runner.tb
			byAcct[runner.tb.acct] = append(byAcct[runner.tb.acct], runner)
		}
	}
	return byAcct
}

// applyRefunds judges the group's POST /pix/credits/{id}/refunds: another
// customer's, the Idempotency-Key layer per key, then the refunds of each
// PIX. It returns the requests that reached an account's balance (201, or
// insufficient_funds), by account, for applyDebits.
func (m *model) applyRefunds(g []*op, creditedBefore map[string]bool, v *verdicts) map[string][]*op {
	for _, o := range g {
		if o.kind == opRefund && o.stranger && (o.status != http.StatusUnprocessableEntity || o.errCode() != "pix_not_credited" || o.replayed) {
			v.add(o, []string{o.rb.e2e}, "a refund asked by another customer must be 422 pix_not_credited, exactly as for a PIX never credited; got %d replay=%v %s",
				o.status, o.replayed, o.body)
		}
	}
	keys, byKey := byKeyOf(g, func(o *op) bool { return o.kind == opRefund && !o.stranger })
	byPix := map[string][]*op{}
	var pixOrder []string
	for _, key := range keys {
		k, ops := m.keys[key], byKey[key]
		if !k.refund {
			// A transfer's key, answered before: a refund is another
			// request.
			for _, o := range ops {
				if o.status != http.StatusUnprocessableEntity || o.errCode() != "idempotency_key_reused" {
					v.add(o, []string{key.String()}, "a refund under a transfer's Idempotency-Key must be 422 idempotency_key_reused; got %d %s", o.status, o.body)
				}
			}
			continue
		}
		runner := judgeKey(k, ops, func(o *op) bool { return o.rb == k.rb }, func(a, b *op) bool { return a.rb == b.rb }, v)
		if runner == nil {
			continue
		}
		k.rb = runner.rb
		if _, ok := byPix[runner.rb.e2e]; !ok {
			pixOrder = append(pixOrder, runner.rb.e2e)
		}
		byPix[runner.rb.e2e] = append(byPix[runner.rb.e2e], runner)
	}
	byAcct := map[string][]*op{}
	for _, id := range pixOrder {
		m.applyPixRefunds(m.pix[id], byPix[id], creditedBefore[id], byAcct, v)
	}
	return byAcct
}

// applyPixRefunds judges the refunds of one PIX that ran in a group, in
// the order CreateRefund decides them: whose credit (pix_not_credited),
// how much of it is left (refund_exceeds_credit), then the balance
// (applyDebits, for the 201s and insufficient_funds, added to byAcct).
func (m *model) applyPixRefunds(p *mPix, rs []*op, creditedBefore bool, byAcct map[string][]*op, v *verdicts) {
	ents := []string{p.id}
	// Never credited, as far as anything of the history could know: never
	// stored, to an account that takes no credit, or failed at the last
	// checkpoint and untouched since.
	never := p.first == nil || m.expect(p) == expectFail || (p.verified == pix.StatusFailed && !p.touched)
	var credit int64
	if p.first != nil {
		credit = p.first.amount
		ents = append(ents, p.first.acct)
	}
	heldLo, heldHi := p.held()
	var made, kept int64
	for _, o := range rs {
		if o.status == http.StatusCreated {
			made += o.rb.amount
		}
	}
	var madeOps []*op
	for _, o := range rs {
		code := o.errCode()
		oents := append(slices.Clone(ents), o.key.String())
		switch {
		case o.status == http.StatusCreated:
			if never {
				v.add(o, oents, "a refund of %s was made (201), but that PIX was never credited: %s", p.id, o.body)
				continue
			}
			var r pix.Refund // a 201 of POST /pix/credits/{id}/refunds
			if err := json.Unmarshal(o.body, &r); err != nil || !pix.ValidRefundID(r.ID) {
				v.add(o, oents, "a 201 of a refund that is no refund: %s", o.body)
				continue
			}
			oents = append(oents, r.ID)
			reason := ""
			if r.Reason != nil {
				reason = *r.Reason
			}
			if r.Status != pix.RefundDebited || r.EndToEndID != p.id || r.AccountID != p.first.acct || r.AmountCents != o.rb.amount || reason != o.rb.reason {
				v.add(o, oents, "the 201 of a refund does not describe the request (%d of %s, to %s) debited: %s", o.rb.amount, p.id, p.first.acct, o.body)
			}
			if m.refunds[r.ID] != nil {
				v.add(o, oents, "a new refund reuses the id of an earlier one: %s", o.body)
				continue
			}
			mode := m.rbehaviors[p.id].Mode
			if mode == "" {
				mode = pspsim.RefundModeReturn
			}
			mr := &mRefund{id: r.ID, e2e: p.id, acct: p.first.acct, amount: o.rb.amount, seq: o.seq, mode: mode, exp: refundExpectation(mode)}
			m.refunds[r.ID] = mr
			m.refundOrd = append(m.refundOrd, mr)
			p.refunds = append(p.refunds, mr)
			p.credited = true // a refund is of a credit
			o.made = mr
			if mr.exp == pix.RefundReturned {
				kept += mr.amount
			}
			madeOps = append(madeOps, o)
			byAcct[p.first.acct] = append(byAcct[p.first.acct], o)
		case o.status == http.StatusUnprocessableEntity && code == "pix_not_credited":
			if creditedBefore {
				v.add(o, oents, "a refund of %s, credited before, was refused pix_not_credited", p.id)
			}
		case o.status == http.StatusUnprocessableEntity && code == "refund_exceeds_credit":
			switch {
			case never:
				v.add(o, oents, "a refund of %s, never credited, must be refused pix_not_credited, not %s", p.id, code)
			case heldHi+made+o.rb.amount <= credit:
				v.add(o, oents, "a refund of %d of %s refused refund_exceeds_credit, but it fit: the credit is %d, its refunds held at most %d before the group and %d were made in it",
					o.rb.amount, p.id, credit, heldHi, made)
			}
		case o.status == http.StatusUnprocessableEntity && code == "insufficient_funds":
			if never {
				v.add(o, oents, "a refund of %s, never credited, must be refused pix_not_credited, not %s", p.id, code)
				continue
			}
			byAcct[p.first.acct] = append(byAcct[p.first.acct], o)
		default:
			v.add(o, oents, "a refund of %s: expected 201 or 422 pix_not_credited, refund_exceeds_credit or insufficient_funds; got %d %s", p.id, o.status, o.body)
		}
	}
	// What the PIX's refunds hold never exceeds its credit: those that
	// can't be reversed, at least.
	if heldLo+kept > credit && len(madeOps) > 0 {
		var seqs []int
		for _, o := range madeOps {
			seqs = append(seqs, o.seq)
		}
		v.add(madeOps[0], ents, "refunds %v of %s make its refunds hold at least %d (%d before the group), more than its credit %d",
			seqs, p.id, heldLo+kept, heldLo, credit)
	}
}

// quickRefund reports whether a transfer to the key might be refunded
// within the group that debited it (the key rejected at some moment of the
// group), so that its amount might have been debited again meanwhile.
func quickRefund(modes []pspsim.Mode) bool {
	for _, md := range modes {
		if md != pspsim.ModeAccept && md != pspsim.ModeFail && md != pspsim.ModeTimeout {
			return true
		}
	}
	return false
}

// debitOf is the amount a transfer's or a refund's request debits.
func debitOf(o *op) int64 {
	if o.kind == opRefund {
		return o.rb.amount
	}
	return o.tb.amount
}

// applyDebits judges the requests of one group that ran on one account:
// transfers (rs) and refunds (fs, each a 201 or insufficient_funds), which
// take from one balance.
func (m *model) applyDebits(a *mAccount, rs, fs []*op, lo int64, modes map[string][]pspsim.Mode, v *verdicts) {
	ents := []string{a.id}
	refusal := func(o *op, want string) {
		if o.status != http.StatusUnprocessableEntity || o.errCode() != want {
			v.add(o, append(ents, o.key.String()), "POST /pix from %s account %s must be 422 %s; got %d %s", a.kind, a.id, want, o.status, o.body)
		}
	}
	switch {
	case a.kind == kindClosed || !a.opened:
		for _, o := range fs {
			v.add(o, append(ents, o.key.String()), "a refund of %s reached %s account %s (exists=%v): %d %s", o.rb.e2e, a.kind, a.id, a.opened, o.status, o.body)
		}
	}
	switch {
	case a.kind == kindClosed:
		for _, o := range rs {
			refusal(o, "account_closed")
		}
		return
	case !a.opened:
		for _, o := range rs {
			refusal(o, "account_not_found")
		}
		return
	}
	_, hi := m.bounds(a)
	var ok, refused []*op
	var debited, quick int64
	for _, o := range rs {
		switch {
		case o.status == http.StatusCreated:
			ok = append(ok, o)
			debited += o.tb.amount
			if quickRefund(modes[o.tb.pixKey]) {
				quick += o.tb.amount
			}
		case o.status == http.StatusUnprocessableEntity && o.errCode() == "insufficient_funds":
			refused = append(refused, o)
		default:
			v.add(o, append(ents, o.key.String()), "POST /pix from active account %s: expected 201 or 422 insufficient_funds; got %d %s", a.id, o.status, o.body)
		}
	}
	for _, o := range fs {
		if o.status != http.StatusCreated {
			refused = append(refused, o)
			continue
		}
		ok = append(ok, o)
		debited += o.rb.amount
		if o.made.exp == pix.RefundReversed {
			// It may be reversed within the group.
			quick += o.rb.amount
		}
	}
	if debited > hi+quick {
		var seqs []int
		for _, o := range ok {
			seqs = append(seqs, o.seq)
		}
		v.add(ok[0], ents, "debits %v of %s sum to %d, more than its balance could have been (at most %d): an overdraft", seqs, a.id, debited, hi+quick)
	}
	for _, o := range refused {
		if debitOf(o) <= lo-debited {
			what := "POST /pix"
			if o.kind == opRefund {
				what = "a refund of " + o.rb.e2e
			}
			v.add(o, append(ents, o.key.String()), "%s of %d from %s refused insufficient_funds, but its balance was at least %d throughout (at least %d before the group, %d debited in it)",
				what, debitOf(o), a.id, lo-debited, lo, debited)
		}
	}
	for _, o := range ok {
		if o.kind == opRefund {
			var r pix.Refund // judged by applyPixRefunds
			_ = json.Unmarshal(o.body, &r)
			if r.BalanceAfterCents < max(0, lo-debited) || r.BalanceAfterCents > hi+quick-o.rb.amount {
				v.add(o, append(ents, o.key.String(), r.ID, o.rb.e2e), "balance_after_cents %d of a refund of %d from %s is outside what the books allow [%d, %d]",
					r.BalanceAfterCents, o.rb.amount, a.id, max(0, lo-debited), hi+quick-o.rb.amount)
			}
			continue
		}
		var t pix.Transfer // a 201 of POST /pix
		if err := json.Unmarshal(o.body, &t); err != nil || uuid.Validate(t.ID) != nil || !pix.ValidEndToEndID(t.EndToEndID) {
			v.add(o, append(ents, o.key.String()), "a 201 of POST /pix that is no transfer: %s", o.body)
			continue
		}
		tents := append(ents, o.key.String(), t.ID, t.EndToEndID)
		if t.Status != pix.TransferDebited || t.AccountID != o.tb.acct || t.AmountCents != o.tb.amount || t.PixKey != o.tb.pixKey {
			v.add(o, tents, "the 201 of POST /pix does not describe the request (%s %d -> %s) debited: %s", o.tb.acct, o.tb.amount, o.tb.pixKey, o.body)
		}
		if t.BalanceAfterCents < max(0, lo-debited) || t.BalanceAfterCents > hi+quick-o.tb.amount {
			v.add(o, tents, "balance_after_cents %d of a debit of %d from %s is outside what the books allow [%d, %d]",
				t.BalanceAfterCents, o.tb.amount, a.id, max(0, lo-debited), hi+quick-o.tb.amount)
		}
		if m.transfers[t.ID] != nil || m.byE2E[t.EndToEndID] != nil {
			v.add(o, tents, "a new transfer reuses the id or end_to_end_id of an earlier one: %s", o.body)
			continue
		}
		tr := &mTransfer{id: t.ID, e2e: t.EndToEndID, acct: a.id, pixKey: o.tb.pixKey, amount: o.tb.amount, seq: o.seq}
		m.transfers[t.ID], m.byE2E[t.EndToEndID] = tr, tr
		m.transOrd = append(m.transOrd, tr)
		a.transfers = append(a.transfers, tr)
	}
	// The group's refunds count on the account from now on (bounds was
	// taken without them, as without the group's transfers).
	for _, o := range fs {
		if o.made != nil {
			a.refunds = append(a.refunds, o.made)
		}
	}
}

// storedPix lists the stored PIX (for the generator), newest last.
func (m *model) storedPix(filter func(*mPix) bool) []*mPix {
	var out []*mPix
	for _, p := range m.pixOrder {
		if p.first != nil && (filter == nil || filter(p)) {
			out = append(out, p)
		}
	}
	return out
}

// answeredKeys lists the transfers' keys that were answered (for the
// generator), oldest first.
func (m *model) answeredKeys() []*mKey {
	return slices.DeleteFunc(slices.Clone(m.keyOrder), func(k *mKey) bool { return !k.answered || k.refund || k.sched })
}

// answeredRefundKeys lists the refunds' keys that were answered.
func (m *model) answeredRefundKeys() []*mKey {
	return slices.DeleteFunc(slices.Clone(m.keyOrder), func(k *mKey) bool { return !k.answered || !k.refund })
}

// sameJSON reports whether two bodies are the same JSON value: a replayed
// answer is the recorded one, whose members PostgreSQL's jsonb may reorder.
func sameJSON(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}
