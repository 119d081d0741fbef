package load

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/saga/reconcile"
)

// OpenAccounts opens the run's accounts, each with an opening balance.
func OpenAccounts(ctx context.Context, pool *pgxpool.Pool, runID string, n int) error {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = AccountID(runID, i)
	}
	_, err := pool.Exec(ctx, `
		INSERT INTO accounts (id, owner_name, opening_balance_cents, balance_cents)
		SELECT id, 'Load ' || id, 100000, 100000 FROM unnest($1::text[]) AS id`, ids)
	if err != nil {
		return fmt.Errorf("open load accounts: %w", err)
	}
	return nil
}

// Drain waits until no inbox row of the run is pending, and returns how long
// that took.
func Drain(ctx context.Context, pool *pgxpool.Pool, runID string, timeout time.Duration) (time.Duration, error) {
	start := time.Now()
	deadline := start.Add(timeout)
	for {
		// The newest pending row, not count(*) nor a bare EXISTS: this is the
		// load tool's own reading, charged to the credits it measures, five
		// times a second. A count reads the whole backlog (29 ms a call over
		// 35,000 rows, about 3 ms per credit on the dev server). A bare
		// EXISTS was planned as a scan in insert order, which walks every
		// row credited so far before the first pending one (9.8 ms a call
		// by a drain's end, 1.1 ms of PostgreSQL per credit). The pending index
		// read from its newest end finds a pending row at once while any
		// is left: rows are credited roughly oldest first.
		var one int
		err := pool.QueryRow(ctx, `SELECT 1 FROM inbox_messages WHERE status = 'pending' AND starts_with(end_to_end_id, $1)
			ORDER BY received_at DESC LIMIT 1`, EndToEndPrefix(runID)).Scan(&one)
		if errors.Is(err, pgx.ErrNoRows) {
			return time.Since(start), nil
		}
		if time.Now().After(deadline) {
			if err != nil {
				return time.Since(start), fmt.Errorf("drain: %w", err)
			}
			n, err := Pending(ctx, pool, runID)
			switch {
			case err != nil:
				return time.Since(start), fmt.Errorf("drain: rows still pending after %s: %w", timeout, err)
			case n == 0: // the last ones were credited between the two questions
				return time.Since(start), nil
			}
			return time.Since(start), fmt.Errorf("drain: %d rows still pending after %s", n, timeout)
		}
		select {
		case <-ctx.Done():
			return time.Since(start), ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// Invariants are the run's books, read from the database.
type Invariants struct {
	InboxRows, Credits, Pending, Failed int
	// AckedMissing: acknowledged PIX with no credit. Nothing accepted may be lost.
	AckedMissing int
	// WrongAmounts: credits whose account or amount differ from what was sent.
	WrongAmounts int
	// UnbalancedAccounts: balance <> opening + Σ credits.
	UnbalancedAccounts int
	// DoneWithoutCredit, CreditWithoutDone: I3 broken.
	DoneWithoutCredit, CreditWithoutDone int
}

// Violations lists what is wrong; empty when the books hold.
func (v Invariants) Violations() []string {
	var out []string
	add := func(n int, what string) {
		if n != 0 {
			out = append(out, fmt.Sprintf("%d %s", n, what))
		}
	}
	add(v.Pending, "inbox rows left pending")
	add(v.Failed, "inbox rows failed")
	add(v.AckedMissing, "acknowledged PIX without a credit")
	add(v.WrongAmounts, "credits with another account or amount than sent")
	add(v.UnbalancedAccounts, "accounts whose balance is not opening + credits")
	add(v.DoneWithoutCredit, "done inbox rows without a credit")
	add(v.CreditWithoutDone, "credits whose inbox row is not done")
	if v.Credits != v.InboxRows {
		out = append(out, fmt.Sprintf("%d credits for %d distinct PIX stored", v.Credits, v.InboxRows))
	}
	return out
}

// Check reads the invariants of the run: one pix_credits row per distinct
// end_to_end_id, every balance equal to its opening balance plus its
// credits, no row left pending, and every acknowledged PIX credited with
// what was sent.
func Check(ctx context.Context, pool *pgxpool.Pool, s *Session) (Invariants, error) {
	var v Invariants
	prefix, accountPrefix := EndToEndPrefix(s.RunID()), "load-"+s.RunID()+"-"
	err := pool.QueryRow(ctx, `
		SELECT
		  (SELECT count(*) FROM inbox_messages WHERE starts_with(end_to_end_id, $1)),
		  (SELECT count(*) FROM pix_credits WHERE starts_with(end_to_end_id, $1)),
		  (SELECT count(*) FROM inbox_messages WHERE starts_with(end_to_end_id, $1) AND status = 'pending'),
		  (SELECT count(*) FROM inbox_messages WHERE starts_with(end_to_end_id, $1) AND status = 'failed'),
		  (SELECT count(*) FROM inbox_messages m WHERE starts_with(m.end_to_end_id, $1) AND m.status = 'done'
		      AND NOT EXISTS (SELECT 1 FROM pix_credits c WHERE c.end_to_end_id = m.end_to_end_id)),
		  (SELECT count(*) FROM pix_credits c JOIN inbox_messages m USING (end_to_end_id)
		      WHERE starts_with(c.end_to_end_id, $1) AND m.status <> 'done')`,
		prefix).Scan(&v.InboxRows, &v.Credits, &v.Pending, &v.Failed, &v.DoneWithoutCredit, &v.CreditWithoutDone)
	if err != nil {
		return v, fmt.Errorf("check invariants: %w", err)
	}
	unbalanced, err := reconcile.NewStore(db.NewStore(pool)).UnbalancedAccounts(ctx, accountPrefix)
	if err != nil {
		return v, fmt.Errorf("check invariants: %w", err)
	}
	v.UnbalancedAccounts = len(unbalanced)
	credits, err := creditsOf(ctx, pool, prefix)
	if err != nil {
		return v, err
	}
	sent := s.Sent()
	for id := range s.AckedAt() {
		c, ok := credits[id]
		if !ok {
			v.AckedMissing++
			continue
		}
		if p := sent[id]; c.account != p.AccountID || c.amount != p.AmountCents {
			v.WrongAmounts++
		}
	}
	return v, nil
}

// CreditCount is the number of the run's PIX credited so far.
func CreditCount(ctx context.Context, pool *pgxpool.Pool, runID string) (int64, error) {
	var n int64
	err := pool.QueryRow(ctx, `SELECT count(*) FROM pix_credits WHERE starts_with(end_to_end_id, $1)`, EndToEndPrefix(runID)).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("count credits: %w", err)
	}
	return n, nil
}

type creditRow struct {
	account    string
	amount     int64
	creditedAt time.Time
}

func creditsOf(ctx context.Context, pool *pgxpool.Pool, prefix string) (map[string]creditRow, error) {
	rows, err := pool.Query(ctx, `SELECT end_to_end_id, account_id, amount_cents, credited_at FROM pix_credits WHERE starts_with(end_to_end_id, $1)`, prefix)
	if err != nil {
		return nil, fmt.Errorf("read credits: %w", err)
	}
	out := map[string]creditRow{}
	var id string
	var c creditRow
	_, err = pgx.ForEachRow(rows, []any{&id, &c.account, &c.amount, &c.creditedAt}, func() error {
		out[id] = c
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read credits: %w", err)
	}
	return out, nil
}

// CreditTimes are the run's credit-side figures.
type CreditTimes struct {
	// AckToCreditedMicros: from the first acknowledgement to the credit, per
	// PIX (a credit the clock puts before its acknowledgement counts as 1 µs).
	AckToCreditedMicros *hdrhistogram.Histogram
	// CreditsPerSecond: credits over the span from the first to the last.
	CreditsPerSecond float64
	Credits          int
}

// Times measures acknowledgement → credited latencies and the credit rate.
func Times(ctx context.Context, pool *pgxpool.Pool, s *Session) (CreditTimes, error) {
	credits, err := creditsOf(ctx, pool, EndToEndPrefix(s.RunID()))
	acked := s.AckedAt()
	if err != nil {
		return CreditTimes{}, err
	}
	out := CreditTimes{AckToCreditedMicros: hdrhistogram.New(1, 3_600_000_000, 3), Credits: len(credits)}
	var first, last time.Time
	for id, c := range credits {
		if first.IsZero() || c.creditedAt.Before(first) {
			first = c.creditedAt
		}
		if c.creditedAt.After(last) {
			last = c.creditedAt
		}
		if ack, ok := acked[id]; ok {
			_ = out.AckToCreditedMicros.RecordValue(max(c.creditedAt.Sub(ack).Microseconds(), 1))
		}
	}
	if span := last.Sub(first).Seconds(); span > 0 {
		out.CreditsPerSecond = float64(len(credits)-1) / span
	}
	return out, nil
}

// LastCreditOfAckedBefore returns when the last of the PIX acknowledged
// before t was credited (zero when there is none): with t the moment a fault
// was healed, it tells how long the service took to catch up.
func LastCreditOfAckedBefore(ctx context.Context, pool *pgxpool.Pool, s *Session, t time.Time) (time.Time, error) {
	credits, err := creditsOf(ctx, pool, EndToEndPrefix(s.RunID()))
	if err != nil {
		return time.Time{}, err
	}
	var last time.Time
	for id, ack := range s.AckedAt() {
		if c, ok := credits[id]; ok && ack.Before(t) && c.creditedAt.After(last) {
			last = c.creditedAt
		}
	}
	return last, nil
}

// Pending is the number of the run's inbox rows still pending.
func Pending(ctx context.Context, pool *pgxpool.Pool, runID string) (int64, error) {
	var n int64
	err := pool.QueryRow(ctx, `SELECT count(*) FROM inbox_messages WHERE status = 'pending' AND starts_with(end_to_end_id, $1)`,
		EndToEndPrefix(runID)).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("count pending: %w", err)
	}
	return n, nil
}

// Doubled is the number of the run's end_to_end_ids with more than one
// pix_credits row. The primary key forbids it (I1); the soak counts it all
// the same, from the rows, rather than trust the schema it tests.
func Doubled(ctx context.Context, pool *pgxpool.Pool, runID string) (int64, error) {
	var n int64
	err := pool.QueryRow(ctx, `
		SELECT count(*) FROM (
		  SELECT end_to_end_id FROM pix_credits WHERE starts_with(end_to_end_id, $1)
		  GROUP BY end_to_end_id HAVING count(*) > 1) AS doubled`, EndToEndPrefix(runID)).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("count doubled credits: %w", err)
	}
	return n, nil
}

// DatabaseSizes returns the size in bytes of the pool's own database and of
// each database of others that exists on the same server (Temporal's, when
// it persists there), by name.
func DatabaseSizes(ctx context.Context, pool *pgxpool.Pool, others []string) (map[string]int64, error) {
	rows, err := pool.Query(ctx, `
		SELECT datname, pg_database_size(datname) FROM pg_database
		WHERE datname = current_database() OR datname = ANY($1::text[])`, others)
	if err != nil {
		return nil, fmt.Errorf("database sizes: %w", err)
	}
	out := map[string]int64{}
	var name string
	var size int64
	_, err = pgx.ForEachRow(rows, []any{&name, &size}, func() error {
		out[name] = size
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("database sizes: %w", err)
	}
	return out, nil
}
