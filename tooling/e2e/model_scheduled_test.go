//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"net/http"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"go.temporal.io/api/workflowservice/v1"

	"github.com/pixbank/pix/internal/pix"
	pixsched "github.com/pixbank/pix/saga/scheduled"
)

// The scheduled PIX (saga/scheduled) in the model-based histories: POST
// /pix/scheduled for today (São Paulo's date, which with the hour 0 runs at
// once: a debit and a transfer, or failed with nothing debited) or for a
// later date (it sleeps through the history), under Idempotency-Keys;
// GET and DELETE /pix/scheduled/{id}, by the owner and by another
// customer. A today's run happens at a moment no answer tells: until an
// answer (GET, a 409 to a cancel) or a checkpoint says how it ended, the
// model counts its debit as possible, and judges the outcome it learns
// against the balance over the whole time the run may have taken the
// account's lock.

// sbody is a POST /pix/scheduled request.
type sbody struct {
	acct   string
	amount int64
	pixKey string
	date   string // scheduled_for, YYYY-MM-DD
	desc   string // "": none
}

// mScheduled is a scheduled PIX answered 201.
type mScheduled struct {
	id, acct, pixKey, date, desc string
	amount                       int64
	seq                          int
	// today: its date had come when it was made, so it runs at once.
	today bool
	// status is what the model knows: scheduled (a later date, not
	// cancelled), cancelled, executed or failed; "" for a today's whose
	// outcome it does not know yet (ran says an answer told it ran).
	status string
	ran    bool
	// transferID is the transfer an executed one made.
	transferID string
	// minLo is the least the account's balance was, its own debit aside,
	// at any moment its run may have taken the account's lock; maxHi the
	// most.
	minLo, maxHi int64
	// cancelShaky: every cancel that answered 200 came while Temporal may
	// have been down, so its run may not have been woken (it ends at its
	// date instead).
	cancelShaky bool
}

// pending: a today's whose outcome the model does not know; its debit is
// possible.
func (s *mScheduled) pending() bool { return s.status == "" }

// state names what the model knows of s, for the history.
func (s *mScheduled) state() string {
	switch {
	case s.status != "":
		return s.status
	case s.ran:
		return "ran"
	}
	return "today"
}

func (s *mScheduled) ents() []string { return []string{s.id, s.acct} }

