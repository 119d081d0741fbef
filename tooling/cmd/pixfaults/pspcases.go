package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/pixbank/pix/activities"
	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/internal/psp"
	"github.com/pixbank/pix/internal/tooling/pspsim"
	"github.com/pixbank/pix/saga/catchup"
	"github.com/pixbank/pix/tooling/load"
)

// pspAuthCases are the faults of the API Pix's security and of the PSP's
// own record: the token endpoint down while transfers and devoluções are
// under way, the PSP's webhooks dropped (the catch-up must find their PIX
// in GET /pix), our client secret wrong, then right, and a burst of PIX
// while the PSP lists few a page and drops its webhooks (catchupburst.go).
// Each runs under the webhook load; the token cases send outgoing PIX and
// refunds beside it, held against the PSP's records by checkTransfers and
// checkRefunds.
func pspAuthCases(s settings) []faultCase {
	return []faultCase{
		{name: fmt.Sprintf("the PSP's token endpoint down %s during transfers and devoluções", s.tokenDown), outgoing: true, refunds: true,
			inject: tokenEndpointDown, check: heldBackCheck(tokenCalls.facts()...)},
		{name: fmt.Sprintf("the PSP's webhooks dropped for %s; the catch-up credits their PIX", s.webhookDrop),
			setup: simPixKeysSetup, inject: webhooksDropped, check: webhooksDroppedCheck},
		{name: "a wrong client secret (the PSP rotated it), then the right one, during transfers and devoluções", outgoing: true, refunds: true,
			inject: wrongClientSecret, check: heldBackCheck(append(secretCalls.facts(), "PSPRequestRefused counted")...)},
		{name: fmt.Sprintf("a burst of %d PIX at the PSP, which lists %d a page of GET /pix and drops its webhooks; the catch-up credits them all", burstPIX, burstPageSize),
			setup: simPixKeysSetup, inject: catchUpBurst, check: catchUpBurstCheck},
	}
}

// pspTokenUsable is how long the PSP client sends a token after its fetch,
// its renewal failing or not (psp.TokenSentFor): a token fetched before an
// outage serves no call after this.
var pspTokenUsable = psp.TokenSentFor(pspTokenLifetime)

// noTokenWindow is the part of an outage from start to end in which no
// call can have reached the PSP: from when the last token fetched before
// it was no longer used (pspTokenUsable after start; at start when the
// tokens were revoked) and the calls that had one have ended (PSP_TIMEOUT,
// 3 s, and a second). start and end must bound the outage from within (no
// token could be issued from start to end: see tokenOutage), or a call
// that legitimately got a token before it or after it is counted in it.
func noTokenWindow(start, end time.Time, revoked bool) (from, to time.Time) {
	from = start.Add(4 * time.Second)
	if !revoked {
		from = from.Add(pspTokenUsable)
	}
	return from, end
}

// tokenEndpointDown takes the simulator's token endpoint down (503
// temporarily_unavailable) for s.tokenDown while transfers and refunds
// arrive: the tokens expire within it, so the sagas' calls need a new one
// and get none. Nothing may reach the PSP then, and nothing be refunded or
// reversed on it (checkTransfers, checkRefunds); all completes after.
//
// An outage no call met proves nothing, and on a loaded machine the
// worker's next PSP call may come after s.tokenDown (a load average of 30
// on 2 cores: its first call 13.5 s into the smoke run's 20 s outage, the
// sagas' activities that long in the Temporal dev server's dispatch; later
// still, and the case failed "the fault did not happen"). Nor does an
// outage only the devoluções met prove anything of the transfers (a
// product that refunds a transfer on a token failure passed so), or the
// reverse. So the endpoint stays down past s.tokenDown until the worker's
// log shows a transfer call and a devolução call that failed for want of
// a token inside the window without one (see noTokenWindow: that window's
// check then judges calls of both), s.tokenHitWait at most: a worker that
// never makes one of them still fails the case.
func tokenEndpointDown(ctx context.Context, r *caseRun) (time.Time, string, error) {
	logFrom := logSize(r.st.worker)
	met := func(down time.Time) bool {
		from, _ := noTokenWindow(down, down, false)
		return tokenCalls.met(r.st.worker, logFrom, from)
	}
	out, err := takeTokenEndpointDown(ctx, r.st.psp, r.s.tokenDown, r.s.tokenDown+r.s.tokenHitWait, met)
	if err != nil {
		return time.Now(), "", err
	}
	r.noTokenFrom, r.noTokenTo = noTokenWindow(out.down, out.back, false)
	note := fmt.Sprintf("PSP calls failed for want of a token (the worker's log): %s; tokens of %s, used %s each",
		tokenCalls.record(r, logFrom), pspTokenLifetime, pspTokenUsable)
	note += keptNote("the endpoint kept down", out.back.Sub(out.down), r.s.tokenDown, out.met)
	return out.healed, note, nil
}

