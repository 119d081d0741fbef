package main

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/internal/psp"
	"github.com/pixbank/pix/internal/tooling/pspsim"
	"github.com/pixbank/pix/tooling/load"
)

// The PIX of a refund case fall in classes by their place in the run (the
// session's sequence number, mod 5), whose devoluções the PSP treats as
// the class says: ok returns them; notDone makes them NAO_REALIZADO a
// moment later (the reversals the books must show, in every refund case);
// the two fault classes are what the case turns against the bank. A PIX's
// behaviour is set before the PIX exists, so every refund of it meets it.
const (
	refundOK      = "ok"
	refundFault1  = "fault1"
	refundNotDone = "not_done"
	refundFault2  = "fault2"
)

// refundClassOf is the class of PIX n of the run.
func refundClassOf(n int64) string {
	switch n % 5 {
	case 1:
		return refundFault1
	case 2:
		return refundNotDone
	case 4:
		return refundFault2
	}
	return refundOK
}

// refundFaultClasses are the classes a case turns against the bank.
var refundFaultClasses = []string{refundFault1, refundFault2}

// refundPIX is how many PIX of a run may exist: the webhook load makes at
// most one new PIX per arrival.
func refundPIX(s settings) int64 { return int64(s.rate*s.loadFor.Seconds()) + 1 }

// setRefundClass sets the PSP's refund behaviour of every PIX of class
// (PUT /refund-behaviors/{e2eid}, as an operator would), restarting their
// counts of PUTs; the class's mode is remembered for the check.
func (r *caseRun) setRefundClass(ctx context.Context, class string, b pspsim.RefundBehavior) error {
	for n := int64(1); n <= r.refundPIX; n++ {
		if refundClassOf(n) != class {
			continue
		}
		if err := r.st.psp.setRefundBehavior(ctx, load.EndToEndID(r.sess.RunID(), n), b); err != nil {
			return err
		}
	}
	r.refundModes[class] = b.Mode
	return nil
}

// setRefundFaults sets both fault classes' behaviour.
func (r *caseRun) setRefundFaults(ctx context.Context, b pspsim.RefundBehavior) error {
	for _, class := range refundFaultClasses {
		if err := r.setRefundClass(ctx, class, b); err != nil {
			return err
		}
	}
	return nil
}

