package db

import (
	"context"
	"errors"
	"fmt"
	neturl "net/url"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/pixbank/pix/internal/pix"
)

// Open connects a pool to url. maxConns <= 0 keeps pgx's default.
func Open(ctx context.Context, url string, maxConns int32) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("parse database url: %w", err)
	}
	if maxConns > 0 {
		cfg.MaxConns = maxConns
	}
	// Every session of ours is UTC, whatever the server's default.
	cfg.ConnConfig.RuntimeParams["timezone"] = "UTC"
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("create pool: %w", err)
	}
	return pool, nil
}

// classify wraps err in pix.ErrUnavailable when it says PostgreSQL can't be
// reached or is going away, so that callers answer "retry later" (503) rather
// than "bug" (500). A statement PostgreSQL refused is returned as it is. Any
// error that is not PostgreSQL's own answer (dial, read, timeout, closed pool)
// means the database was not reached.
func classify(err error) error {
	if err == nil || pix.IsRefusal(err) || errors.Is(err, pix.ErrUnavailable) || errors.Is(err, context.Canceled) {
		return err
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		// Class 08: connection exception; 57P0x: server shutting down or starting.
		if !strings.HasPrefix(pgErr.Code, "08") && !strings.HasPrefix(pgErr.Code, "57P") {
			return err
		}
	}
	return fmt.Errorf("%w: %w", pix.ErrUnavailable, err)
}

// inTx runs fn in one transaction, committing when fn returns nil.
func inTx(ctx context.Context, pool *pgxpool.Pool, fn func(tx pgx.Tx) error) error {
	tx, err := pool.Begin(ctx)
	if err != nil {
		return classify(fmt.Errorf("begin: %w", err))
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // after commit this is a no-op
	if err := fn(tx); err != nil {
		return classify(err)
	}
	if err := tx.Commit(ctx); err != nil {
		return classify(fmt.Errorf("commit: %w", err))
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
