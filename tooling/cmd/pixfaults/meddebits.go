package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/pixbank/pix/tooling/load"
)

// The MED case's money out: while the DICT is down, outgoing PIX (POST
// /pix, the outgoing cases' load.Transfers) leave the very accounts whose
// PIX are reported, racing the holds of their reports. Each round, for each
// such account: a read of its books; a transfer that fits its available
// balance (a third of the accounts each round) and, when something of it
// is held, at the same moment a transfer
// that needs held money (its available balance plus half what is held:
// more than it may spend, less than its balance), which must be refused
// insufficient_funds with nothing made of it; then a read again. Every read
// must find the available balance (balance less held) non-negative and the
// held amount the sum of the account's active holds.

// medDebitEvery is how often a round of transfers leaves the reported
// accounts while the DICT is down; a transfer that fits leaves a third of
// them each round (each one a saga more for a worker and a Temporal that
// must also bring the reports back within a minute: 100 of them, one per
// account every 3 s, made a report's acknowledge miss that minute on a
// loaded machine). medDebitFitCents bounds a transfer that fits (small:
// the reports' holds, made after the DICT comes back for those it did not
// list, must still find their PIX's amount).
const (
	medDebitEvery    = 5 * time.Second
	medDebitFitEvery = 3
	medDebitFitCents = 1000
)

// insufficientFunds is the API's refusal of a debit its available balance
// does not cover (internal/pix's ErrInsufficientFunds).
const insufficientFunds = "insufficient_funds"

// medFunds is an account's money as one read of our books has it (one
// statement: one snapshot).
type medFunds struct {
	balance, held, activeHolds int64
	// xmin is the read's snapshot xmin: every movement of a transaction
	// below it is in balance, and any later one has a transaction id from
	// it on.
	xmin string
}

func (f medFunds) available() int64 { return f.balance - f.held }

// problem is what a read breaks: a debit spent held money (available
// below zero), or the held amount is not the sum of the active holds.
func (f medFunds) problem(account string) string {
	switch {
	case f.available() < 0 || f.held < 0:
		return fmt.Sprintf("account %s: available %d (balance %d, held %d): a debit spent held money", account, f.available(), f.balance, f.held)
	case f.held != f.activeHolds:
		return fmt.Sprintf("account %s: held %d, its active holds %d", account, f.held, f.activeHolds)
	}
	return ""
}

func readFunds(ctx context.Context, r *caseRun, account string) (medFunds, error) {
	var f medFunds
	err := r.st.pool.QueryRow(ctx, `
		SELECT a.balance_cents, a.held_cents,
			COALESCE((SELECT sum(h.amount_cents) FROM pix_holds h WHERE h.account_id = a.id AND h.status = 'active'), 0),
			pg_snapshot_xmin(pg_current_snapshot())::text
		FROM accounts a WHERE a.id = $1`, account).Scan(&f.balance, &f.held, &f.activeHolds, &f.xmin)
	if err != nil {
		return f, fmt.Errorf("read account %s: %w", account, err)
	}
	return f, nil
}

// medDebits is what the transfers out of the reported accounts came to.
type medDebits struct {
	mu sync.Mutex
	// reads is how many reads of the accounts were taken; problems what
	// they and the transfers broke.
	reads    int
	problems []string
	// fits: transfers that fit the available balance sent, created (201)
	// and refused (a hold took the money first).
	fits, fitsCreated, fitsRefused int
	// needHeld: transfers that needed held money sent, refused
	// insufficient_funds with nothing made, and accepted while money came
	// in meanwhile that may have covered them (no verdict).
	needHeld, needHeldRefused, needHeldCovered int
}

// add records a problem once (an account read again finds it again).
func (d *medDebits) add(problem string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !slices.Contains(d.problems, problem) {
		d.problems = append(d.problems, problem)
	}
}

