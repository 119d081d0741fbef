package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/pixbank/pix/internal/dict"
	"github.com/pixbank/pix/internal/tooling/dictsim"
	"github.com/pixbank/pix/tooling/load"
)

// medCases are MED's faults, against the DICT simulator the worker reaches
// as production's DICT (mutual TLS, signed writes, signed answers).
func medCases(s settings) []faultCase {
	return []faultCase{
		{name: fmt.Sprintf("the DICT down %s from the first acknowledge while infraction reports arrive and PIX leave their accounts", s.dictDown),
			outgoing: true, ownTransfers: true, setup: waitDICTLister, inject: dictOutage, check: dictOutageCheck},
	}
}

// waitDICTLister waits until the worker's DICT lister has covered a window:
// its Schedule is written once the worker's build is current, which on a
// loaded machine takes a while after the stack starts (a case run alone).
func waitDICTLister(ctx context.Context, r *caseRun) error {
	if _, _, err := waitCovered(ctx, r, dictMEDWindow, 2*time.Minute); err != nil {
		return fmt.Errorf("before the reports, the DICT lister's first run: %w", err)
	}
	return nil
}

// The DICT's operations the MED case counts (dict-api.yaml's operationIds).
const (
	opAcknowledge = "acknowledgeInfractionReport"
	opCloseReport = "closeInfractionReport"
	opCloseRefund = "closeRefund"
)

// medReport is an infraction report the case opened at the DICT against a
// PIX the load got credited.
type medReport struct {
	id, endToEndID, account string
	cents                   int64
	// duringOutage: opened while the DICT was down (listed after it).
	duringOutage bool
}

// dictExchange is a request the DICT simulator admitted during the case:
// its operation, the report it names (a write's), when, and the status
// it was answered.
type dictExchange struct {
	op, reportID string
	at           time.Time
	status       int
}

// dictOutageRun is what the MED case learns for its check: the reports,
// the DICT's exchanges, when the DICT was down, and the books at the heal.
type dictOutageRun struct {
	reports []medReport
	// accounts are the reports' accounts, and debits the transfers out
	// of them while the DICT was down.
	accounts []string
	debits   *medDebits

	mu        sync.Mutex
	exchanges []dictExchange
	// down and up are when the outage began (the first acknowledge) and
	// ended.
	down, up time.Time
	// atHeal are the problems seen in our books as the DICT came back
	// (something released, returned or acknowledged on a guess).
	atHeal []string
	// heldAtHeal is how many reports our books held, unacknowledged, at
	// the heal; recovered how long after it every report was acknowledged.
	heldAtHeal int
	recovered  time.Duration
}

// record is the simulator's answer hook of the case: the first
// acknowledge takes the DICT down for d (so that the outage meets the
// saga between its hold and its acknowledge, every run), then the model
// answers, and every exchange is kept.
func (m *dictOutageRun) record(sim *dictsim.TestServer, d time.Duration) dictsim.AnswerHook {
	return func(x *dictsim.Exchange, model func() dictsim.Answer) dictsim.Answer {
		m.mu.Lock()
		if x.Op == opAcknowledge && m.down.IsZero() {
			if err := sim.SetOutage(dictsim.Outage{For: d}); err == nil {
				m.down = time.Now()
				m.up = m.down.Add(d)
			}
		}
		m.mu.Unlock()
		a := model()
		m.mu.Lock()
		m.exchanges = append(m.exchanges, dictExchange{op: x.Op, reportID: reportOfPath(x.Request.URL.Path), at: time.Now(), status: a.Status})
		m.mu.Unlock()
		return a
	}
}

// reportOfPath is the report id of a report's write path
// (/infraction-reports/{id}/acknowledge), "" for another.
func reportOfPath(path string) string {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	if len(parts) == 3 && parts[0] == "infraction-reports" {
		return parts[1]
	}
	return ""
}

func (m *dictOutageRun) window() (down, up time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.down, m.up
}

