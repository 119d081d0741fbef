package psp

import (
	"context"
	"errors"
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

// A token's renewal starts tokenEarlyExpiry before its expiry, or half-way
// through a shorter lifetime, and the token serves while it runs; one whose
// expires_in is 0 or less serves a short fixed lifetime; one without
// expires_in until a 401 drops it.
func TestTokenRenewal(t *testing.T) {
	for name, c := range map[string]struct {
		lifetime time.Duration
		renews   time.Duration // the token's renewal starts at
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
			if c.renews == 0 {
				clock = clock.Add(100 * 365 * 24 * time.Hour)
				require.Equal(t, "tok1", tok(), "no expires_in: kept until a 401")
				_, gen, _ := tk.token(context.Background())
				tk.drop(gen)
				require.Equal(t, "tok2", tok())
				return
			}
			clock = clock.Add(c.renews - time.Nanosecond)
			require.Equal(t, "tok1", tok())
			require.Equal(t, 1, src.issued, "no renewal before its time")
			clock = clock.Add(time.Nanosecond)
			require.Equal(t, "tok1", tok(), "the token in hand serves while its renewal runs")
			renewed(tk)
			require.Equal(t, "tok2", tok())
			require.Equal(t, "tok2", tok())
			require.Equal(t, 2, src.issued)
		})
	}
}

// renewed waits for the renewal under way, if any.
func renewed(tk *tokens) {
	tk.mu.Lock()
	f := tk.pending
	tk.mu.Unlock()
	if f != nil {
		<-f.done
	}
}

// downAfterFirst issues one token of an hour, then is down (no answer).
type downAfterFirst struct {
	mu     sync.Mutex
	clock  *time.Time
	issued int
}

func (s *downAfterFirst) Token() (*oauth2.Token, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.issued++
	if s.issued == 1 {
		return &oauth2.Token{AccessToken: "tok1", Expiry: s.clock.Add(time.Hour)}, nil
	}
	return nil, &TokenError{Transient: true, cause: errors.New("connection refused")}
}

// A renewal that fails costs no call while the token in hand is good (a
// blip of the token endpoint inside the renewal margin): the token serves,
// the renewal is asked again at most once per tokenRetryAfter, and only
// tokenExpirySafety before its expiry do calls fail for want of a token.
func TestTokenServesWhileItsRenewalFails(t *testing.T) {
	clock := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	src := &downAfterFirst{clock: &clock}
	tk := newTokens(src)
	tk.now = func() time.Time { return clock }
	tok := func() (string, error) {
		got, _, err := tk.token(context.Background())
		if err != nil {
			return "", err
		}
		return got.AccessToken, nil
	}
	got, err := tok()
	require.NoError(t, err)
	require.Equal(t, "tok1", got)

	clock = clock.Add(time.Hour - tokenEarlyExpiry + time.Second) // 29 s before tok1 expires
	for range 3 {
		got, err = tok()
		require.NoError(t, err, "tok1 is valid for 29 s more; its renewal's failure must not fail the call")
		require.Equal(t, "tok1", got)
		renewed(tk)
	}
	require.Equal(t, 2, src.issued, "a failed renewal is asked again once per tokenRetryAfter, not at each call")
	clock = clock.Add(tokenRetryAfter)
	_, err = tok()
	require.NoError(t, err)
	renewed(tk)
	require.Equal(t, 3, src.issued)

	clock = time.Date(2026, 11, 29, 13, 0, 0, 0, time.UTC).Add(-tokenExpirySafety) // tok1 is no longer sent
	_, err = tok()
	require.ErrorIs(t, err, ErrTransient, "too near its expiry, the call waits for a new token, and the endpoint is down")
	require.Equal(t, 4, src.issued)
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