// read reads account and holds the read to the rules; ok false when it
// could not read.
func (d *medDebits) read(ctx context.Context, r *caseRun, account string) (medFunds, bool) {
	f, err := readFunds(ctx, r, account)
	if err != nil {
		d.add(err.Error())
		return f, false
	}
	d.mu.Lock()
	d.reads++
	d.mu.Unlock()
	if p := f.problem(account); p != "" {
		d.add(p)
	}
	return f, true
}

// startMEDDebits sends rounds of transfers out of accounts until until (a
// round under way ends after it); wait waits for the last.
func startMEDDebits(ctx context.Context, r *caseRun, accounts []string, until time.Time) (d *medDebits, wait func()) {
	d = &medDebits{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		rng := rand.New(rand.NewPCG(25, 5))
		for round := 0; time.Now().Before(until) && ctx.Err() == nil; round++ {
			began := time.Now()
			var wg sync.WaitGroup
			for i, a := range accounts {
				fit := int64(0)
				if i%medDebitFitEvery == round%medDebitFitEvery {
					fit = 1 + rng.Int64N(medDebitFitCents)
				}
				wg.Go(func() { d.round(ctx, r, a, fit) })
			}
			wg.Wait()
			next := began.Add(medDebitEvery)
			if until.Before(next) {
				next = until
			}
			time.Sleep(time.Until(next))
		}
	}()
	return d, func() { <-done }
}

// round is one account's: read, a transfer that fits (of fit, when not
// 0) and (something held) one that needs held money at the same moment,
// read again, then the verdicts.
func (d *medDebits) round(ctx context.Context, r *caseRun, account string, fit int64) {
	before, ok := d.read(ctx, r, account)
	if !ok || before.available() < 0 {
		return
	}
	var fitSent, needSent load.SentTransfer
	var wg sync.WaitGroup
	if fit > 0 && before.available() >= fit+10*medDebitFitCents {
		wg.Go(func() { fitSent = r.xfers.SendFrom(ctx, account, r.keys.ok, fit) })
	}
	if before.held > 0 {
		need := before.available() + max(1, before.held/2)
		wg.Go(func() { needSent = r.xfers.SendFrom(ctx, account, r.keys.ok, need) })
	}
	wg.Wait()
	after, ok := d.read(ctx, r, account)
	if !ok {
		return
	}
	if fitSent.IdempotencyKey != "" {
		d.fitVerdict(ctx, r, fitSent)
	}
	if needSent.IdempotencyKey != "" {
		d.needHeldVerdict(ctx, r, needSent, before, after)
	}
}

// fitVerdict: a transfer that fit is created, or refused (a hold made
// meanwhile may take the money) with nothing made of it.
func (d *medDebits) fitVerdict(ctx context.Context, r *caseRun, s load.SentTransfer) {
	created, refused := s.Status == http.StatusCreated, s.Status == http.StatusUnprocessableEntity && s.Code == insufficientFunds
	d.mu.Lock()
	d.fits++
	if created {
		d.fitsCreated++
	} else if refused {
		d.fitsRefused++
	}
	d.mu.Unlock()
	switch {
	case created:
	case refused:
		d.notMade(ctx, r, s)
	default:
		d.add(fmt.Sprintf("transfer %s of %d from %s: answered %d %s (0: no final answer)", s.IdempotencyKey, s.AmountCents, s.AccountID, s.Status, s.Code))
	}
}