// schedView is a scheduled PIX as the API answers it and as the database
// holds it.
type schedView struct {
	ID            string  `json:"id"`
	AccountID     string  `json:"account_id"`
	AmountCents   int64   `json:"amount_cents"`
	PixKey        string  `json:"pix_key"`
	Description   *string `json:"description"`
	ScheduledFor  string  `json:"scheduled_for"`
	Status        string  `json:"status"`
	FailureReason *string `json:"failure_reason"`
	TransferID    *string `json:"transfer_id"`
	EndToEndID    *string `json:"end_to_end_id"`
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// describes reports whether w is the scheduled PIX s (or the request sb).
func (w schedView) describes(sb sbody) bool {
	return w.AccountID == sb.acct && w.AmountCents == sb.amount && w.PixKey == sb.pixKey && w.ScheduledFor == sb.date &&
		deref(w.Description) == sb.desc
}

func (s *mScheduled) body() sbody { return sbody{s.acct, s.amount, s.pixKey, s.date, s.desc} }

// modelSaoPaulo is the zone of the dates (the saga's: America/Sao_Paulo;
// its zone database is linked in by saga/scheduled).
var modelSaoPaulo = func() *time.Location {
	loc, err := time.LoadLocation("America/Sao_Paulo")
	if err != nil {
		panic(err)
	}
	return loc
}()

// saoPauloDate is São Paulo's date at now, days later.
func saoPauloDate(now time.Time, days int) string {
	return now.In(modelSaoPaulo).AddDate(0, 0, days).Format(time.DateOnly)
}

// scheduledDescs are the descriptions a request may carry ("": none).
var scheduledDescs = []string{"", "", "aluguel", "conta de luz", "mensalidade"}

// scheduledJSON is a POST /pix/scheduled body in one of two member orders:
// the same request to the Idempotency-Key layer.
func scheduledJSON(s sbody, style int) []byte {
	acct, _ := json.Marshal(s.acct)
	key, _ := json.Marshal(s.pixKey)
	desc := ""
	if s.desc != "" {
		d, _ := json.Marshal(s.desc)
		desc = fmt.Sprintf(`,"description":%s`, d)
	}
	if style%2 == 1 {
		return fmt.Appendf(nil, "{ \"scheduled_for\": %q, \"pix_key\": %s%s,\n  \"amount_cents\" : %d, \"account_id\": %s }", s.date, key, desc, s.amount, acct)
	}
	return fmt.Appendf(nil, `{"account_id":%s,"amount_cents":%d,"pix_key":%s,"scheduled_for":%q%s}`, acct, s.amount, key, s.date, desc)
}

func (m *model) newSchedKey(key uuid.UUID, sb sbody) *mKey {
	k := &mKey{key: key, sched: true, sb: sb}
	m.keys[k.key] = k
	m.keyOrder = append(m.keyOrder, k)
	return k
}

// answeredSchedKeys lists the scheduled PIX's keys that were answered.
func (m *model) answeredSchedKeys() []*mKey {
	return slices.DeleteFunc(slices.Clone(m.keyOrder), func(k *mKey) bool { return !k.answered || !k.sched })
}

// The generator.

// drawScheduled draws the scheduled PIX's operations: one for today or a
// later date (now and then with a copy under its key at once), a replay or
// a reuse of an answered key, a GET, a cancel (now and then twice at once,
// or again in the next group), another customer's GET or DELETE.
func (g *modelGen) drawScheduled(name string, room int) []*op {
	all := g.m.schedOrd
	switch {
	case (name == "sched-cancel" || name == "sched-get" || name == "sched-stranger") && len(all) == 0:
		name = "sched-later"
	case name == "sched-replay" && len(g.m.answeredSchedKeys()) == 0:
		name = "sched-today"
	}
	switch name {
	case "sched-today", "sched-later":
		acct := g.debitAccount()
		amount, why := g.debitAmount(acct)
		date := saoPauloDate(time.Now(), 0)
		if name == "sched-later" {
			// Two days ahead at least: still to come if the history
			// crosses midnight in São Paulo.
			date = saoPauloDate(time.Now(), 2+g.rng.IntN(89))
		}
		sb := sbody{acct, amount, pick(g, g.pixKeys), date, pick(g, scheduledDescs)}
		k := g.m.newSchedKey(g.newUUID(), sb)
		ops := []*op{{kind: opScheduled, intent: name + " " + why, key: k.key, sb: sb, raw: scheduledJSON(sb, g.rng.IntN(2))}}
		if room > 1 && g.chance(0.2) {
			ops = append(ops, &op{kind: opScheduled, intent: "sched-copy", key: k.key, sb: sb, raw: scheduledJSON(sb, g.rng.IntN(2))})
		}
		if name == "sched-today" && g.m.accounts[acct].kind == kindActive && g.chance(0.7) {
			// A cancel (or a GET) of it a few groups later, when it has
			// most likely run: its id is its key's answer then.
			kind, intent := opScheduledCancel, "sched-cancel after its run"
			if g.chance(0.3) {
				kind, intent = opScheduledGet, "sched-get after its run"
			}
			g.later = append(g.later, laterOp{atGroup: g.group + 1 + g.rng.IntN(3), o: &op{kind: kind, intent: intent, skey: k.key}})
		}
		return ops
	case "sched-replay":
		k := g.recentKey(g.m.answeredSchedKeys())
		sb, intent := k.sb, "sched-replay"
		if g.chance(0.3) {
			sb.amount, intent = sb.amount+1+g.rng.Int64N(100), "sched-reuse"
		}
		return []*op{{kind: opScheduled, intent: intent, key: k.key, sb: sb, raw: scheduledJSON(sb, g.rng.IntN(2))}}
	case "sched-get":
		s := g.recentSched(all)
		return []*op{{kind: opScheduledGet, intent: "sched-get " + s.state(), sid: s.id}}
	case "sched-stranger":
		s := g.recentSched(all)
		kind := opScheduledGet
		if g.chance(0.5) {
			kind = opScheduledCancel
		}
		return []*op{{kind: kind, intent: "by another customer", sid: s.id, stranger: true}}
	}
	s := g.cancellable()
	ops := []*op{{kind: opScheduledCancel, intent: "sched-cancel " + s.state(), sid: s.id}}
	switch {
	case room > 1 && g.chance(0.2):
		ops = append(ops, &op{kind: opScheduledCancel, intent: "sched-cancel at once", sid: s.id})
	case s.status == pixsched.StatusScheduled && g.chance(0.4):
		g.later = append(g.later, laterOp{atGroup: g.group + 1, o: &op{kind: opScheduledCancel, intent: "sched-cancel again", sid: s.id}})
	}
	return ops
}

// recentSched picks a scheduled PIX, the recent ones more often.
func (g *modelGen) recentSched(ss []*mScheduled) *mScheduled {
	if len(ss) > 12 && g.chance(0.6) {
		return ss[len(ss)-12+g.rng.IntN(12)]
	}
	return pick(g, ss)
}

// cancellable picks a scheduled PIX to cancel: one still to come most
// often, else one that ran, one for today whose run may be going, one
// cancelled already.
func (g *modelGen) cancellable() *mScheduled {
	of := func(keep func(*mScheduled) bool) []*mScheduled {
		return slices.DeleteFunc(slices.Clone(g.m.schedOrd), func(s *mScheduled) bool { return !keep(s) })
	}
	later := of(func(s *mScheduled) bool { return s.status == pixsched.StatusScheduled })
	ran := of(func(s *mScheduled) bool {
		return s.ran || s.status == pixsched.StatusExecuted || s.status == pixsched.StatusFailed
	})
	today := of(func(s *mScheduled) bool { return s.pending() && !s.ran })
	cancelled := of(func(s *mScheduled) bool { return s.status == pixsched.StatusCancelled })
	n := g.rng.IntN(100)
	for _, c := range []struct {
		upTo int
		ss   []*mScheduled
	}{{40, later}, {75, ran}, {88, today}, {100, cancelled}} {
		if n < c.upTo && len(c.ss) > 0 {
			return g.recentSched(c.ss)
		}
	}
	return g.recentSched(g.m.schedOrd)
}

// Running them.

// runScheduled sends a scheduled PIX's request; a GET or DELETE drawn by
// the key of its POST takes the id that POST was answered (m is read only).
func (h *modelHTTP) runScheduled(o *op, m *model) {
	if o.sid == "" && o.skey != uuid.Nil {
		var w schedView
		if k := m.keys[o.skey]; k == nil || !k.answered || json.Unmarshal(k.body, &w) != nil || w.ID == "" {
			o.err = fmt.Errorf("no scheduled PIX was answered under key %s", o.skey)
			return
		}
		o.sid = w.ID
	}
	switch o.kind {
	case opScheduled:
		var header http.Header
		o.status, o.body, header, o.err = h.send(http.MethodPost, "/pix/scheduled", http.Header{"Idempotency-Key": {o.key.String()}}, o.raw)
		o.replayed = header.Get("X-Idempotent-Replay") == "true"
	case opScheduledGet:
		o.status, o.body, _, o.err = h.sendAs(http.MethodGet, "/pix/scheduled/"+o.sid, nil, nil, o.stranger)
	case opScheduledCancel:
		o.status, o.body, _, o.err = h.sendAs(http.MethodDelete, "/pix/scheduled/"+o.sid, nil, nil, o.stranger)
	}
}

// Judging them.

// applyScheduledCreates judges the group's POST /pix/scheduled, per
// Idempotency-Key; it returns the amounts scheduled for today in the
// group, by account: their runs may debit within the group.
func (m *model) applyScheduledCreates(g []*op, v *verdicts) map[string]int64 {
	keys, byKey := byKeyOf(g, func(o *op) bool { return o.kind == opScheduled })
	made := map[string]int64{}
	for _, key := range keys {
		k := m.keys[key]
		runner := judgeKey(k, byKey[key], func(o *op) bool { return o.sb == k.sb }, func(a, b *op) bool { return a.sb == b.sb }, v)
		if runner == nil {
			continue
		}
		k.sb = runner.sb
		if s := m.scheduleFrom(runner, v); s != nil && s.today {
			made[s.acct] += s.amount
		}
	}
	return made
}

// scheduleFrom judges the answer of a POST /pix/scheduled that ran: the
// account's refusal, or 201 scheduled, nothing debited.
func (m *model) scheduleFrom(o *op, v *verdicts) *mScheduled {
	a := m.accounts[o.sb.acct]
	ents := []string{o.sb.acct, o.key.String()}
	refusal := func(want string) {
		if o.status != http.StatusUnprocessableEntity || o.errCode() != want {
			v.add(o, ents, "POST /pix/scheduled from %s account %s must be 422 %s; got %d %s", a.kind, a.id, want, o.status, o.body)
		}
	}
	switch {
	case a.kind == kindClosed:
		refusal("account_closed")
		return nil
	case !a.opened:
		refusal("account_not_found")
		return nil
	}
	var w schedView
	if o.status != http.StatusCreated || json.Unmarshal(o.body, &w) != nil || uuid.Validate(w.ID) != nil {
		v.add(o, ents, "POST /pix/scheduled from active account %s must be 201; got %d %s", a.id, o.status, o.body)
		return nil
	}
	ents = append(ents, w.ID)
	if !w.describes(o.sb) || w.Status != pixsched.StatusScheduled || w.TransferID != nil || w.FailureReason != nil {
		v.add(o, ents, "the 201 of POST /pix/scheduled does not describe the request (%+v), scheduled: %s", o.sb, o.body)
	}
	if m.sched[w.ID] != nil {
		v.add(o, ents, "a new scheduled PIX reuses the id of an earlier one: %s", o.body)
		return nil
	}
	s := &mScheduled{id: w.ID, acct: o.sb.acct, pixKey: o.sb.pixKey, date: o.sb.date, desc: o.sb.desc, amount: o.sb.amount, seq: o.seq,
		status: pixsched.StatusScheduled, minLo: math.MaxInt64, maxHi: math.MinInt64}
	// Its date had come (a date before today: midnight passed in São
	// Paulo meanwhile): run_at is past, it runs at once.
	if o.sb.date <= saoPauloDate(time.Now(), 0) {
		s.today, s.status = true, ""
	}
	m.sched[s.id] = s
	m.schedOrd = append(m.schedOrd, s)
	a.scheduled = append(a.scheduled, s)
	return s
}

// followScheduledRuns widens, for each today's whose outcome is unknown,
// the range of balances its run may have met: lo is the least each
// account's balance was at the group's start (the runs still possible
// counted as debited), made the amounts scheduled for today in the group.
// Called once the group's debits are judged.
func (m *model) followScheduledRuns(g []*op, lo, made map[string]int64) {
	debited, returned := map[string]int64{}, map[string]int64{}
	for _, o := range g {
		switch {
		case o.kind == opTransfer && o.status == http.StatusCreated:
			debited[o.tb.acct] += o.tb.amount
		case o.kind == opRefund && o.made != nil:
			debited[o.made.acct] += o.made.amount
			if o.made.exp == pix.RefundReturned {
				returned[o.made.acct] += o.made.amount
			}
		}
	}
	for _, s := range m.schedOrd {
		if !s.pending() {
			continue
		}
		// Its own possible debit is in lo (scheduled before the group) or
		// in made (in it): added back.
		s.minLo = min(s.minLo, lo[s.acct]-debited[s.acct]-made[s.acct]+s.amount)
		// The most: what the books allow after the group, and the
		// devoluções the group made, which took from it after the run may
		// have.
		_, hi := m.bounds(m.accounts[s.acct])
		s.maxHi = max(s.maxHi, hi+returned[s.acct])
	}
}

// concludeScheduled learns how a today's ended (an answer's or the
// database's view w), and judges it: executed, the transfer it made joins
// the model's (its books, its end at the PSP); failed, insufficient funds,
// nothing debited, only if the balance may not have covered it.
func (m *model) concludeScheduled(s *mScheduled, w schedView, o *op, v *verdicts) {
	ents := s.ents()
	switch w.Status {
	case pixsched.StatusExecuted:
		if w.TransferID == nil || w.EndToEndID == nil || w.FailureReason != nil {
			v.add(o, ents, "scheduled PIX %s is executed without its transfer: %+v", s.id, w)
			return
		}
		ents = append(ents, *w.TransferID, *w.EndToEndID)
		switch {
		case s.status == pixsched.StatusExecuted:
			if *w.TransferID != s.transferID {
				v.add(o, ents, "scheduled PIX %s executed with transfer %s, and now with %s", s.id, s.transferID, *w.TransferID)
			}
			return
		case !s.pending():
			v.add(o, ents, "scheduled PIX %s is executed, but it was %s", s.id, s.status)
			return
		case s.amount > s.maxHi:
			v.add(o, ents, "scheduled PIX %s debited %d from %s, whose balance was at most %d whenever it may have run: an overdraft", s.id, s.amount, s.acct, s.maxHi)
		}
		if m.transfers[*w.TransferID] != nil || m.byE2E[*w.EndToEndID] != nil {
			v.add(o, ents, "scheduled PIX %s executed with the transfer of another debit: %+v", s.id, w)
			return
		}
		tr := &mTransfer{id: *w.TransferID, e2e: *w.EndToEndID, acct: s.acct, pixKey: s.pixKey, amount: s.amount, seq: s.seq}
		m.transfers[tr.id], m.byE2E[tr.e2e] = tr, tr
		m.transOrd = append(m.transOrd, tr)
		a := m.accounts[s.acct]
		a.transfers = append(a.transfers, tr)
		s.status, s.transferID = pixsched.StatusExecuted, tr.id
	case pixsched.StatusFailed:
		if deref(w.FailureReason) != "insufficient_funds" || w.TransferID != nil || w.EndToEndID != nil {
			v.add(o, ents, "scheduled PIX %s failed other than for insufficient funds, nothing debited: %+v", s.id, w)
		}
		switch {
		case s.status == pixsched.StatusFailed:
		case !s.pending():
			v.add(o, ents, "scheduled PIX %s is failed, but it was %s", s.id, s.status)
		default:
			if s.amount <= s.minLo {
				v.add(o, ents, "scheduled PIX %s of %d failed insufficient_funds, but the balance of %s, its debit aside, was at least %d whenever it may have run",
					s.id, s.amount, s.acct, s.minLo)
			}
			s.status = pixsched.StatusFailed
		}
	}
}

// applyScheduledReads judges the group's GET and DELETE
// /pix/scheduled/{id}: another customer's answer as missing; the owner's,
// per scheduled PIX, as some order of the group and of its run allows.
// shaky: Temporal may have been down in the group (a cancel's wake-up
// signal may be lost).
func (m *model) applyScheduledReads(g []*op, shaky bool, v *verdicts) {
	byID := map[string][]*op{}
	var ids []string
	for _, o := range g {
		if o.kind != opScheduledGet && o.kind != opScheduledCancel {
			continue
		}
		if o.stranger {
			if o.status != http.StatusNotFound || o.errCode() != "scheduled_pix_not_found" {
				v.add(o, []string{o.sid}, "another customer's %s of scheduled PIX %s must be 404 scheduled_pix_not_found; got %d %s",
					map[opKind]string{opScheduledGet: "GET", opScheduledCancel: "DELETE"}[o.kind], o.sid, o.status, o.body)
			}
			continue
		}
		if _, ok := byID[o.sid]; !ok {
			ids = append(ids, o.sid)
		}
		byID[o.sid] = append(byID[o.sid], o)
	}
	for _, id := range ids {
		m.applyScheduledPix(m.sched[id], byID[id], shaky, v)
	}
}

func (m *model) applyScheduledPix(s *mScheduled, ops []*op, shaky bool, v *verdicts) {
	ents := s.ents()
	before := s.state()
	ranBefore := s.ran || s.status == pixsched.StatusExecuted || s.status == pixsched.StatusFailed
	view := func(o *op) (schedView, bool) {
		var w schedView
		if o.status != http.StatusOK || json.Unmarshal(o.body, &w) != nil || w.ID != s.id || !w.describes(s.body()) {
			return w, false
		}
		return w, true
	}
	// The cancels: the row decides once, so they all agree.
	var won, lost []*op
	for _, o := range ops {
		if o.kind != opScheduledCancel {
			continue
		}
		w, ok := view(o)
		switch {
		case ok && w.Status == pixsched.StatusCancelled && w.TransferID == nil && w.FailureReason == nil:
			won = append(won, o)
		case o.status == http.StatusConflict && o.errCode() == "scheduled_pix_already_ran":
			lost = append(lost, o)
		default:
			v.add(o, ents, "DELETE of scheduled PIX %s (%s): expected 200 cancelled or 409 scheduled_pix_already_ran; got %d %s", s.id, before, o.status, o.body)
		}
	}
	switch {
	case len(lost) > 0 && (s.status == pixsched.StatusScheduled || s.status == pixsched.StatusCancelled):
		v.add(lost[0], ents, "DELETE of scheduled PIX %s, %s (for %s), must be 200 cancelled; got 409 %s", s.id, before, s.date, lost[0].body)
	case len(won) > 0 && ranBefore:
		v.add(won[0], ents, "DELETE of scheduled PIX %s, which ran (%s), must be 409 scheduled_pix_already_ran; got 200 %s", s.id, before, won[0].body)
	case len(won) > 0 && len(lost) > 0:
		v.add(won[0], ents, "DELETEs of scheduled PIX %s disagree: #%d cancelled it, #%d found it ran", s.id, won[0].seq, lost[0].seq)
	}
	// The GETs: a status some order allows.
	for _, o := range ops {
		if o.kind != opScheduledGet {
			continue
		}
		w, ok := view(o)
		allowed := map[string]bool{}
		switch {
		case s.status != "":
			allowed[s.status] = true
		case s.ran:
			allowed[pixsched.StatusExecuted], allowed[pixsched.StatusFailed] = true, true
		default:
			allowed[pixsched.StatusScheduled] = true
			if len(won) == 0 {
				allowed[pixsched.StatusExecuted], allowed[pixsched.StatusFailed] = true, true
			}
		}
		if len(won) > 0 && !ranBefore {
			allowed[pixsched.StatusCancelled] = true
		}
		if !ok || !allowed[w.Status] {
			v.add(o, ents, "GET of scheduled PIX %s (%s): expected 200 with one of %v; got %d %s", s.id, before, slices.Sorted(maps.Keys(allowed)), o.status, o.body)
			continue
		}
		switch w.Status {
		case pixsched.StatusExecuted, pixsched.StatusFailed:
			m.concludeScheduled(s, w, o, v)
		case pixsched.StatusScheduled, pixsched.StatusCancelled:
			if w.TransferID != nil || w.FailureReason != nil {
				v.add(o, ents, "scheduled PIX %s is %s with a transfer or a failure: %s", s.id, w.Status, o.body)
			}
		}
	}
	switch {
	case len(won) > 0 && !ranBefore && s.status != pixsched.StatusCancelled:
		if s.status == "" || s.status == pixsched.StatusScheduled {
			s.status, s.cancelShaky = pixsched.StatusCancelled, shaky
		}
	case len(won) > 0 && s.status == pixsched.StatusCancelled:
		// Asked again: this one wakes its run as well.
		s.cancelShaky = s.cancelShaky && shaky
	case len(lost) > 0 && s.pending():
		s.ran = true
	}
}

// The checkpoints.

// verifyScheduled holds every scheduled PIX in the database against the
// model, the service quiesced: those for a later date still scheduled
// unless cancelled, the cancelled cancelled, every today's concluded, and
// learns how each today's ended (concludeScheduled), before the transfers
// and the books are verified.
func (r *modelRun) verifyScheduled() []violation {
	q, err := r.s.store.Pool().Query(context.Background(), `SELECT id::text, account_id, amount_cents, pix_key, description,
		to_char(scheduled_for, 'YYYY-MM-DD'), status, failure_reason, transfer_id::text, end_to_end_id FROM pix_scheduled`)
	if err != nil {
		return []violation{{seq: -1, msg: "read the database: " + err.Error()}}
	}
	rows, err := collect(q, map[string]schedView{}, func(row pgx.Rows) (string, schedView, error) {
		var w schedView
		err := row.Scan(&w.ID, &w.AccountID, &w.AmountCents, &w.PixKey, &w.Description, &w.ScheduledFor, &w.Status, &w.FailureReason, &w.TransferID, &w.EndToEndID)
		return w.ID, w, err
	})
	if err != nil {
		return []violation{{seq: -1, msg: "read the database: " + err.Error()}}
	}
	v := &verdicts{}
	for _, s := range r.m.schedOrd {
		w, ok := rows[s.id]
		delete(rows, s.id)
		ents := s.ents()
		switch {
		case !ok:
			v.add(nil, ents, "scheduled PIX %s was answered 201 but is not in the database", s.id)
			continue
		case !w.describes(s.body()):
			v.add(nil, ents, "scheduled PIX %s is stored as %+v, not as answered", s.id, w)
		}
		switch {
		case s.pending() && (w.Status == pixsched.StatusExecuted || w.Status == pixsched.StatusFailed):
			r.m.concludeScheduled(s, w, nil, v)
		case s.pending():
			v.add(nil, ents, "scheduled PIX %s for today (%s) is %s after the service settled down; it must have run", s.id, s.date, w.Status)
		case w.Status != s.status:
			v.add(nil, ents, "scheduled PIX %s is %s; the model says %s", s.id, w.Status, s.status)
		case s.status == pixsched.StatusExecuted && deref(w.TransferID) != s.transferID:
			v.add(nil, ents, "scheduled PIX %s executed with transfer %s; its answers said %s", s.id, deref(w.TransferID), s.transferID)
		case (s.status == pixsched.StatusScheduled || s.status == pixsched.StatusCancelled) && (w.TransferID != nil || w.FailureReason != nil):
			v.add(nil, ents, "scheduled PIX %s is %s with a transfer or a failure: %+v", s.id, s.status, w)
		}
	}
	for id, w := range rows {
		v.add(nil, []string{id, w.AccountID}, "the database has scheduled PIX %s (%+v), which no answer of the history told of", id, w)
	}
	return v.list
}

// verifyScheduledEvents holds the outbox of each scheduled PIX against the
// model: pix.scheduled.created once, pix.scheduled.concluded once it
// concluded (take removes what it reads).
func (r *modelRun) verifyScheduledEvents(take func(typ, id string) map[string]int, v *verdicts) {
	for _, s := range r.m.schedOrd {
		c := take(pixsched.Aggregate, s.id)
		want := map[string]int{pixsched.EventCreated: 1}
		if s.status != pixsched.StatusScheduled {
			want[pixsched.EventConcluded] = 1
		}
		if !maps.Equal(c, want) {
			v.add(nil, s.ents(), "scheduled PIX %s (%s) has events %v; expected %v", s.id, s.status, c, want)
		}
	}
}

// scheduledRuns are the runs of the scheduled PIX that may stay open at
// the end (those sleeping until a later date, and a cancelled one's whose
// wake-up signal may have been lost: asked while Temporal was stopped or
// starting, or reported lost by the service, pixsched.CancelNotWoken, as
// when its client is still reconnecting after Temporal came back), and
// those that must (the former).
func (r *modelRun) scheduledRuns() (mayStay, mustStay map[string]bool) {
	mayStay, mustStay = map[string]bool{}, map[string]bool{}
	notWoken := r.s.loggedWorkflows(pixsched.CancelNotWoken)
	for _, s := range r.m.schedOrd {
		id := pixsched.WorkflowID(s.id)
		switch {
		case s.status == pixsched.StatusScheduled:
			mayStay[id], mustStay[id] = true, true
		case s.status == pixsched.StatusCancelled && (s.cancelShaky || notWoken[id]):
			mayStay[id] = true
		}
	}
	return mayStay, mustStay
}

// scheduledByAttribute is the search attribute Temporal gives each run a
// Schedule starts: the Schedule's id.
const scheduledByAttribute = "TemporalScheduledById"

// openRuns lists the open runs of the stack's task queues (every page,
// bounded) but the runs its Schedules started (the catch-up, the
// retention, the reconciliation: periodic, not the history's; one whose
// activity's answer a Temporal stop lost waits out its timeout, open,
// with nothing to log).
func (r *modelRun) openRuns(ctx context.Context) (map[string]bool, error) {
	query := r.s.taskQueuesQuery() + ` AND ExecutionStatus = "Running"`
	open := map[string]bool{}
	var token []byte
	for range 100 {
		res, err := r.s.client().ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: query, PageSize: 200, NextPageToken: token})
		if err != nil {
			return nil, err
		}
		for _, e := range res.Executions {
			if _, periodic := e.GetSearchAttributes().GetIndexedFields()[scheduledByAttribute]; !periodic {
				open[e.Execution.WorkflowId] = true
			}
		}
		if token = res.NextPageToken; len(token) == 0 {
			return open, nil
		}
	}
	return open, fmt.Errorf("more than 100 pages of open runs")
}