// faultCalls are the worker's PSP calls a token case's fault made fail,
// by kind (a transfer call, a devolução call), as its log says (the
// activity's error: the PSP client's words, then psp.TokenError's), and
// the case's facts that count them, one per kind, each required: a fault
// only one kind of call met proves nothing of the other.
type faultCalls []struct {
	fact, what string
	match      func(line string) bool
}

// facts are the calls' facts, for the case's check.
func (c faultCalls) facts() []string {
	var v []string
	for _, k := range c {
		v = append(v, k.fact)
	}
	return v
}

// met says whether p's log, from offset logFrom on, shows a failed call
// of each kind logged at since or after: the fault met calls of both.
func (c faultCalls) met(p *process, logFrom int64, since time.Time) bool {
	for _, k := range c {
		if countLogSince(p, logFrom, k.match, since) == 0 {
			return false
		}
	}
	return true
}

// record counts each kind's failed calls in the worker's log from offset
// logFrom on into r.facts, and says them.
func (c faultCalls) record(r *caseRun, logFrom int64) string {
	var counts []string
	for _, k := range c {
		r.facts[k.fact] = countLogSince(r.st.worker, logFrom, k.match, time.Time{})
		counts = append(counts, fmt.Sprintf("%d %s", r.facts[k.fact], k.what))
	}
	return strings.Join(counts, ", ")
}

// tokenCalls are case 21's: the calls that failed for want of a token
// while the token endpoint was down.
var tokenCalls = faultCalls{
	{fact: "transfer calls without a token (endpoint down)", what: "transfer calls",
		match: tokenFailure(tokenUnavailable, "psp submit ", "psp status ")},
	{fact: "devolução calls without a token (endpoint down)", what: "devolução calls",
		match: tokenFailure(tokenUnavailable, "psp refund ")},
}

// secretCalls are case 23's: the calls refused a token while our client's
// secret was wrong (401 invalid_client).
var secretCalls = faultCalls{
	{fact: "transfer calls refused a token (wrong secret)", what: "transfer calls",
		match: tokenFailure(tokenRefused, "psp submit ", "psp status ")},
	{fact: "devolução calls refused a token (wrong secret)", what: "devolução calls",
		match: tokenFailure(tokenRefused, "psp refund ")},
}

// The PSP client's words (psp.TokenError) for a token it could not get:
// the endpoint down, or our client refused.
const (
	tokenUnavailable = "psp token endpoint unavailable"
	tokenRefused     = "psp token endpoint refused our client"
)

// tokenFailure matches a log line of a PSP call, one of calls (the PSP
// client's words), that failed for want of a token, why (tokenUnavailable
// or tokenRefused).
func tokenFailure(why string, calls ...string) func(string) bool {
	return func(line string) bool {
		if !strings.Contains(line, why) {
			return false
		}
		for _, c := range calls {
			if strings.Contains(line, c) {
				return true
			}
		}
		return false
	}
}

// keepFault keeps a token case's fault in place for least, then until
// met() (polled every 250 ms) or end, whichever comes first, and returns
// when it stopped waiting, never after end, and whether met() held. An outage no call met proves
// nothing, and on a loaded machine the worker's next PSP call may come
// after least (see tokenEndpointDown); end bounds the wait, so that a
// worker that never makes such a call still fails the case.
func keepFault(ctx context.Context, least time.Duration, end time.Time, met func() bool) (time.Time, bool) {
	time.Sleep(least)
	ok := met()
	for !ok && time.Now().Before(end) && ctx.Err() == nil {
		time.Sleep(min(250*time.Millisecond, time.Until(end)))
		ok = met()
	}
	if now := time.Now(); now.Before(end) {
		return now, ok
	}
	return end, ok
}