// needHeldVerdict: a transfer that needed held money is refused
// insufficient_funds, nothing made of it. Accepted, it spent held money,
// unless money came in after the read before (credits, transfers
// refunded: every movement in of a transaction from the read's xmin on)
// or a hold ended, enough to cover it.
func (d *medDebits) needHeldVerdict(ctx context.Context, r *caseRun, s load.SentTransfer, before, after medFunds) {
	d.mu.Lock()
	d.needHeld++
	d.mu.Unlock()
	switch {
	case s.Status == http.StatusUnprocessableEntity && s.Code == insufficientFunds:
		d.mu.Lock()
		d.needHeldRefused++
		d.mu.Unlock()
		d.notMade(ctx, r, s)
	case s.Status == http.StatusCreated:
		var in int64
		if err := r.st.pool.QueryRow(ctx, `SELECT COALESCE(sum(amount_cents), 0) FROM account_movements
			WHERE account_id = $1 AND amount_cents > 0 AND xact_id >= $2::xid8`, s.AccountID, before.xmin).Scan(&in); err != nil {
			d.add(fmt.Sprintf("read the movements of %s: %v", s.AccountID, err))
			return
		}
		if in >= s.AmountCents-before.available() || after.held < before.held {
			d.mu.Lock()
			d.needHeldCovered++
			d.mu.Unlock()
			return
		}
		d.add(fmt.Sprintf("transfer %s of %d from %s accepted with %d available (balance %d, held %d), %d come in since: it spent held money",
			s.TransferID, s.AmountCents, s.AccountID, before.available(), before.balance, before.held, in))
	default:
		d.add(fmt.Sprintf("transfer %s of %d from %s, which needed held money: answered %d %s (want 422 %s; 0: no final answer)",
			s.IdempotencyKey, s.AmountCents, s.AccountID, s.Status, s.Code, insufficientFunds))
	}
}

// notMade: a refused transfer left no transfer in our books (nor a debit:
// the balances' check, check).
func (d *medDebits) notMade(ctx context.Context, r *caseRun, s load.SentTransfer) {
	var n int
	if err := r.st.pool.QueryRow(ctx, `SELECT count(*) FROM pix_transfers WHERE account_id = $1 AND idempotency_key = $2::uuid`,
		s.AccountID, s.IdempotencyKey).Scan(&n); err != nil {
		d.add(fmt.Sprintf("read the transfers of key %s: %v", s.IdempotencyKey, err))
	} else if n > 0 {
		d.add(fmt.Sprintf("transfer of key %s from %s refused %s, yet %d transfers of it in our books", s.IdempotencyKey, s.AccountID, s.Code, n))
	}
}

// check holds the reported accounts' books after the drains:
// each read to the rules once more, and each balance its opening balance
// plus its credits less its settled transfers (a refunded transfer's debit
// came back; none may be left open); then the transfers' verdicts, and
// whether the race happened at all.
func (d *medDebits) check(ctx context.Context, r *caseRun, accounts []string) (v []string, note string) {
	for _, a := range slices.Sorted(slices.Values(accounts)) {
		d.read(ctx, r, a)
		var balance, opening, credits, settled int64
		var open int
		if err := r.st.pool.QueryRow(ctx, `
			SELECT a.balance_cents, a.opening_balance_cents,
				(SELECT COALESCE(sum(c.amount_cents), 0) FROM pix_credits c WHERE c.account_id = a.id),
				(SELECT COALESCE(sum(t.amount_cents), 0) FROM pix_transfers t WHERE t.account_id = a.id AND t.status = 'settled'),
				(SELECT count(*) FROM pix_transfers t WHERE t.account_id = a.id AND t.status NOT IN ('settled', 'refunded'))
			FROM accounts a WHERE a.id = $1`, a).Scan(&balance, &opening, &credits, &settled, &open); err != nil {
			d.add(fmt.Sprintf("read account %s: %v", a, err))
			continue
		}
		if balance != opening+credits-settled || open > 0 {
			d.add(fmt.Sprintf("account %s: balance %d, opening %d + credits %d - settled transfers %d = %d, %d transfers not final",
				a, balance, opening, credits, settled, opening+credits-settled, open))
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	v = slices.Clone(d.problems)
	if d.needHeldRefused == 0 {
		v = append(v, missed("no transfer that needed held money was refused while the DICT was down"))
	}
	note = fmt.Sprintf("out of the reported accounts while it was down: %d transfers that fit (%d created, %d refused), %d that needed held money (%d refused %s, %d covered by money come in); %d reads, available >= 0, held = active holds",
		d.fits, d.fitsCreated, d.fitsRefused, d.needHeld, d.needHeldRefused, insufficientFunds, d.needHeldCovered, d.reads)
	return v, note
}
