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
	c = newCopier("template", randomHex(8))
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