// refundFaultPUTs sums the PUTs to the fault classes' devoluções since
// their behaviour was last set (GET /refund-behaviors).
func (r *caseRun) refundFaultPUTs(ctx context.Context) (int, error) {
	counts, err := r.st.psp.refundRequests(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	for e2e, c := range counts {
		if seq := load.EndToEndSeq(r.sess.RunID(), e2e); seq > 0 && slices.Contains(refundFaultClasses, refundClassOf(seq)) {
			n += c
		}
	}
	return n, nil
}

// refusedByPSP reports whether the PSP refuses the devoluções of the PIX
// (refuse mode: it makes nothing).
func (r *caseRun) refusedByPSP(e2e string) bool {
	seq := load.EndToEndSeq(r.sess.RunID(), e2e)
	return seq > 0 && r.refundModes[refundClassOf(seq)] == pspsim.RefundModeRefuse
}

var returnMode = pspsim.RefundBehavior{Mode: pspsim.RefundModeReturn}

// setRefundBehavior sets what the PSP does with a PIX's devoluções.
func (p *pspServer) setRefundBehavior(ctx context.Context, e2e string, b pspsim.RefundBehavior) error {
	if err := p.send(ctx, http.MethodPut, "/refund-behaviors/"+url.PathEscape(e2e), b, http.StatusNoContent, nil); err != nil {
		return fmt.Errorf("set psp refund behaviour of %s: %w", e2e, err)
	}
	return nil
}

// refundRequests reads GET /refund-behaviors: the PUTs to each PIX's
// devoluções since its behaviour was set, by end_to_end_id.
func (p *pspServer) refundRequests(ctx context.Context) (map[string]int, error) {
	var list struct {
		Behaviors []struct {
			EndToEndID string `json:"end_to_end_id"`
			Requests   int    `json:"requests"`
		} `json:"refund_behaviors"`
	}
	if err := p.get(ctx, "/refund-behaviors", &list); err != nil {
		return nil, err
	}
	out := map[string]int{}
	for _, b := range list.Behaviors {
		out[b.EndToEndID] = b.Requests
	}
	return out, nil
}

// pspDevolucao is a devolução as the PSP lists it.
type pspDevolucao struct {
	ID     string           `json:"id"`
	RtrID  string           `json:"rtrId"`
	Valor  string           `json:"valor"`
	Status psp.RefundStatus `json:"status"`
	Motivo string           `json:"motivo"`
	// Horario.Solicitacao is when the PSP made it.
	Horario struct {
		Solicitacao time.Time `json:"solicitacao"`
	} `json:"horario"`
}

// devolucoes reads what the PSP holds of a PIX's devoluções (GET
// /pix/{e2eid}/devolucao).
func (p *pspServer) devolucoes(ctx context.Context, e2e string) ([]pspDevolucao, error) {
	var list struct {
		Devolucoes []pspDevolucao `json:"devolucoes"`
	}
	if err := p.get(ctx, "/pix/"+url.PathEscape(e2e)+"/devolucao", &list); err != nil {
		return nil, err
	}
	return list.Devolucoes, nil
}

// refundRow is one of the run's refunds as our books hold it.
type refundRow struct {
	id, endToEndID, accountID, status, idempotencyKey string
	amountCents                                       int64
	createdAt                                         time.Time
	finalAt, reversedAt                               *time.Time
	// reversals and reversedCents are its pix_refund_reversals rows.
	reversals     int
	reversedCents int64
}

// refundsOf reads the refunds debited from the run's accounts.
func refundsOf(ctx context.Context, pool *pgxpool.Pool, runID string) ([]refundRow, error) {
	rows, err := pool.Query(ctx, `
		SELECT r.id, r.end_to_end_id, r.account_id, r.status, COALESCE(r.idempotency_key::text, ''), r.amount_cents, r.created_at,
		       COALESCE(r.returned_at, r.reversed_at), r.reversed_at, count(v.refund_id), COALESCE(sum(v.amount_cents), 0)::bigint
		FROM pix_refunds r LEFT JOIN pix_refund_reversals v ON v.refund_id = r.id
		WHERE starts_with(r.account_id, $1) GROUP BY r.id ORDER BY r.created_at, r.id`, "load-"+runID+"-")
	if err != nil {
		return nil, fmt.Errorf("read refunds: %w", err)
	}
	var out []refundRow
	var t refundRow
	_, err = pgx.ForEachRow(rows, []any{&t.id, &t.endToEndID, &t.accountID, &t.status, &t.idempotencyKey, &t.amountCents, &t.createdAt,
		&t.finalAt, &t.reversedAt, &t.reversals, &t.reversedCents}, func() error {
		out = append(out, t)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read refunds: %w", err)
	}
	return out, nil
}

// openRefunds counts the run's refunds not final yet, and those of them
// the PSP holds (requested: the saga waits for its outcome).
func openRefunds(ctx context.Context, pool *pgxpool.Pool, runID string) (open, requested int, err error) {
	err = pool.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE status = 'requested') FROM pix_refunds
		WHERE starts_with(account_id, $1) AND status IN ('debited', 'requested')`, "load-"+runID+"-").Scan(&open, &requested)
	if err != nil {
		return 0, 0, fmt.Errorf("count refunds: %w", err)
	}
	return open, requested, nil
}

// drainRefunds waits (within timeout) until every refund of the run is
// final: returned or reversed. What stays open is judged by checkRefunds.
func drainRefunds(ctx context.Context, pool *pgxpool.Pool, runID string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		open, _, err := openRefunds(ctx, pool, runID)
		if err == nil && open == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// refundReport is what the refunds of one case came to.
type refundReport struct {
	total, returned, reversed, open int
	// refused: reversed with no record at the PSP, which refused them.
	refused int
	// lastFinal is when the last refund created before the heal became
	// final.
	lastFinal time.Time
}

func (r refundReport) text() string {
	return fmt.Sprintf("%d: %d returned, %d reversed (%d refused by the PSP), %d open", r.total, r.returned, r.reversed, r.refused, r.open)
}

// checkRefunds holds the run's refunds against the load's answers, the
// PSP's records, the reversals and the outbox:
//
//   - every refund is final (returned or reversed) after the drain;
//   - the PSP holds exactly one devolução under each refund's id, of its
//     PIX and amount (none for a PIX whose devoluções it refuses), and none
//     under an id we have no refund of;
//   - returned only if the PSP's record says DEVOLVIDO, and every refund
//     the PSP holds DEVOLVIDO is returned: never reversed (the money would
//     go back twice); reversed only if its record says NAO_REALIZADO, or
//     it has none and refused the devolução;
//   - one pix_refund_reversals row, of the refund's amount, per reversed
//     refund, and none for the others;
//   - per PIX, the refunds but the reversed add up to at most its credit;
//   - the outbox holds each refund's pix.refund.debited once, and its
//     pix.refund.returned or pix.refund.reversed once, as its status says,
//     and nothing else;
//   - every 201 (by refund id) is one refund with what was asked, one
//     refund per Idempotency-Key, and no refund the load was not answered
//     for.
//
// refusedByPSP says whether the PSP refuses a PIX's devoluções.
func checkRefunds(ctx context.Context, st *stack, created map[string]load.SentRefund, runID string, refusedByPSP func(e2e string) bool,
	healed time.Time) (refundReport, []string, error) {
	rows, err := refundsOf(ctx, st.pool, runID)
	if err != nil {
		return refundReport{}, nil, err
	}
	credits, err := load.CreditedOf(st.pool, runID)(ctx)
	if err != nil {
		return refundReport{}, nil, err
	}
	// The PSP's devoluções of every PIX of the run, ours or not.
	held := map[string][]pspDevolucao{}
	for _, c := range credits {
		if held[c.EndToEndID], err = st.psp.devolucoes(ctx, c.EndToEndID); err != nil {
			return refundReport{}, nil, err
		}
	}
	events, err := refundEvents(ctx, st.pool, rows)
	if err != nil {
		return refundReport{}, nil, err
	}

	rep := refundReport{total: len(rows)}
	bad := map[string][]string{}
	flag := func(what, id string) { bad[what] = append(bad[what], id) }
	perKey := map[string]int{}
	ours := map[string]bool{}
	holds := map[string]int64{} // per PIX: what its refunds but the reversed hold
	for _, t := range rows {
		ours[t.id] = true
		perKey[t.idempotencyKey]++
		var recs []pspDevolucao
		for _, d := range held[t.endToEndID] {
			if d.ID == t.id {
				recs = append(recs, d)
			}
		}
		refused := refusedByPSP(t.endToEndID)
		pspStatus := psp.RefundStatus("none")
		switch {
		case refused && len(recs) > 0:
			flag("refunds of which the PSP holds a devolução although it refuses the PIX's devoluções", t.id)
		case !refused && len(recs) == 0:
			flag("refunds of which the PSP holds no devolução", t.id)
		case len(recs) > 1:
			flag("refunds the PSP holds more than one devolução of", t.id)
		}
		if len(recs) > 0 {
			pspStatus = recs[0].Status
			if amount, err := psp.ParseValor(recs[0].Valor); err != nil || amount != t.amountCents {
				flag("refunds the PSP holds with another amount", fmt.Sprintf("%s (ours %d, psp %s)", t.id, t.amountCents, recs[0].Valor))
			}
		}
		label := fmt.Sprintf("%s (ours %s, psp %s)", t.id, t.status, pspStatus)
		switch t.status {
		case pix.RefundReturned:
			rep.returned++
			if pspStatus != psp.RefundReturned {
				flag("refunds returned although the PSP does not hold them DEVOLVIDO", label)
			}
		case pix.RefundReversed:
			rep.reversed++
			switch {
			case pspStatus == psp.RefundNotDone:
			case pspStatus == "none" && refused:
				rep.refused++
			case pspStatus == psp.RefundReturned:
				flag("refunds REVERSED although the PSP returned them (the money went back twice)", label)
			case pspStatus == "none":
				flag("refunds reversed although the PSP never refused them and holds no record (a refusal of the request taken for a refusal of the devolução)", label)
			default:
				flag("refunds reversed although the PSP holds them in process", label)
			}
		default:
			rep.open++
			flag("refunds left open after the drain", label)
		}
		if t.status != pix.RefundReversed {
			holds[t.endToEndID] += t.amountCents
		}
		switch {
		case t.status == pix.RefundReversed && (t.reversals != 1 || t.reversedCents != t.amountCents):
			flag("reversed refunds without exactly one reversal of their amount", fmt.Sprintf("%s (%d reversals, %d cents)", t.id, t.reversals, t.reversedCents))
		case t.status != pix.RefundReversed && t.reversals != 0:
			flag("refunds with a reversal that are not reversed", label)
		}
		want := map[string]int{db.EventRefundDebited: 1}
		switch t.status {
		case pix.RefundReturned:
			want[db.EventRefundReturned] = 1
		case pix.RefundReversed:
			want[db.EventRefundReversed] = 1
		}
		if got := events[t.id]; !maps.Equal(got, want) {
			flag("refunds whose outbox events are not their debit and their outcome, once each", fmt.Sprintf("%s (%s: %v)", t.id, t.status, got))
		}
		if t.finalAt != nil && t.createdAt.Before(healed) && t.finalAt.After(rep.lastFinal) {
			rep.lastFinal = *t.finalAt
		}
		if s, ok := created[t.id]; !ok {
			flag("refunds no 201 answered", t.id)
		} else if s.AccountID != t.accountID || s.AmountCents != t.amountCents || s.EndToEndID != t.endToEndID || s.IdempotencyKey != t.idempotencyKey {
			flag("refunds that differ from what was asked", t.id)
		}
	}
	for k, n := range perKey {
		if n > 1 {
			flag("Idempotency-Keys with more than one refund", k)
		}
	}
	var v []string
	if len(created) != len(rows) {
		v = append(v, fmt.Sprintf("%d refunds answered 201, %d in the books", len(created), len(rows)))
	}
	for _, c := range credits {
		if holds[c.EndToEndID] > c.AmountCents {
			flag("PIX whose refunds (but the reversed) add up to more than their credit",
				fmt.Sprintf("%s (%d of %d)", c.EndToEndID, holds[c.EndToEndID], c.AmountCents))
		}
		for _, d := range held[c.EndToEndID] {
			if !ours[d.ID] {
				flag("devoluções the PSP holds of our PIX that we have no refund of", c.EndToEndID+"/"+d.ID)
			}
		}
	}
	for _, what := range slices.Sorted(maps.Keys(bad)) {
		ids := bad[what]
		slices.Sort(ids)
		v = append(v, fmt.Sprintf("%d %s: %s", len(ids), what, abbreviate(ids, 3)))
	}
	return rep, v, nil
}

// refundEvents counts the outbox events of each refund, by type.
func refundEvents(ctx context.Context, pool *pgxpool.Pool, refunds []refundRow) (map[string]map[string]int, error) {
	ids := make([]string, len(refunds))
	for i, r := range refunds {
		ids[i] = r.id
	}
	rows, err := pool.Query(ctx, `SELECT aggregate_id, event_type, count(*) FROM outbox_events
		WHERE aggregate_type = $1 AND aggregate_id = ANY($2) GROUP BY 1, 2`, db.AggregateRefund, ids)
	if err != nil {
		return nil, fmt.Errorf("read refund events: %w", err)
	}
	out := map[string]map[string]int{}
	var id, typ string
	var n int
	_, err = pgx.ForEachRow(rows, []any{&id, &typ, &n}, func() error {
		if out[id] == nil {
			out[id] = map[string]int{}
		}
		out[id][typ] = n
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read refund events: %w", err)
	}
	return out, nil
}

// refundClientViolations: in the refund cases the API itself is never the
// fault (the PSP, the worker or Temporal is), so every refund request must
// be answered, without a 5xx: a refund is taken whatever happens behind the
// API. The only refusal the load may meet is refund_exceeds_credit (it asks
// around what a PIX has left); a replay must answer the same refund.
func refundClientViolations(x *load.RefundStep) []string {
	var v []string
	for k, n := range x.Errors {
		v = append(v, fmt.Sprintf("%d refund requests answered %s", n, k))
	}
	if x.Unanswered > 0 {
		v = append(v, fmt.Sprintf("%d refund requests never answered", x.Unanswered))
	}
	if x.ReplayMismatches > 0 {
		v = append(v, fmt.Sprintf("%d of %d replays of a refund request did not answer the same refund", x.ReplayMismatches, x.Replays))
	}
	for k, n := range x.Refused {
		if k != "422 refund_exceeds_credit" {
			v = append(v, fmt.Sprintf("%d refund requests refused (%s)", n, k))
		}
	}
	if x.Created == 0 {
		v = append(v, "no refund was created: the case proves nothing")
	}
	slices.Sort(v)
	return v
}