// keptNote says, for a case's note, how long a fault was kept past its
// set time (kept, of set) and why: calls of both kinds met it, or the
// bound came first (the case then fails: the fault did not happen).
func keptNote(what string, kept, set time.Duration, met bool) string {
	if kept <= set+time.Second {
		return ""
	}
	why := "until calls of both met it"
	if !met {
		why = "its bound: calls of both had not met it"
	}
	return fmt.Sprintf("; %s %s, %s", what, kept.Round(100*time.Millisecond), why)
}

// tokenOutage is an outage of the simulator's token endpoint as the suite
// can tell it by its own clock: the simulator issued no token from down to
// back (it took the endpoint down at some moment of the request that asked
// it to, so a token may have been issued until that request's answer; and
// it may have brought the endpoint back as soon as back), and healed is
// when the suite had brought it back.
type tokenOutage struct {
	down, back, healed time.Time
	// met: calls met the outage before its bound (see keepFault).
	met bool
}

// takeTokenEndpointDown takes the simulator's token endpoint down (PUT
// /sim/token-endpoint, 503 temporarily_unavailable) for least, then until
// met(down) (polled) or most, whichever comes first, and back (DELETE).
// The simulator ends the outage on its own most after it took it down (the
// fault's For: a suite that dies does not leave it down), which may be
// before the DELETE is even sent; and the DELETE brings it back at some
// moment between its send and its answer: a token asked for then is
// issued, and the transfer it authorises made, before that answer. So
// back is the earliest the endpoint can be up again, the DELETE's send or
// most after the PUT was sent, never the DELETE's answer.
func takeTokenEndpointDown(ctx context.Context, p *pspServer, least, most time.Duration, met func(down time.Time) bool) (tokenOutage, error) {
	most = max(most, least)
	asked := time.Now()
	fault := pspsim.TokenEndpointFault{Mode: pspsim.TokenEndpointUnavailable, For: pspsim.Duration(most)}
	if err := p.send(ctx, http.MethodPut, "/sim/token-endpoint", fault, http.StatusNoContent, nil); err != nil {
		return tokenOutage{}, err
	}
	down := time.Now()
	back, ok := keepFault(ctx, least, asked.Add(most), func() bool { return met(down) })
	if err := p.send(ctx, http.MethodDelete, "/sim/token-endpoint", nil, http.StatusNoContent, nil); err != nil {
		return tokenOutage{}, err
	}
	return tokenOutage{down: down, back: back, healed: time.Now(), met: ok}, nil
}

