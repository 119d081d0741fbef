package db

import (
	"context"
	"io/fs"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/pixbank/pix/internal/pix"
)

// InTxForTest runs fn as the store's transactions run (Store.InTx), with
// attempts tries on a deadlock or serialization failure.
func InTxForTest(ctx context.Context, s *Store, attempts int, fn func(tx pgx.Tx) error) error {
	return s.inTx(ctx, attempts, fn)
}

// NotingFills is tx, begun and ended by a test by hand, as a transaction of
// Store.InTx: the holds filled in it are noted (and told nobody).
func NotingFills(tx pgx.Tx) pgx.Tx { return storeTx{Tx: tx, after: &afterCommit{}} }

// PendingWakes empties and returns the channels the store's commits asked
// to wake since the last call (its waker not running).
func PendingWakes(s *Store) []string { return s.waker.take() }

// MigrateFS is Migrate with the migrations of fsys (files at its root)
// instead of the embedded ones.
func MigrateFS(ctx context.Context, pool *pgxpool.Pool, fsys fs.FS) ([]string, error) {
	return migrate(ctx, pool, fsys, migrationLockWait)
}

// MigrateWithin is Migrate waiting at most wait for the migration lock.
func MigrateWithin(ctx context.Context, pool *pgxpool.Pool, wait time.Duration) ([]string, error) {
	return migrate(ctx, pool, embeddedMigrations(), wait)
}

// MigrationStatusFS is MigrationStatus for a build whose migrations are
// those of fsys.
func MigrationStatusFS(ctx context.Context, pool *pgxpool.Pool, fsys fs.FS) (MigrationReport, error) {
	return migrationStatus(ctx, pool, fsys)
}

// MigrationsIn lists the migrations of fsys as Migrate numbers them.
func MigrationsIn(fsys fs.FS) ([]Migration, error) { return migrationsIn(fsys) }

// WithoutAnnotations is a migration file less its goose annotations: the
// SQL the earlier runner ran.
func WithoutAnnotations(file string) string { return withoutAnnotations(file) }

// OldestPendingAgeSQL is the statement of Store.OldestPendingAge.
func OldestPendingAgeSQL() string { return creditSQL.OldestPendingAge }

// ReceiveCallForTest is one request's deliveries in a group (batch: an API
// Pix request), and its answer once ReceiveGroupForTest wrote the group.
type ReceiveCallForTest struct {
	Notifications []pix.Notification
	Batch         bool
	Receipts      []pix.Receipt
	Err           error
}

// ReceiveGroupForTest writes calls as the group commit writes a group it
// gathered (on a writer's connection), and the calls marked alone as their
// callers write them.
func ReceiveGroupForTest(ctx context.Context, s *Store, calls []*ReceiveCallForTest) {
	inner := make([]*receiveCall, len(calls))
	for i, c := range calls {
		inner[i] = &receiveCall{notifications: c.Notifications, batch: c.Batch}
	}
	r := &Receiver{store: s, conns: make([]*pgxpool.Conn, 1)}
	r.write(ctx, 0, inner)
	r.dropConn(0)
	for i, c := range inner {
		if c.alone {
			if c.batch {
				c.receipts, c.err = s.ReceiveBatch(ctx, c.notifications)
			} else {
				var rec pix.Receipt
				rec, c.err = s.Receive(ctx, c.notifications[0])
				c.receipts = []pix.Receipt{rec}
			}
		}
		calls[i].Receipts, calls[i].Err = c.receipts, c.err
	}
}

// ReceiverQueued is how many deliveries wait for r's writers.
func ReceiverQueued(r *Receiver) int { return r.group.Queued() }

// FillSQL is the holds' Fill statement, as FillHolds runs it.
func FillSQL() string { return holdSQL.Fill }
