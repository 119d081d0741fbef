package db

import (
	"context"
	"errors"
	"fmt"
	neturl "net/url"
	"strings"
	"time"

	"github.com/cenkalti/backoff/v5"
	"github.com/exaring/otelpgx"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	metricnoop "go.opentelemetry.io/otel/metric/noop"

	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/internal/tracing"
)

// Option changes how Open sets the pool up.
type Option func(*pgxpool.Config)

// WithTracing traces the pool's statements into p: one client span per
// statement (and per batch), named by the statement's name in its queries
// file ("query credits.Receive", and "prepare credits.Receive" the first
// time a connection runs it), a child of the span in the statement's
// context; none without one (the dispatchers' and the relay's polling, the
// waker), and nothing at all when p is off. The statement's text and its
// arguments are never recorded: the name says which statement it was, and
// arguments hold the PIX's data.
func WithTracing(p *tracing.Provider) Option {
	return func(cfg *pgxpool.Config) {
		if !p.Enabled() {
			return
		}
		cfg.ConnConfig.Tracer = otelpgx.NewTracer(
			otelpgx.WithTracerProvider(p.TracerProvider()),
			otelpgx.WithMeterProvider(metricnoop.NewMeterProvider()), // the service's metrics are Prometheus's
			otelpgx.WithSpanNameFunc(statementName),
			otelpgx.WithQuerySpanNamePrefix(),
			otelpgx.WithDisableSQLStatementInAttributes(),
			otelpgx.WithDisableAcquireTracer(), // a span per statement is enough
		)
	}
}

// idleInTransaction is how long a session of the service may sit idle in a
// transaction before PostgreSQL ends it (idleInTransactionParam), unless
// DATABASE_URL sets it.
const (
	idleInTransactionParam = "idle_in_transaction_session_timeout"
	idleInTransaction      = "5min"
)

// Open connects a pool to url. maxConns <= 0 keeps pgx's default.
func Open(ctx context.Context, url string, maxConns int32, opts ...Option) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("parse database url: %w", err)
	}
	if maxConns > 0 {
		cfg.MaxConns = maxConns
	}
	// Every session of ours is UTC, whatever the server's default.
	cfg.ConnConfig.RuntimeParams["timezone"] = "UTC"
	// A transaction of ours left open (a bug, a stuck goroutine) ends
	// after idleInTransaction, rather than holding every snapshot's xmin
	// back, which the reconciliation's checkpoint follows (docs/design.md,
	// "The reconciliation"), and vacuum with it. No transaction of the
	// service waits on anything but PostgreSQL in the middle, but for the
	// outbox relay's publish (its broker's acknowledgement, 5 s at most).
	// DATABASE_URL may say otherwise (?idle_in_transaction_session_timeout=).
	if _, ok := cfg.ConnConfig.RuntimeParams[idleInTransactionParam]; !ok {
		cfg.ConnConfig.RuntimeParams[idleInTransactionParam] = idleInTransaction
	}
	for _, opt := range opts {
		opt(cfg)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("create pool: %w", err)
	}
	return pool, nil
}

// Classify is the error contract of every Store method, and of a saga's
// own store built on this package's core: it wraps err in
// pix.ErrUnavailable when it says PostgreSQL can't be reached, is going
// away, or failed a statement that succeeds when run again (isContention:
// a deadlock, a serialization failure, a prepared statement a migration
// made stale; nothing was written), so that callers answer "retry later"
// (503) rather than "bug" (500). A refusal of package pix, a canceled context, an error already
// unavailable and a statement PostgreSQL refused otherwise are returned as
// they are. Any error that is not PostgreSQL's own answer (dial, read,
// timeout, closed pool) means the database was not reached. InTx classifies
// its errors itself; a statement run outside InTx is classified by its
// caller.
func Classify(err error) error {
	if err == nil || pix.IsRefusal(err) || errors.Is(err, pix.ErrUnavailable) || errors.Is(err, context.Canceled) {
		return err
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		// Class 08: connection exception; 57P0x: server shutting down or
		// starting; isContention: rolled back, succeeds when tried again.
		if !strings.HasPrefix(pgErr.Code, "08") && !strings.HasPrefix(pgErr.Code, "57P") && !isContention(err) {
			return err
		}
	}
	return fmt.Errorf("%w: %w", pix.ErrUnavailable, err)
}

// isContention reports whether PostgreSQL failed a statement, rolling its
// transaction back, for a cause that passes by itself: nothing was written,
// and the same transaction may simply run again. 40001 and 40P01: it
// collided with another (serialization failure, deadlock). 0A000 "cached
// plan must not change result type": a migration added a column to a table
// a statement reads whole (SELECT *, RETURNING *) after the connection
// prepared it (pgx's statement cache); pgx has dropped the statement, so it
// is prepared afresh when run again, which happens once per connection and
// statement in a rolling upgrade (docs/operations.md, "Migrations").
func isContention(err error) bool {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return false
	}
	return pgErr.Code == "40001" || pgErr.Code == "40P01" || isStalePlan(err)
}