// wrongClientSecret rotates our client's secret at the simulator, its
// tokens revoked at once (PUT /sim/oauth-clients/{id}), as a PSP whose
// secret was rotated: the secret file pixd reads holds the old one, which
// the token endpoint refuses (401 invalid_client) for s.secretWrongFor.
// Nothing may move; the refusals are counted in pix_psp_attention_total.
// Then the right secret is written to the file, which pixd reads at its
// next token request: everything completes.
//
// As case 21's outage (tokenEndpointDown), a wrong secret no call met
// proves nothing, and a loaded machine's worker may call the PSP after
// the smoke run's 8 s: the secret stays wrong past s.secretWrongFor until
// the worker's log shows a transfer call and a devolução call refused a
// token inside the window without one (noTokenWindow), s.tokenHitWait at
// most: a worker that never makes one of them still fails the case.
func wrongClientSecret(ctx context.Context, r *caseRun) (time.Time, string, error) {
	cred := r.st.psp.cred
	attentionBefore, err := pspAttention(ctx, r.st.workerMetricsURL)
	if err != nil {
		return time.Now(), "", err
	}
	logFrom := logSize(r.st.worker)
	b := make([]byte, 32)
	_, _ = rand.Read(b) // never fails
	rotated := base64.RawURLEncoding.EncodeToString(b)
	body := map[string]any{"secret": rotated, "revoke_tokens": true}
	if err := r.st.psp.send(ctx, http.MethodPut, "/sim/oauth-clients/"+url.PathEscape(cred.clientID), body, http.StatusNoContent, nil); err != nil {
		return time.Now(), "", err
	}
	wrong := time.Now()
	metFrom, _ := noTokenWindow(wrong, wrong, true)
	_, met := keepFault(ctx, r.s.secretWrongFor, wrong.Add(r.s.secretWrongFor+r.s.tokenHitWait),
		func() bool { return secretCalls.met(r.st.worker, logFrom, metFrom) })
	attentionAfter, err := pspAttention(ctx, r.st.workerMetricsURL)
	if err != nil {
		return time.Now(), "", err
	}
	calls := secretCalls.record(r, logFrom)
	r.facts["PSPRequestRefused counted"] = int(attentionAfter - attentionBefore)
	// The right secret, as an operator puts it: a file replaced whole, so
	// that pixd never reads half of it.
	tmp := cred.secretFile + ".new"
	if err := os.WriteFile(tmp, []byte(rotated+"\n"), 0o600); err != nil {
		return time.Now(), "", err
	}
	// The window ends before the rename, not after it: from the rename on,
	// the worker's next token request reads the right secret, and the
	// transfer its token authorises may be made before this process, on a
	// busy machine, gets to read the clock again. healed, after it, is the
	// recovery's reference.
	right := time.Now()
	if err := replaceFile(tmp, cred.secretFile); err != nil {
		return time.Now(), "", err
	}
	healed := time.Now()
	r.noTokenFrom, r.noTokenTo = noTokenWindow(wrong, right, true)
	note := fmt.Sprintf("secret wrong %s: PSP calls refused a token (the worker's log): %s; pix_psp_attention_total{kind=%q} +%d",
		r.s.secretWrongFor, calls, activities.ErrTypePSPRequestRefused, r.facts["PSPRequestRefused counted"])
	note += keptNote("the secret kept wrong", right.Sub(wrong), r.s.secretWrongFor, met)
	return healed, note, nil
}

// replaceFile replaces a file whole (os.Rename). A variable: a test runs
// what the worker may do between the wrong-secret case's rename and its
// next step.
var replaceFile = os.Rename

// heldBackCheck is the token cases' own check, after the common ones
// (every transfer and refund as the PSP's record says; none refunded or
// reversed on a guess):
//
//   - nothing reached the PSP while no token could be had: no transfer and
//     no devolução the PSP created in that window;
//   - some of the case's transfers and refunds asked for before the heal
//     reached the PSP only after it (held back, then sent);
//   - after the heal everything completed: no transfer open, no refund
//     open (checkRefunds fails an open refund already);
//   - facts: the fault happened.
func heldBackCheck(facts ...string) func(context.Context, *caseRun, *outcome) []string {
	return func(ctx context.Context, r *caseRun, o *outcome) []string {
		v := needFacts(facts...)(ctx, r, o)
		held, moved, err := heldBack(ctx, r)
		if err != nil {
			return append(v, err.Error())
		}
		for _, what := range []string{"transfers", "devoluções"} {
			if n := moved[what]; len(n) > 0 {
				slices.Sort(n)
				v = append(v, fmt.Sprintf("%d %s created at the PSP while no token could be had (%s to %s): %s", len(n), what,
					r.noTokenFrom.Format(time.TimeOnly), r.noTokenTo.Format(time.TimeOnly), abbreviate(n, 3)))
			}
			if held[what] == 0 {
				v = append(v, missed(fmt.Sprintf("no %s held back until the heal", what)))
			}
		}
		if o.transfers.open > 0 {
			v = append(v, fmt.Sprintf("%d transfers still open after the heal and the drain", o.transfers.open))
		}
		o.note += fmt.Sprintf("; no token could be had for %s: nothing reached the PSP then; held back until the heal, then sent: %d transfers, %d devoluções",
			r.noTokenTo.Sub(r.noTokenFrom).Round(time.Second), held["transfers"], held["devoluções"])
		return v
	}
}