// medReportsPerCase is how many reports the MED case opens: half before
// the outage (the lister takes them in, the saga holds and meets the
// outage at its acknowledge), half while the DICT is down.
const medReportsPerCase = 10

// medIntakeWithin bounds the wait for the first acknowledge.
const medIntakeWithin = 2 * time.Minute

// dictOutage opens infraction reports at the DICT against PIX the load got
// credited, takes the DICT down for s.dictDown at the first acknowledge
// that reaches it while more reports arrive, and brings it back; then waits
// (bounded) until every report is acknowledged, at the DICT and in our
// books. At the heal it reads our books: every report taken in is held, none
// acknowledged, released or returned (the DICT never answered).
func dictOutage(ctx context.Context, r *caseRun) (time.Time, string, error) {
	st := r.st
	m := &dictOutageRun{}
	r.dictOutage = m
	st.dict.SetAnswerHook(m.record(st.dict, r.s.dictDown))
	defer st.dict.SetAnswerHook(nil)

	credited, err := waitCredited(ctx, r, medReportsPerCase, 30*time.Second)
	if err != nil {
		return time.Now(), "", err
	}
	open := func(c load.Credited, during bool) error {
		rep, err := st.dict.OpenReport(dictsim.NewReport{EndToEndID: c.EndToEndID, Amount: dict.Amount(c.AmountCents),
			Debited: dictsim.TestPayer, Credited: dictsim.TestBank, Details: "golpe relatado (fault suite)"})
		if err != nil {
			return fmt.Errorf("open a report of %s at the DICT: %w", c.EndToEndID, err)
		}
		m.reports = append(m.reports, medReport{id: rep.ID, endToEndID: c.EndToEndID, account: c.AccountID, cents: c.AmountCents, duringOutage: during})
		return nil
	}
	for _, c := range credited[:medReportsPerCase/2] {
		if err := open(c, false); err != nil {
			return time.Now(), "", err
		}
	}
	// The lister takes them in within its interval and the lists' lag;
	// their runs hold, then acknowledge: the DICT goes down then. (Seconds
	// on a quiet machine; the bound is for a loaded one, where Temporal's
	// dispatch of the runs' tasks takes its time.)
	deadline := time.Now().Add(medIntakeWithin)
	for {
		if down, _ := m.window(); !down.IsZero() {
			break
		}
		if time.Now().After(deadline) {
			return time.Now(), "", fmt.Errorf("%w: no acknowledge reached the DICT within %s of the first reports", errFaultMissed, medIntakeWithin)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// PIX leave the reports' accounts while the DICT is down, racing
	// their holds.
	_, up := m.window()
	for _, c := range credited {
		m.accounts = append(m.accounts, c.AccountID)
	}
	var waitDebits func()
	m.debits, waitDebits = startMEDDebits(ctx, r, m.accounts, up.Add(-2*time.Second))
	defer waitDebits()
	// More reports arrive while the DICT is down, a second apart.
	for _, c := range credited[medReportsPerCase/2:] {
		time.Sleep(time.Second)
		if err := open(c, true); err != nil {
			return time.Now(), "", err
		}
	}
	// Our books just before the DICT comes back.
	time.Sleep(time.Until(up.Add(-500 * time.Millisecond)))
	atHeal, held, err := medBooksAtHeal(ctx, r, m.reports)
	if err != nil {
		return time.Now(), "", err
	}
	time.Sleep(time.Until(up))
	m.atHeal, m.heldAtHeal = atHeal, held

	// Every report acknowledged, at the DICT and in our books.
	deadline = up.Add(r.s.dictRecovery)
	for {
		n, err := medAcknowledged(ctx, r, m.reports)
		if err != nil {
			return up, "", err
		}
		if n == len(m.reports) {
			m.recovered = time.Since(up)
			break
		}
		if time.Now().After(deadline) {
			return up, "", fmt.Errorf("%d of %d reports acknowledged at the DICT and in our books %s after the DICT came back", n, len(m.reports), r.s.dictRecovery)
		}
		time.Sleep(250 * time.Millisecond)
	}
	return up, "", nil
}

// waitCredited waits (up to within) until the load got n PIX credited, and
// returns n of them on n different accounts.
func waitCredited(ctx context.Context, r *caseRun, n int, within time.Duration) ([]load.Credited, error) {
	read := load.CreditedOf(r.st.pool, r.sess.RunID())
	deadline := time.Now().Add(within)
	for {
		all, err := read(ctx)
		if err != nil {
			return nil, err
		}
		var out []load.Credited
		seen := map[string]bool{}
		for _, c := range all {
			if !seen[c.AccountID] {
				seen[c.AccountID] = true
				out = append(out, c)
			}
		}
		if len(out) >= n {
			return out[:n], nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%w: %d PIX credited on different accounts after %s, want %d", errFaultMissed, len(out), within, n)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// medBooksAtHeal reads our books of the reports as the DICT comes back:
// each report taken in must be held (its hold active, of its PIX's
// amount: what leaves the accounts, small transfers, leaves their opening
// balance to cover it) and not
// acknowledged, released, ended or returned; held is how many are.
func medBooksAtHeal(ctx context.Context, r *caseRun, reports []medReport) (problems []string, held int, err error) {
	for _, rep := range reports {
		b, err := readMEDBooks(ctx, r, rep.id)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			continue // not listed yet: the DICT was down
		case err != nil:
			return nil, 0, err
		}
		switch {
		case b.refunds > 0:
			problems = append(problems, fmt.Sprintf("report %s: %d devoluções of its PIX while the DICT was down", rep.id, b.refunds))
		case b.status == "held" && b.heldCents == rep.cents && b.holdCents == rep.cents:
			held++
		case b.status == "received":
			// taken in, its hold not made yet: nothing to release
		default:
			problems = append(problems, fmt.Sprintf("report %s at the heal: %s; want held %d and not acknowledged", rep.id, b, rep.cents))
		}
	}
	return problems, held, nil
}

// medBooks are a report as our books hold it: its status, the DICT's as we
// recorded it, what the report says it holds, its active hold's amount,
// and how many devoluções its PIX has.
type medBooks struct {
	status, dictStatus   string
	heldCents, holdCents int64
	refunds              int
}

func (b medBooks) String() string {
	return fmt.Sprintf("%s (DICT %s), held %d, its active hold %d, %d devoluções", b.status, b.dictStatus, b.heldCents, b.holdCents, b.refunds)
}

// readMEDBooks reads report id from our books; pgx.ErrNoRows when it was
// not taken in.
func readMEDBooks(ctx context.Context, r *caseRun, id string) (medBooks, error) {
	var b medBooks
	err := r.st.pool.QueryRow(ctx, `
		SELECT m.status, m.dict_status, m.held_cents, COALESCE(h.amount_cents, 0),
			(SELECT count(*) FROM pix_refunds f WHERE f.end_to_end_id = m.end_to_end_id)
		FROM pix_med_reports m LEFT JOIN pix_holds h ON h.id = m.hold_id AND h.status = 'active'
		WHERE m.id = $1`, id).Scan(&b.status, &b.dictStatus, &b.heldCents, &b.holdCents, &b.refunds)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return b, fmt.Errorf("read report %s: %w", id, err)
	}
	return b, err
}

// medAcknowledged is how many of the reports are ACKNOWLEDGED at the DICT
// and acknowledged in our books.
func medAcknowledged(ctx context.Context, r *caseRun, reports []medReport) (int, error) {
	n := 0
	for _, rep := range reports {
		if at, ok := r.st.dict.Report(rep.id); !ok || at.Status != dict.ReportAcknowledged {
			continue
		}
		b, err := readMEDBooks(ctx, r, rep.id)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			continue
		case err != nil:
			return 0, err
		case b.status == "acknowledged":
			n++
		}
	}
	return n, nil
}

// dictOutageCheck: after the drains, every report acknowledged once at the
// DICT (one acknowledge answered 2xx), none closed (nobody analysed), its
// PIX's amount held by its active hold, no devolução of its PIX; nothing
// acknowledged, released or returned while the DICT was down; every
// account's available balance non-negative (the reconcile, common to every
// case, holds each account's held amount to its active holds and its
// balance to its movements); the transfers out of the reported accounts
// while the DICT was down (medDebits.check: none spent held money, each
// that needed it refused, each account's books whole; the common checks of
// an outgoing case hold every transfer to the PSP's record); and the fault
// bit: acknowledges answered 503, reports held across the outage, reports
// that arrived during it, a transfer that needed held money refused.
func dictOutageCheck(ctx context.Context, r *caseRun, o *outcome) []string {
	m := r.dictOutage
	if m == nil {
		return []string{"the MED case recorded nothing"}
	}
	// (Every webhook acknowledged at the first try: runCase, an outgoing
	// case, which holds every transfer to the PSP's record.)
	v := slices.Clone(m.atHeal)
	m.mu.Lock()
	exchanges := slices.Clone(m.exchanges)
	down, up := m.down, m.up
	m.mu.Unlock()

	acks, refused := map[string]int{}, 0
	for _, x := range exchanges {
		switch {
		case x.op == opCloseReport || x.op == opCloseRefund:
			v = append(v, fmt.Sprintf("%s of report %s sent at %s: nobody analysed the reports", x.op, x.reportID, x.at.Format(time.TimeOnly)))
		case x.op == opAcknowledge && x.status/100 == 2:
			acks[x.reportID]++
			if x.at.Before(up) {
				v = append(v, fmt.Sprintf("report %s acknowledged at %s, while the DICT was down", x.reportID, x.at.Format(time.TimeOnly)))
			}
		case x.op == opAcknowledge && x.status == http.StatusServiceUnavailable:
			refused++
		}
	}
	during := 0
	for _, rep := range m.reports {
		if rep.duringOutage {
			during++
		}
		if acks[rep.id] != 1 {
			v = append(v, fmt.Sprintf("report %s acknowledged %d times at the DICT (want once)", rep.id, acks[rep.id]))
		}
		b, err := readMEDBooks(ctx, r, rep.id)
		if err != nil {
			v = append(v, err.Error())
			continue
		}
		if b.status != "acknowledged" || b.dictStatus != string(dict.ReportAcknowledged) || b.heldCents != rep.cents || b.holdCents != rep.cents || b.refunds != 0 {
			v = append(v, fmt.Sprintf("report %s: %s; want acknowledged, %d held, none returned", rep.id, b, rep.cents))
		}
	}
	var negative int
	if err := r.st.pool.QueryRow(ctx, `SELECT count(*) FROM accounts WHERE balance_cents - held_cents < 0 OR held_cents < 0`).Scan(&negative); err != nil {
		v = append(v, err.Error())
	} else if negative > 0 {
		v = append(v, fmt.Sprintf("%d accounts with a negative available balance", negative))
	}
	v = append(v, r.st.dictViolations()...)
	switch {
	case refused == 0:
		v = append(v, missed("no acknowledge was answered 503"))
	case m.heldAtHeal == 0:
		v = append(v, missed("no report was held, unacknowledged, when the DICT came back"))
	case during == 0:
		v = append(v, missed("no report arrived while the DICT was down"))
	}
	debitsNote := "no PIX left the reported accounts"
	if m.debits != nil {
		var dv []string
		dv, debitsNote = m.debits.check(ctx, r, m.accounts)
		v = append(v, dv...)
	} else {
		v = append(v, missed(debitsNote))
	}
	// (What runCase noted of the transfers goes after.)
	o.note = fmt.Sprintf("DICT down %s: %d reports (%d arrived during the outage), %d acknowledges answered 503, %d held unacknowledged at the heal; every report acknowledged once %s after it, each holding its PIX; %s%s",
		up.Sub(down).Round(time.Second), len(m.reports), during, refused, m.heldAtHeal, m.recovered.Round(100*time.Millisecond), debitsNote, o.note)
	return v
}
