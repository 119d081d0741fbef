package db_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/stdlib"

	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/db/dbtest"
)

// A migrator that finds the lock held asks again until it is free, and
// past its wait says who kept it waiting.
func TestMigrationLockWaitsForItsHolder(t *testing.T) {
	if testing.Short() {
		t.Skip("needs PostgreSQL")
	}
	ctx := context.Background()
	pool, err := db.Open(ctx, dbtest.EmptyURL(t), 4)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	sqlDB := stdlib.OpenDBFromPool(pool)
	t.Cleanup(func() { sqlDB.Close() })
	conn := func() *sql.Conn {
		c, err := sqlDB.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	holder, waiter := conn(), conn()
	lock, unlock := db.MigrationLocker(300 * time.Millisecond)
	if err := lock(ctx, holder); err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	err = lock(ctx, waiter)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "another migrator held it for 300ms") {
		t.Fatalf("the lock held for the whole wait: %v", err)
	}
	if took := time.Since(start); took < 300*time.Millisecond || took > 2*time.Second {
		t.Errorf("gave up after %v, want about the wait (300ms)", took)
	}

	released := make(chan error, 1)
	go func() {
		time.Sleep(100 * time.Millisecond)
		released <- unlock(ctx, holder)
	}()
	patientLock, patientUnlock := db.MigrationLocker(5 * time.Second)
	if err := patientLock(ctx, waiter); err != nil {
		t.Fatalf("the lock released within the wait: %v", err)
	}
	if err := <-released; err != nil {
		t.Fatal(err)
	}
	if err := patientUnlock(ctx, waiter); err != nil {
		t.Fatal(err)
	}
}
