package dbtest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// fakeCopier is a copier whose statements are fakes: create fails for the
// names in failing, and each create is sent on created.
func fakeCopier(failing map[int]bool) (c *copier, created chan string) {
	c = newCopier("template", randomHex(8), nil)
	created = make(chan string, 16)
	n := 0
	c.create = func(_ context.Context, name string) error {
		n++
		defer func() { created <- name }()
		if failing[n] {
			return errors.New("too many connections")
		}
		return nil
	}
	c.drop = func(context.Context, string) error { return nil }
	c.sweep = func(context.Context) error { return nil }
	return c, created
}

// ask asks c for a copy, as newCopy does.
func (c *copier) ask() spare {
	reply := make(chan spare, 1)
	c.want <- reply
	return <-reply
}

// A spare whose copy failed is never handed to a test: the test that asks
// gets a copy made then.
func TestFailedSpareIsMadeAgainWhenAsked(t *testing.T) {
	c, created := fakeCopier(map[int]bool{3: true}) // the spare made ahead
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go c.run(ctx)
	for range 2 {
		require.NoError(t, c.ask().err)
		<-created
	}
	select {
	case <-created: // the spare, failed
	case <-time.After(10 * time.Second):
		t.Fatal("no spare made ahead")
	}
	s := c.ask()
	require.NoError(t, s.err, "the failed spare's error handed to a later test")
	require.Equal(t, <-created, s.name)
}

// A process whose session holding its token's lock ended makes no more
// copies (another process would sweep them, and the ones made before,
// under its tests): its tests fail, saying why.
func TestCopiesStopWhenTheTokensLockIsLost(t *testing.T) {
	skipInShort(t)
	ctx := context.Background()
	lock := connect(t, BaseURL())
	token, err := processToken(ctx, lock)
	require.NoError(t, err)
	c, created := fakeCopier(nil)
	c.token, c.lock = token, lock
	go c.run(context.Background())
	require.NoError(t, c.ask().err, "the lock held")
	<-created

	_, err = connect(t, BaseURL()).Exec(ctx, `SELECT pg_terminate_backend($1)`, lock.PgConn().PID())
	require.NoError(t, err)
	require.ErrorContains(t, c.ask().err, "token's lock ended", "a copy made with the lock lost")
}

// The token's lock not taken is an error, not a token nobody holds.
func TestProcessTokenFailsUnlocked(t *testing.T) {
	skipInShort(t)
	ctx := context.Background()
	lock := connect(t, BaseURL())
	require.NoError(t, lock.Close(ctx))
	_, err := processToken(ctx, lock)
	require.Error(t, err)
}

// A drop made behind that fails is kept for the next test to report, not
// lost: it used to fail the test whose copy it was.
func TestFailedDropBehindIsReported(t *testing.T) {
	c, _ := fakeCopier(nil)
	c.drop = func(context.Context, string) error {
		return errors.New("database is being used by prepared transactions")
	}
	go c.run(context.Background())
	require.NoError(t, c.dropLater(context.Background(), dropping{name: "pix_t_x", test: "TestLeaky"}))
	var err error
	require.Eventually(t, func() bool { err = c.takeFailed(); return err != nil }, 10*time.Second, 10*time.Millisecond, "the failed drop not kept")
	require.ErrorContains(t, err, "TestLeaky's database pix_t_x")
	require.NoError(t, c.takeFailed(), "reported once")
}
