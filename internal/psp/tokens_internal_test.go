package psp

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/oauth2"
)

// scriptedTokens issues tok1, tok2, ... each expiring as lifetimes says
// (from the clock's now; 0: no expires_in).
type scriptedTokens struct {
	mu        sync.Mutex
	clock     *time.Time
	lifetimes []time.Duration
	issued    int
}

func (s *scriptedTokens) Token() (*oauth2.Token, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.issued++
	tok := &oauth2.Token{AccessToken: fmt.Sprintf("tok%d", s.issued)}
	if l := s.lifetimes[min(s.issued, len(s.lifetimes))-1]; l != 0 {
		tok.Expiry = s.clock.Add(l)
	}
	return tok, nil
}

// A token is renewed tokenEarlyExpiry before its expiry, or half-way
// through a shorter lifetime; one whose expires_in is 0 or less serves a
// short fixed lifetime; one without expires_in until a 401 drops it.
func TestTokenRenewal(t *testing.T) {
	for name, c := range map[string]struct {
		lifetime time.Duration
		serves   time.Duration // the token is still used just before, renewed at
	}{
		"an hour":      {time.Hour, time.Hour - tokenEarlyExpiry},
		"20 s":         {20 * time.Second, 10 * time.Second},
		"already past": {-5 * time.Second, unstatedTokenLifetime / 2},
		"no expiry":    {0, 0},
	} {
		t.Run(name, func(t *testing.T) {
			clock := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
			src := &scriptedTokens{clock: &clock, lifetimes: []time.Duration{c.lifetime, time.Hour}}
			tk := newTokens(src)
			tk.now = func() time.Time { return clock }
			tok := func() string {
				t.Helper()
				got, _, err := tk.token(context.Background())
				require.NoError(t, err)
				return got.AccessToken
			}
			require.Equal(t, "tok1", tok())
			if c.serves == 0 {
				clock = clock.Add(100 * 365 * 24 * time.Hour)
				require.Equal(t, "tok1", tok(), "no expires_in: kept until a 401")
				_, gen, _ := tk.token(context.Background())
				tk.drop(gen)
				require.Equal(t, "tok2", tok())
				return
			}
			clock = clock.Add(c.serves - time.Nanosecond)
			require.Equal(t, "tok1", tok())
			clock = clock.Add(time.Nanosecond)
			require.Equal(t, "tok2", tok())
			require.Equal(t, "tok2", tok())
			require.Equal(t, 2, src.issued)
		})
	}
}

// A 401 drops only the token it got: a late drop of an older token leaves
// the current one.
func TestTokenDropOnlyItsOwn(t *testing.T) {
	clock := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	src := &scriptedTokens{clock: &clock, lifetimes: []time.Duration{time.Hour}}
	tk := newTokens(src)
	tk.now = func() time.Time { return clock }
	_, gen1, err := tk.token(context.Background())
	require.NoError(t, err)
	tk.drop(gen1)
	tok2, gen2, err := tk.token(context.Background())
	require.NoError(t, err)
	require.Equal(t, "tok2", tok2.AccessToken)
	tk.drop(gen1) // a late 401 of tok1
	again, gen, err := tk.token(context.Background())
	require.NoError(t, err)
	require.Equal(t, "tok2", again.AccessToken)
	require.Equal(t, gen2, gen)
}