// isStalePlan reports whether a statement failed because the connection
// prepared it before a migration changed its result columns: SQLSTATE
// 0A000 (otherwise any feature not supported) raised where PostgreSQL
// revalidates a cached plan. The routine's name is never translated; the
// message follows the server's lc_messages (a server in pt_BR says it in
// Portuguese), so it is only the fallback for a server that reports no
// routine.
func isStalePlan(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "0A000" &&
		(pgErr.Routine == staleCachedPlanRoutine || pgErr.Message == staleCachedPlan)
}

// staleCachedPlanRoutine and staleCachedPlan are the routine (plancache.c)
// and the English message of PostgreSQL's refusal of a prepared statement
// whose result columns changed since it was prepared.
const (
	staleCachedPlanRoutine = "RevalidateCachedQuery"
	staleCachedPlan        = "cached plan must not change result type"
)

// txAttempts is how many times InTx runs a transaction that failed for a
// cause that passes (isContention) before it gives up with
// pix.ErrUnavailable (503, "retry later").
const txAttempts = 3

// InTx runs fn in one transaction, committing when fn returns nil: the one
// transaction boundary of every Store method, exported so that a saga's own
// store runs its transactions alike. A transaction rolled back by a
// deadlock, a serialization failure or a stale prepared statement
// (isContention) runs again, up to txAttempts times in
// all, so fn must be safe to run again from the start: it resets what it
// returns, and whatever it does beside its statements must be idempotent
// (CreateTransfer's render is pure; RelayEvents publishes, which the broker
// deduplicates by event id). Its errors are classified (Classify): fn's
// refusals (package pix's errors) come back as fn returned them, a
// collision that outlasted the attempts and a lost connection as
// pix.ErrUnavailable.
func InTx(ctx context.Context, pool Beginner, fn func(tx pgx.Tx) error) error {
	return inTxAttempts(ctx, pool, txAttempts, fn)
}

// Beginner begins transactions: the pool (Store.Pool), or one connection
// of it (a group commit's writer's).
type Beginner interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}

func inTxAttempts(ctx context.Context, pool Beginner, attempts int, fn func(tx pgx.Tx) error) error {
	var last error
	_, err := backoff.Retry(ctx, func() (struct{}, error) {
		last = inTxRefreshed(ctx, pool, fn)
		if last != nil && !isContention(last) {
			return struct{}{}, backoff.Permanent(last)
		}
		return struct{}{}, last
	}, backoff.WithBackOff(contentionPause()), backoff.WithMaxTries(uint(attempts)), backoff.WithMaxElapsedTime(0))
	if err != nil && last != nil {
		// The collision itself, classified, even when ctx ended during a
		// pause: the caller learns why the transaction did not happen.
		return last
	}
	return err
}

// stalePlanAttempts bounds how many times in a row inTxRefreshed runs a
// transaction whose prepared statements a migration made stale: one more
// than the statements a transaction of ours runs, and then some.
const stalePlanAttempts = 16

// inTxRefreshed is inTxOnce, run again at once while it fails on a stale
// prepared statement (isStalePlan), up to stalePlanAttempts times: each
// failure made pgx drop that one statement of the connection, and a
// transaction that meets several, one per run, would otherwise spend the
// contention's txAttempts (and pauses) on them.
func inTxRefreshed(ctx context.Context, pool Beginner, fn func(tx pgx.Tx) error) error {
	err := inTxOnce(ctx, pool, fn)
	for i := 1; i < stalePlanAttempts && isStalePlan(err) && ctx.Err() == nil; i++ {
		err = inTxOnce(ctx, pool, fn)
	}
	return err
}

// contentionPause is a short, growing, jittered pause between a collided
// transaction's attempts, which lets the other side finish: about 5 ms,
// then 10 ms, up to 50 ms.
func contentionPause() *backoff.ExponentialBackOff {
	return &backoff.ExponentialBackOff{InitialInterval: 5 * time.Millisecond, RandomizationFactor: 0.5, Multiplier: 2, MaxInterval: 50 * time.Millisecond}
}

func inTxOnce(ctx context.Context, pool Beginner, fn func(tx pgx.Tx) error) error {
	tx, err := pool.Begin(ctx)
	if err != nil {
		return Classify(fmt.Errorf("begin: %w", err))
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // after commit this is a no-op
	if err := fn(tx); err != nil {
		return Classify(err)
	}
	if err := tx.Commit(ctx); err != nil {
		return Classify(fmt.Errorf("commit: %w", err))
	}
	return nil
}

// SchemaURL returns url with its search_path set to schema, so that every
// connection of a pool opened on it works in that schema.
func SchemaURL(url, schema string) (string, error) {
	u, err := neturl.Parse(url)
	if err != nil {
		return "", fmt.Errorf("parse database url: %w", err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String(), nil
}