// heldBack reads the PSP's records of the case's transfers and refunds:
// held counts those asked for (debited) before the heal that the PSP made
// only after it, moved lists those the PSP made in the no-token window.
func heldBack(ctx context.Context, r *caseRun) (held map[string]int, moved map[string][]string, err error) {
	held, moved = map[string]int{}, map[string][]string{}
	in := r.withoutToken
	transfers, err := transfersOf(ctx, r.st.pool, r.sess.RunID())
	if err != nil {
		return nil, nil, err
	}
	pspTransfers, _, err := r.st.psp.transfers(ctx)
	if err != nil {
		return nil, nil, err
	}
	for _, t := range transfers {
		p, ok := pspTransfers[t.endToEndID]
		switch {
		case !ok:
		case in(p.CreatedAt):
			moved["transfers"] = append(moved["transfers"], t.endToEndID)
		case t.createdAt.Before(r.noTokenTo) && !p.CreatedAt.Before(r.noTokenTo):
			held["transfers"]++
		}
	}
	refunds, err := refundsOf(ctx, r.st.pool, r.sess.RunID())
	if err != nil {
		return nil, nil, err
	}
	ours := map[string]refundRow{}
	for _, t := range refunds {
		ours[t.id] = t
	}
	asked := map[string]bool{} // the PIX whose devoluções the PSP was asked for
	for _, t := range refunds {
		asked[t.endToEndID] = true
	}
	for _, e2e := range slices.Sorted(maps.Keys(asked)) {
		devs, err := r.st.psp.devolucoes(ctx, e2e)
		if err != nil {
			return nil, nil, err
		}
		for _, d := range devs {
			made := d.Horario.Solicitacao
			switch t, ok := ours[d.ID]; {
			case in(made):
				moved["devoluções"] = append(moved["devoluções"], e2e+"/"+d.ID)
			case ok && t.createdAt.Before(r.noTokenTo) && !made.Before(r.noTokenTo):
				held["devoluções"]++
			}
		}
	}
	return held, moved, nil
}

// withoutToken reports whether the PSP made something at t, in a token
// case's window in which no call could have a token.
func (r *caseRun) withoutToken(t time.Time) bool {
	return !t.Before(r.noTokenFrom) && t.Before(r.noTokenTo)
}

// The PIX the simulator is told it received (POST /sim/pix) in the
// webhook-drop case: to simPixKeys Pix keys of the case's first accounts,
// simPixRate a second, end_to_end_ids of an ISPB the load never uses.
const (
	simPixKeys = 5
	simPixRate = 2
	simPixISPB = "99999999"
)

func simPixKey(runID string, i int) string {
	return strings.ToLower(fmt.Sprintf("sim%d-%s@faults.example", i, runID))
}

func simPixEndToEndID(runID string, n int) string {
	return fmt.Sprintf("E%s%s%013d", simPixISPB, runID, n)
}

// simPixKeys registers the Pix keys the simulator's PIX are sent to, each
// of one of the case's accounts.
func simPixKeysSetup(ctx context.Context, r *caseRun) error {
	store := db.NewStore(r.st.pool)
	for i := range simPixKeys {
		if _, err := store.CreatePixKey(ctx, db.NewPixKey{Key: simPixKey(r.sess.RunID(), i), KeyType: "email",
			AccountID: load.AccountID(r.sess.RunID(), i)}); err != nil {
			return err
		}
	}
	return nil
}

// simPix is one PIX the simulator was told it received.
type simPix struct {
	endToEndID, accountID string
	amountCents           int64
	postedAt              time.Time
}

// postSimPix tells the simulator it received the case's PIX number n
// (POST /sim/pix, its horario the simulator's now), to one of the case's
// simPixKeys, and returns it as sent.
func postSimPix(ctx context.Context, r *caseRun, n int) (simPix, error) {
	runID := r.sess.RunID()
	p := simPix{endToEndID: simPixEndToEndID(runID, n), accountID: load.AccountID(runID, n%simPixKeys),
		amountCents: int64(100 + (n*7919)%9900), postedAt: time.Now()}
	body := map[string]any{"endToEndId": p.endToEndID, "valor": psp.FormatValor(p.amountCents),
		"chave": simPixKey(runID, n%simPixKeys), "infoPagador": "fault suite"}
	if err := r.st.psp.send(ctx, http.MethodPost, "/sim/pix", body, http.StatusAccepted, nil); err != nil {
		return simPix{}, fmt.Errorf("tell the simulator of a PIX: %w", err)
	}
	return p, nil
}

