package db

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/pixbank/pix/internal/pix"
)

// failingBeginner fails every Begin with err, counting them; onBegin runs
// first.
type failingBeginner struct {
	err     error
	begins  int
	onBegin func()
}

func (b *failingBeginner) Begin(context.Context) (pgx.Tx, error) {
	b.begins++
	if b.onBegin != nil {
		b.onBegin()
	}
	return nil, b.err
}

func TestInTxRetriesOnlyContention(t *testing.T) {
	t.Parallel()
	noop := func(pgx.Tx) error { return nil }

	deadlock := &failingBeginner{err: &pgconn.PgError{Code: "40P01"}}
	err := inTxAttempts(context.Background(), deadlock, 3, noop)
	if deadlock.begins != 3 || !errors.Is(err, pix.ErrUnavailable) || !isContention(err) {
		t.Errorf("a deadlock every time: %d attempts, %v; want 3 attempts and the deadlock as pix.ErrUnavailable", deadlock.begins, err)
	}

	// 0A000 is also any feature not supported: only the stale prepared
	// statement runs again.
	unsupported := &failingBeginner{err: &pgconn.PgError{Code: "0A000", Message: "cannot lock rows in materialized view"}}
	err = inTxAttempts(context.Background(), unsupported, 3, noop)
	if unsupported.begins != 1 || errors.Is(err, pix.ErrUnavailable) {
		t.Errorf("a feature not supported: %d attempts, %v; want 1 attempt and the error itself", unsupported.begins, err)
	}

	// The stale prepared statement as a server in pt_BR reports it: the
	// message translated, the routine not (review r26 LOW-1).
	translated := &failingBeginner{err: &pgconn.PgError{Code: "0A000", Routine: "RevalidateCachedQuery",
		Message: "plano em cache não deve mudar tipo resultante"}}
	err = inTxAttempts(context.Background(), translated, 3, noop)
	if translated.begins < 2 || !errors.Is(err, pix.ErrUnavailable) {
		t.Errorf("a stale prepared statement, its message translated: %d attempts, %v; want it run again, then pix.ErrUnavailable", translated.begins, err)
	}

	unique := &failingBeginner{err: &pgconn.PgError{Code: "23505"}}
	err = inTxAttempts(context.Background(), unique, 3, noop)
	var pgErr *pgconn.PgError
	if unique.begins != 1 || !errors.As(err, &pgErr) || pgErr.Code != "23505" {
		t.Errorf("a unique violation: %d attempts, %v; want 1 attempt and the error itself", unique.begins, err)
	}
}

// A request that ends while its transaction waits to run again learns of
// the collision (503, pix.ErrUnavailable), not of its own context.
func TestInTxEndedDuringThePauseReturnsTheCollision(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b := &failingBeginner{err: &pgconn.PgError{Code: "40001"}, onBegin: cancel}
	err := inTxAttempts(ctx, b, 3, func(pgx.Tx) error { return nil })
	if b.begins != 1 || !errors.Is(err, pix.ErrUnavailable) || errors.Is(err, context.Canceled) {
		t.Errorf("ctx ended after a serialization failure: %d attempts, %v; want 1 and the failure as pix.ErrUnavailable", b.begins, err)
	}
}