// webhooksDropped has the simulator receive PIX (POST /sim/pix, to the
// case's keys, simPixRate a second) for 3 s, then drop every webhook for
// s.webhookDrop (PUT /sim/webhook-drop: each notification due then is
// given up, as by a PSP past its retry budget) while PIX keep arriving,
// then 3 s more with webhooks. The PIX of the drop are only in the PSP's
// record (GET /pix): the catch-up, every pspCatchUpInterval, must credit
// each once, by two intervals after the drop ends; the others arrive by
// their webhook (over mutual TLS, unsigned) and are listed too: a
// duplicate, never a second credit. It waits for every PIX to be
// credited (up to two intervals and a minute after the drop).
func webhooksDropped(ctx context.Context, r *caseRun) (time.Time, string, error) {
	stop := make(chan struct{})
	posted := make(chan []simPix, 1)
	var postErr error
	// The sender is owned here: closed stop ends it, and it is waited for.
	go func() {
		var out []simPix
		tick := time.NewTicker(time.Second / simPixRate)
		defer tick.Stop()
		for n := 1; ; n++ {
			select {
			case <-stop:
				posted <- out
				return
			case <-ctx.Done():
				posted <- out
				return
			case <-tick.C:
			}
			p, err := postSimPix(ctx, r, n)
			if err != nil {
				postErr = err
				continue
			}
			out = append(out, p)
		}
	}()
	time.Sleep(3 * time.Second)
	dropStart := time.Now()
	drop := map[string]any{"for": pspsim.Duration(r.s.webhookDrop)}
	err := r.st.psp.send(ctx, http.MethodPut, "/sim/webhook-drop", drop, http.StatusNoContent, nil)
	if err == nil {
		time.Sleep(r.s.webhookDrop)
		err = r.st.psp.send(ctx, http.MethodDelete, "/sim/webhook-drop", nil, http.StatusNoContent, nil)
	}
	dropEnd := time.Now()
	if err == nil {
		time.Sleep(3 * time.Second)
	}
	close(stop)
	r.simPix = <-posted
	r.dropStart, r.dropEnd = dropStart, dropEnd
	if err != nil {
		return dropEnd, "", err
	}
	if postErr != nil {
		return dropEnd, "", postErr
	}
	// Every PIX credited, or the deadline: the check says which were not.
	deadline := dropEnd.Add(2*pspCatchUpInterval + time.Minute)
	for time.Now().Before(deadline) {
		rows, err := simPixRows(ctx, r)
		if err != nil {
			return dropEnd, "", err
		}
		credited := 0
		for _, row := range rows {
			if row.credits > 0 {
				credited++
			}
		}
		if credited == len(r.simPix) {
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	return dropEnd, fmt.Sprintf("%d PIX received by the PSP, webhooks dropped from +3 s for %s", len(r.simPix), r.s.webhookDrop), nil
}

// simPixRow is what our books hold of one of the simulator's PIX.
type simPixRow struct {
	psp        string
	status     string
	credits    int
	account    string
	amount     int64
	creditedAt *time.Time
}

// simPixRows reads the books of the case's simulator PIX, by
// end_to_end_id: its inbox row (the psp that stored it first: the
// webhooks' PSP or the catch-up), and its credits.
func simPixRows(ctx context.Context, r *caseRun) (map[string]simPixRow, error) {
	rows, err := r.st.pool.Query(ctx, `
		SELECT m.end_to_end_id, COALESCE(m.psp, ''), m.status, count(c.end_to_end_id), COALESCE(min(c.account_id), ''),
		       COALESCE(min(c.amount_cents), 0), min(c.credited_at)
		FROM inbox_messages m LEFT JOIN pix_credits c USING (end_to_end_id)
		WHERE starts_with(m.end_to_end_id, $1) GROUP BY m.end_to_end_id, m.psp, m.status`, "E"+simPixISPB+r.sess.RunID())
	if err != nil {
		return nil, fmt.Errorf("read the simulator's PIX: %w", err)
	}
	out := map[string]simPixRow{}
	var e2e string
	var row simPixRow
	_, err = pgx.ForEachRow(rows, []any{&e2e, &row.psp, &row.status, &row.credits, &row.account, &row.amount, &row.creditedAt}, func() error {
		out[e2e] = row
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read the simulator's PIX: %w", err)
	}
	return out, nil
}

// webhooksDroppedCheck holds the simulator's PIX against our books:
//
//   - each credited exactly once, to its key's account, with its valor;
//   - the drop bit: some PIX were first stored by the catch-up (psp
//     'catchup': their webhook never came), and some by their webhook over
//     mutual TLS (psp pspWebhooksPSP) before the catch-up listed them;
//     none posted well inside the drop came by a webhook;
//   - each PIX of the catch-up credited by two catch-up intervals after
//     the drop ended (the time from its arrival at the PSP to its credit
//     is measured and noted).
func webhooksDroppedCheck(ctx context.Context, r *caseRun, o *outcome) []string {
	rows, err := simPixRows(ctx, r)
	if err != nil {
		return []string{err.Error()}
	}
	var v []string
	bad := flagged{}
	// Every PIX the PSP made before covered_until was listed by a run of
	// the catch-up: one that came by its webhook first, a duplicate.
	coveredUntil, _, err := catchUpCovered(ctx, r)
	if err != nil {
		v = append(v, err.Error())
	}
	var caughtUp, notified, listedToo int
	var lastCredit time.Time
	var slowest time.Duration
	bound := r.dropEnd.Add(2 * pspCatchUpInterval)
	for _, p := range r.simPix {
		row, ok := rows[p.endToEndID]
		if !simPixBooked(p, row, ok, bad) {
			continue
		}
		switch row.psp {
		case catchup.PSPName:
			caughtUp++
			if row.creditedAt.After(bound) {
				bad.flag(fmt.Sprintf("PIX of the catch-up credited later than two intervals (%s) after the drop ended", 2*pspCatchUpInterval),
					fmt.Sprintf("%s (+%s)", p.endToEndID, row.creditedAt.Sub(r.dropEnd).Round(100*time.Millisecond)))
			}
			lastCredit = maxTime(lastCredit, *row.creditedAt)
			slowest = max(slowest, row.creditedAt.Sub(p.postedAt))
		case pspWebhooksPSP:
			notified++
			if p.postedAt.Before(coveredUntil) {
				listedToo++
			}
			if p.postedAt.After(r.dropStart.Add(time.Second)) && p.postedAt.Before(r.dropEnd.Add(-time.Second)) {
				bad.flag("PIX posted inside the drop that came by a webhook (the drop did not bite)", p.endToEndID)
			}
		default:
			bad.flag("PIX stored first by another PSP than the simulator's webhooks or the catch-up", fmt.Sprintf("%s (psp %q)", p.endToEndID, row.psp))
		}
	}
	if caughtUp == 0 {
		v = append(v, missed("no PIX first found by the catch-up"))
	}
	if notified == 0 {
		v = append(v, fmt.Sprintf("no PIX came by its webhook over mutual TLS (psp %q)", pspWebhooksPSP))
	}
	v = append(v, bad.verdicts()...)
	slices.Sort(v)
	lastAfter := "before the drop ended"
	if lastCredit.After(r.dropEnd) {
		lastAfter = "+" + lastCredit.Sub(r.dropEnd).Round(100*time.Millisecond).String() + " after the drop ended"
	}
	o.note += fmt.Sprintf("; %d by the catch-up (the last credited %s; at most %s from the PSP to the credit), %d by their webhook over mutual TLS (%d of them listed by the catch-up after, duplicates)",
		caughtUp, lastAfter, slowest.Round(100*time.Millisecond), notified, listedToo)
	return v
}

// simPixBooked holds one of the simulator's PIX against our books (row,
// ok when they hold it): flagged when they do not, when it is not credited
// exactly once, its inbox row not done, or when it is credited to another
// account or amount than the PSP's. It reports whether the PIX was
// credited once.
func simPixBooked(p simPix, row simPixRow, ok bool, bad flagged) bool {
	switch {
	case !ok:
		bad.flag("PIX the PSP received that our books do not hold", p.endToEndID)
		return false
	case row.credits != 1:
		bad.flag("PIX not credited exactly once", fmt.Sprintf("%s (%d credits)", p.endToEndID, row.credits))
		return false
	}
	if row.status != pix.StatusDone {
		bad.flag("PIX credited whose inbox row is not done", fmt.Sprintf("%s (%s)", p.endToEndID, row.status))
	}
	if row.account != p.accountID || row.amount != p.amountCents {
		bad.flag("PIX credited to another account or amount than the PSP's", p.endToEndID)
	}
	return true
}

// flagged are the PIX a check found wrong, by what is wrong with them.
type flagged map[string][]string

func (f flagged) flag(what, id string) { f[what] = append(f[what], id) }

// verdicts are one line per wrong, with how many PIX and the first of
// them, in order.
func (f flagged) verdicts() []string {
	var v []string
	for what, ids := range f {
		slices.Sort(ids)
		v = append(v, fmt.Sprintf("%d %s: %s", len(ids), what, abbreviate(ids, 3)))
	}
	slices.Sort(v)
	return v
}

// catchUpCovered reads the catch-up's covered end (covered_windows'
// psp-catchup) and the database's now, the clock its windows are cut
// by.
func catchUpCovered(ctx context.Context, r *caseRun) (covered, now time.Time, err error) {
	return coveredEnd(ctx, r, catchUpWindow)
}

// The covered windows (covered_windows' names) of the scheduled listers:
// the PSP catch-up's and the MED DICT lister's.
const (
	catchUpWindow = "psp-catchup"
	dictMEDWindow = "dict-med"
)

// coveredEnd reads the covered end of the lister's window name, and the
// database's now; pgx.ErrNoRows before its first run covered one.
func coveredEnd(ctx context.Context, r *caseRun, name string) (covered, now time.Time, err error) {
	if err := r.st.pool.QueryRow(ctx, `SELECT covered_until, now() FROM covered_windows WHERE name = $1`, name).Scan(&covered, &now); err != nil {
		return time.Time{}, time.Time{}, fmt.Errorf("the covered window %s: %w", name, err)
	}
	return covered, now, nil
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// pspAttention reads the worker's pix_psp_attention_total of our refused
// requests (kind PSPRequestRefused, every status code) from its /metrics.
func pspAttention(ctx context.Context, metricsURL string) (float64, error) {
	families, err := scrape(ctx, metricsURL)
	if err != nil {
		return 0, err
	}
	var n float64
	for _, m := range families["pix_psp_attention_total"].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "kind" && l.GetValue() == activities.ErrTypePSPRequestRefused {
				n += m.GetCounter().GetValue()
			}
		}
	}
	return n, nil
}

// logSize is where p's log ends now: countLog counts from there.
func logSize(p *process) int64 {
	fi, err := os.Stat(filepath.Join(p.logDir, p.name+".log"))
	if err != nil {
		return 0
	}
	return fi.Size()
}

// countLogSince counts the lines of p's log from offset from on that
// match and were logged at since or after (their slog "time"). It reads
// the log from the offset only: a case polls it.
func countLogSince(p *process, from int64, match func(line string) bool, since time.Time) int {
	f, err := os.Open(filepath.Join(p.logDir, p.name+".log"))
	if err != nil {
		return 0
	}
	defer f.Close()
	if _, err := f.Seek(from, io.SeekStart); err != nil {
		return 0
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return 0
	}
	n := 0
	for line := range strings.Lines(string(b)) {
		if !match(line) {
			continue
		}
		if !since.IsZero() {
			var l struct {
				Time time.Time `json:"time"`
			}
			if json.Unmarshal([]byte(line), &l) != nil || l.Time.Before(since) {
				continue
			}
		}
		n++
	}
	return n
}

// scrape reads the metric families of a process's GET /metrics.
func scrape(ctx context.Context, metricsURL string) (map[string]*dto.MetricFamily, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, metricsURL, nil)
	if err != nil {
		return nil, err
	}
	res, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
	if err != nil {
		return nil, fmt.Errorf("worker metrics %s: %w", metricsURL, err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("worker metrics %s: %s", metricsURL, res.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(res.Body)
	if err != nil {
		return nil, fmt.Errorf("worker metrics %s: %w", metricsURL, err)
	}
	return families, nil
}
