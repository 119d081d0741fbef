package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/internal/psp"
	"github.com/pixbank/pix/internal/tooling/pspsim"
)

// roundTripFunc is an http.RoundTripper of a function.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// TestTokenCaseCountsOnlyWhatNoTokenCouldAuthorise runs case 21's fault,
// tokenEndpointDown, against the simulator with OAuth, and the PSP client
// as the worker uses it. The case once failed with "1 transfers created
// at the PSP while no token could be had": the simulator ends the outage
// on its own tokenDown after it took the endpoint down, before the case's
// DELETE is sent; a transfer sent with a token issued in between was made
// before the DELETE's answer, which the case took for the heal. Here the
// DELETE is held back (as a busy machine's scheduler holds a process) while
// a token is fetched and a transfer sent: the case must not count it. A
// client with a token fetched just before the outage sends transfers all
// through it: what the PSP made of them falls outside the window (before:
// its token's last use; after: the heal), and some failed for want of a
// token; the window is not empty, and whatever the PSP makes in it is
// counted.
func TestTokenCaseCountsOnlyWhatNoTokenCouldAuthorise(t *testing.T) {
	if testing.Short() {
		t.Skip("the token outage lasts 12 s")
	}
	const clientID, secret = "pix-bank", "s3cret"
	sim := pspsim.New(pspsim.Options{OAuth: &pspsim.OAuthOptions{Clients: map[string]string{clientID: secret}, TokenLifetime: pspTokenLifetime}})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- sim.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		<-served
	})
	base := "http://" + ln.Addr().String()
	newClient := func() *psp.HTTPClient {
		c, err := psp.New(psp.Config{BaseURL: base, Timeout: 3 * time.Second, TokenURL: base + pspsim.TokenPath,
			ClientID: clientID, ClientSecret: secret})
		require.NoError(t, err)
		return c
	}
	var mu sync.Mutex
	n := 0
	submit := func(c *psp.HTTPClient) (string, error) {
		mu.Lock()
		n++
		e2e := fmt.Sprintf("E12345678202612061200%011d", n)
		mu.Unlock()
		_, err := c.Submit(t.Context(), psp.Transfer{EndToEndID: e2e, AccountID: "acc-1", AmountCents: 100, PixKey: "k@test"})
		return e2e, err
	}

	// The DELETE that ends the outage waits until a token was fetched
	// (the simulator ended the outage already) and a transfer sent.
	var afterHeal string
	held := roundTripFunc(func(req *http.Request) (*http.Response, error) {
		if req.Method == http.MethodDelete && req.URL.Path == "/sim/token-endpoint" {
			e2e, err := submit(newClient())
			if err != nil {
				return nil, fmt.Errorf("a transfer sent once the simulator ended the outage: %w", err)
			}
			afterHeal = e2e
		}
		return http.DefaultTransport.RoundTrip(req)
	})
	p := &pspServer{sim: sim, url: base, apiURL: base, client: &http.Client{Timeout: 10 * time.Second, Transport: held}}
	r := &caseRun{st: &stack{psp: p, worker: &process{name: "worker", logDir: t.TempDir()}}, s: settings{tokenDown: 12 * time.Second},
		facts: map[string]int{}}

	// A client with a token fetched before the outage sends a transfer
	// every 100 ms through it (each waits for a token, up to its timeout,
	// when it has none).
	early := newClient()
	_, err = submit(early)
	require.NoError(t, err)
	stop := make(chan struct{})
	var sent, refused int
	sending := make(chan struct{})
	go func() {
		defer close(sending)
		for {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			_, err := submit(early)
			var tokenErr *psp.TokenError
			switch {
			case err == nil:
				sent++
			case errors.As(err, &tokenErr):
				refused++
			default:
				t.Errorf("a transfer with the early token: %v", err)
			}
		}
	}()
	_, _, err = tokenEndpointDown(t.Context(), r)
	close(stop)
	<-sending
	require.NoError(t, err)

	require.NotEmpty(t, afterHeal)
	made, _, err := p.transfers(t.Context())
	require.NoError(t, err)
	require.Contains(t, made, afterHeal)
	require.False(t, r.withoutToken(made[afterHeal].CreatedAt),
		"a transfer sent with a token the simulator issued after it ended the outage (%s) counted in the window without a token (%s to %s)",
		made[afterHeal].CreatedAt.Format(time.StampMilli), r.noTokenFrom.Format(time.StampMilli), r.noTokenTo.Format(time.StampMilli))
	for e2e, v := range made {
		require.False(t, r.withoutToken(v.CreatedAt), "transfer %s made at %s, in the window without a token (%s to %s)",
			e2e, v.CreatedAt.Format(time.StampMilli), r.noTokenFrom.Format(time.StampMilli), r.noTokenTo.Format(time.StampMilli))
	}
	require.Positive(t, sent, "no transfer sent with the early token")
	require.Positive(t, refused, "no transfer failed for want of a token: the fault did not bite")
	// The window is what the outage leaves after the last early token's
	// use (10 s), and what the PSP makes in it is counted.
	require.Greater(t, r.noTokenTo.Sub(r.noTokenFrom), time.Second)
	require.True(t, r.withoutToken(r.noTokenFrom))
	require.True(t, r.withoutToken(r.noTokenTo.Add(-time.Millisecond)))
}

// TestSecretCaseCountsOnlyWhatTheWrongSecretCouldNotAuthorise runs case
// 23's fault, wrongClientSecret, against the simulator with OAuth and the
// PSP client as the worker uses it, its secret in a file it reads at each
// token request. The case took the moment after it replaced the secret
// file for the end of the window without a token: between the rename and
// that moment (a busy machine's scheduler holds a process as long as it
// likes) the worker's next token request reads the right secret, and the
// transfer its token authorises is made, and counted as made without a
// token. Here that happens in every run: the rename is followed at once
// by a token fetched with the file's secret and a transfer sent, before
// the case reads the clock again; the case must not count it. A client
// sending all through the rotation has its calls refused while the secret
// is wrong, none of what the PSP made of them falls in the window, and the
// window is not empty.
func TestSecretCaseCountsOnlyWhatTheWrongSecretCouldNotAuthorise(t *testing.T) {
	if testing.Short() {
		t.Skip("the secret is wrong for 6 s")
	}
	const clientID, secret = "pix-bank", "s3cret"
	dir := t.TempDir()
	secretFile := filepath.Join(dir, "client-secret")
	require.NoError(t, os.WriteFile(secretFile, []byte(secret+"\n"), 0o600))
	sim := pspsim.New(pspsim.Options{OAuth: &pspsim.OAuthOptions{Clients: map[string]string{clientID: secret}, TokenLifetime: pspTokenLifetime}})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- sim.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		<-served
	})
	metrics := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	}))
	t.Cleanup(metrics.Close)
	base := "http://" + ln.Addr().String()
	newClient := func() *psp.HTTPClient {
		c, err := psp.New(psp.Config{BaseURL: base, Timeout: 3 * time.Second, TokenURL: base + pspsim.TokenPath,
			ClientID: clientID, ClientSecretFile: secretFile})
		require.NoError(t, err)
		return c
	}
	var mu sync.Mutex
	n := 0
	submit := func(c *psp.HTTPClient) (string, error) {
		mu.Lock()
		n++
		e2e := fmt.Sprintf("E12345678202612061300%011d", n)
		mu.Unlock()
		_, err := c.Submit(t.Context(), psp.Transfer{EndToEndID: e2e, AccountID: "acc-1", AmountCents: 100, PixKey: "k@test"})
		return e2e, err
	}

	// The rename, and at once what the worker may do before the case goes
	// on: a token fetched with the file's secret, and a transfer sent.
	var afterRename string
	replace := replaceFile
	t.Cleanup(func() { replaceFile = replace })
	replaceFile = func(from, to string) error {
		if err := replace(from, to); err != nil {
			return err
		}
		e2e, err := submit(newClient())
		if err != nil {
			return fmt.Errorf("a transfer sent once the right secret was in the file: %w", err)
		}
		afterRename = e2e
		return nil
	}
	p := &pspServer{sim: sim, url: base, apiURL: base, client: &http.Client{Timeout: 10 * time.Second},
		cred: &pspCredentials{clientID: clientID, secretFile: secretFile}}
	r := &caseRun{st: &stack{psp: p, worker: &process{name: "worker", logDir: dir}, workerMetricsURL: metrics.URL},
		s: settings{secretWrongFor: 6 * time.Second}, facts: map[string]int{}}

	// A client with a token fetched before the rotation sends a transfer
	// every 100 ms through it, and after.
	early := newClient()
	_, err = submit(early)
	require.NoError(t, err)
	stop := make(chan struct{})
	var sent, refused int
	sending := make(chan struct{})
	go func() {
		defer close(sending)
		for {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			_, err := submit(early)
			var tokenErr *psp.TokenError
			switch {
			case err == nil:
				sent++
			case errors.As(err, &tokenErr) && !tokenErr.Transient:
				refused++
			default:
				t.Errorf("a transfer through the rotation: %v", err)
			}
		}
	}()
	_, _, err = wrongClientSecret(t.Context(), r)
	// A second more with the right secret in the file: its calls go
	// through again.
	time.Sleep(time.Second)
	close(stop)
	<-sending
	require.NoError(t, err)

	require.NotEmpty(t, afterRename)
	made, _, err := p.transfers(t.Context())
	require.NoError(t, err)
	require.Contains(t, made, afterRename)
	require.False(t, r.withoutToken(made[afterRename].CreatedAt),
		"a transfer sent with a token the right secret got, once it was in the file (%s), counted in the window without a token (%s to %s)",
		made[afterRename].CreatedAt.Format(time.StampMilli), r.noTokenFrom.Format(time.StampMilli), r.noTokenTo.Format(time.StampMilli))
	for e2e, v := range made {
		require.False(t, r.withoutToken(v.CreatedAt), "transfer %s made at %s, in the window without a token (%s to %s)",
			e2e, v.CreatedAt.Format(time.StampMilli), r.noTokenFrom.Format(time.StampMilli), r.noTokenTo.Format(time.StampMilli))
	}
	require.Positive(t, sent, "no transfer sent once the right secret was in the file")
	require.Positive(t, refused, "no transfer refused for the wrong secret: the fault did not bite")
	// The window is what the wrong secret leaves after the calls in
	// flight ended (4 s), and what the PSP makes in it is counted.
	require.Greater(t, r.noTokenTo.Sub(r.noTokenFrom), time.Second)
	require.True(t, r.withoutToken(r.noTokenFrom))
	require.True(t, r.withoutToken(r.noTokenTo.Add(-time.Millisecond)))
}

// TestTokenCaseKeepsTheOutageUntilCallsMeetIt runs case 21's fault,
// tokenEndpointDown, with a worker whose PSP calls come late, as on a
// loaded machine (the case failed "the fault did not happen" when none
// came within the outage): the endpoint must stay down past s.tokenDown
// until a transfer call and a devolução call failed for want of a token
// inside the window without one (the worker's log says so), then come
// back at once; a call that failed before that window does not end it,
// nor do transfer calls alone (a product that refunds a transfer on a
// token failure passed the case when only devoluções met the outage).
// The window ends when the DELETE is sent: a transfer made once the
// DELETE brought the endpoint back, before its answer, is not counted.
// With no call at all, the outage ends at s.tokenDown + s.tokenHitWait
// and the case fails: the fault did not happen.
func TestTokenCaseKeepsTheOutageUntilCallsMeetIt(t *testing.T) {
	if testing.Short() {
		t.Skip("the token outage lasts 12 s")
	}
	const clientID, secret = "pix-bank", "s3cret"
	setup := func(t *testing.T, tokenDown, hitWait time.Duration) (r *caseRun, newClient func() *psp.HTTPClient, submit func(*psp.HTTPClient) (string, error), logCall func(error), afterHeal *string) {
		sim := pspsim.New(pspsim.Options{OAuth: &pspsim.OAuthOptions{Clients: map[string]string{clientID: secret}, TokenLifetime: pspTokenLifetime}})
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		served := make(chan error, 1)
		go func() { served <- sim.Serve(ctx, ln) }()
		t.Cleanup(func() {
			cancel()
			<-served
		})
		base := "http://" + ln.Addr().String()
		newClient = func() *psp.HTTPClient {
			c, err := psp.New(psp.Config{BaseURL: base, Timeout: 3 * time.Second, TokenURL: base + pspsim.TokenPath,
				ClientID: clientID, ClientSecret: secret})
			require.NoError(t, err)
			return c
		}
		var mu sync.Mutex
		n := 0
		submit = func(c *psp.HTTPClient) (string, error) {
			mu.Lock()
			n++
			e2e := fmt.Sprintf("E12345678202612061400%011d", n)
			mu.Unlock()
			_, err := c.Submit(t.Context(), psp.Transfer{EndToEndID: e2e, AccountID: "acc-1", AmountCents: 100, PixKey: "k@test"})
			return e2e, err
		}
		// The worker's log: a failed call's error, as its activity logs it.
		dir := t.TempDir()
		f, err := os.OpenFile(filepath.Join(dir, "worker.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		require.NoError(t, err)
		t.Cleanup(func() { f.Close() })
		log := slog.New(slog.NewJSONHandler(f, nil))
		logCall = func(err error) { log.Error("Activity error.", "ActivityType", "SubmitTransfer", "Error", err.Error()) }
		// Once the DELETE brought the endpoint back, before its answer, a
		// token is fetched and a transfer sent.
		afterHeal = new(string)
		held := roundTripFunc(func(req *http.Request) (*http.Response, error) {
			res, err := http.DefaultTransport.RoundTrip(req)
			if err == nil && req.Method == http.MethodDelete && req.URL.Path == "/sim/token-endpoint" {
				e2e, err := submit(newClient())
				if err != nil {
					res.Body.Close()
					return nil, fmt.Errorf("a transfer sent once the DELETE brought the endpoint back: %w", err)
				}
				*afterHeal = e2e
			}
			return res, err
		})
		p := &pspServer{sim: sim, url: base, apiURL: base, client: &http.Client{Timeout: 10 * time.Second, Transport: held}}
		r = &caseRun{st: &stack{psp: p, worker: &process{name: "worker", logDir: dir}},
			s: settings{tokenDown: tokenDown, tokenHitWait: hitWait}, facts: map[string]int{}}
		return r, newClient, submit, logCall, afterHeal
	}

	t.Run("late calls", func(t *testing.T) {
		r, newClient, submit, logCall, afterHeal := setup(t, 2*time.Second, 30*time.Second)
		// A transfer call half a second in, before the window without a
		// token (none of the endpoint's tokens yet: it fails at once); one
		// 2 s into that window (12 s in), long after s.tokenDown; a
		// devolução call 1.5 s later.
		began := time.Now()
		type call struct {
			at  time.Time
			err error
		}
		calls := make(chan call, 3)
		go func() {
			for i, at := range []time.Duration{500 * time.Millisecond, pspTokenUsable + 6*time.Second, pspTokenUsable + 7500*time.Millisecond} {
				time.Sleep(time.Until(began.Add(at)))
				c := call{at: time.Now()}
				if i < 2 {
					_, c.err = submit(newClient())
				} else {
					_, c.err = newClient().RequestRefund(t.Context(), psp.RefundRequest{EndToEndID: "E1234567820261206140000000000099",
						ID: "d1", AmountCents: 100})
				}
				if c.err != nil {
					logCall(c.err)
				}
				calls <- c
			}
		}()
		healed, note, err := tokenEndpointDown(t.Context(), r)
		require.NoError(t, err)
		early, late, refund := <-calls, <-calls, <-calls
		var tokenErr *psp.TokenError
		require.ErrorAs(t, early.err, &tokenErr)
		require.ErrorAs(t, late.err, &tokenErr,
			"a transfer call %s into an outage of %s that no call had met inside its window went through: the endpoint was not kept down",
			late.at.Sub(began).Round(time.Millisecond), r.s.tokenDown)
		require.True(t, tokenErr.Transient)
		require.ErrorAs(t, refund.err, &tokenErr,
			"a devolução call %s into the outage, after a transfer call met it but none of its own, went through: the endpoint was not kept down",
			refund.at.Sub(began).Round(time.Millisecond))
		require.True(t, tokenErr.Transient)
		require.Equal(t, 2, r.facts[tokenCalls[0].fact])
		require.Equal(t, 1, r.facts[tokenCalls[1].fact])
		require.Less(t, healed.Sub(refund.at), 5*time.Second, "the outage went on after calls of both met it")
		require.Contains(t, note, "the endpoint kept down")
		require.Contains(t, note, "until calls of both met it")
		// The late calls are in the window without a token, which ends
		// when the DELETE was sent: the transfer made once it brought the
		// endpoint back is not counted.
		require.True(t, r.withoutToken(late.at))
		require.True(t, r.withoutToken(refund.at))
		require.NotEmpty(t, *afterHeal)
		made, _, err := r.st.psp.transfers(t.Context())
		require.NoError(t, err)
		require.Contains(t, made, *afterHeal)
		for e2e, v := range made {
			require.False(t, r.withoutToken(v.CreatedAt), "transfer %s made at %s, in the window without a token (%s to %s)",
				e2e, v.CreatedAt.Format(time.StampMilli), r.noTokenFrom.Format(time.StampMilli), r.noTokenTo.Format(time.StampMilli))
		}
	})

	t.Run("no call", func(t *testing.T) {
		r, _, _, _, _ := setup(t, time.Second, 2*time.Second)
		began := time.Now()
		healed, note, err := tokenEndpointDown(t.Context(), r)
		require.NoError(t, err)
		took := healed.Sub(began)
		require.GreaterOrEqual(t, took, 3*time.Second, "the outage ended before s.tokenDown + s.tokenHitWait")
		require.Less(t, took, 8*time.Second, "the outage went on past s.tokenDown + s.tokenHitWait")
		require.Contains(t, note, "its bound: calls of both had not met it")
		require.Equal(t, []string{"the fault did not happen: no " + tokenCalls[0].fact, "the fault did not happen: no " + tokenCalls[1].fact},
			needFacts(tokenCalls[0].fact, tokenCalls[1].fact)(t.Context(), r, nil))
	})
}

// TestSecretCaseKeepsTheWrongSecretUntilCallsMeetIt runs case 23's fault,
// wrongClientSecret, with a worker whose PSP calls come late, as on a
// loaded machine (as case 21's, TestTokenCaseKeepsTheOutageUntilCallsMeetIt):
// the secret file must hold the wrong secret past s.secretWrongFor until
// a transfer call and a devolução call were refused a token inside the
// window without one (the worker's log says so), then get the right one
// at once; a call refused before that window does not end it, nor do
// transfer calls alone. The window still ends at the clock read before
// the rename. With no call at all, the secret is right again at
// s.secretWrongFor + s.tokenHitWait and the case fails: the fault did not
// happen, for either kind.
func TestSecretCaseKeepsTheWrongSecretUntilCallsMeetIt(t *testing.T) {
	if testing.Short() {
		t.Skip("the secret is wrong for 7.5 s")
	}
	const clientID, secret = "pix-bank", "s3cret"
	setup := func(t *testing.T, wrongFor, hitWait time.Duration) (r *caseRun, newClient func() *psp.HTTPClient, logCall func(error)) {
		dir := t.TempDir()
		secretFile := filepath.Join(dir, "client-secret")
		require.NoError(t, os.WriteFile(secretFile, []byte(secret+"\n"), 0o600))
		sim := pspsim.New(pspsim.Options{OAuth: &pspsim.OAuthOptions{Clients: map[string]string{clientID: secret}, TokenLifetime: pspTokenLifetime}})
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		served := make(chan error, 1)
		go func() { served <- sim.Serve(ctx, ln) }()
		t.Cleanup(func() {
			cancel()
			<-served
		})
		metrics := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		}))
		t.Cleanup(metrics.Close)
		base := "http://" + ln.Addr().String()
		newClient = func() *psp.HTTPClient {
			c, err := psp.New(psp.Config{BaseURL: base, Timeout: 3 * time.Second, TokenURL: base + pspsim.TokenPath,
				ClientID: clientID, ClientSecretFile: secretFile})
			require.NoError(t, err)
			return c
		}
		// The worker's log: a failed call's error, as its activity logs it.
		f, err := os.OpenFile(filepath.Join(dir, "worker.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		require.NoError(t, err)
		t.Cleanup(func() { f.Close() })
		log := slog.New(slog.NewJSONHandler(f, nil))
		logCall = func(err error) { log.Error("Activity error.", "ActivityType", "SubmitTransfer", "Error", err.Error()) }
		p := &pspServer{sim: sim, url: base, apiURL: base, client: &http.Client{Timeout: 10 * time.Second},
			cred: &pspCredentials{clientID: clientID, secretFile: secretFile}}
		r = &caseRun{st: &stack{psp: p, worker: &process{name: "worker", logDir: dir}, workerMetricsURL: metrics.URL},
			s: settings{secretWrongFor: wrongFor, tokenHitWait: hitWait}, facts: map[string]int{}}
		return r, newClient, logCall
	}

	t.Run("late calls", func(t *testing.T) {
		r, newClient, logCall := setup(t, 2*time.Second, 30*time.Second)
		// A transfer call half a second in, before the window without a
		// token (it begins 4 s in); one 6 s in, long after
		// s.secretWrongFor; a devolução call 1.5 s later.
		began := time.Now()
		type call struct {
			at  time.Time
			err error
		}
		calls := make(chan call, 3)
		go func() {
			for i, at := range []time.Duration{500 * time.Millisecond, 6 * time.Second, 7500 * time.Millisecond} {
				time.Sleep(time.Until(began.Add(at)))
				c := call{at: time.Now()}
				if i < 2 {
					_, c.err = newClient().Submit(t.Context(), psp.Transfer{EndToEndID: fmt.Sprintf("E12345678202612061500%011d", i),
						AccountID: "acc-1", AmountCents: 100, PixKey: "k@test"})
				} else {
					_, c.err = newClient().RequestRefund(t.Context(), psp.RefundRequest{EndToEndID: "E1234567820261206150000000000099",
						ID: "d1", AmountCents: 100})
				}
				if c.err != nil {
					logCall(c.err)
				}
				calls <- c
			}
		}()
		healed, note, err := wrongClientSecret(t.Context(), r)
		require.NoError(t, err)
		early, late, refund := <-calls, <-calls, <-calls
		var tokenErr *psp.TokenError
		require.ErrorAs(t, early.err, &tokenErr)
		require.ErrorAs(t, late.err, &tokenErr,
			"a transfer call %s after a rotation of %s that no call had met inside its window went through: the secret was not kept wrong",
			late.at.Sub(began).Round(time.Millisecond), r.s.secretWrongFor)
		require.False(t, tokenErr.Transient)
		require.ErrorAs(t, refund.err, &tokenErr,
			"a devolução call %s after the rotation, after a transfer call met it but none of its own, went through: the secret was not kept wrong",
			refund.at.Sub(began).Round(time.Millisecond))
		require.False(t, tokenErr.Transient)
		require.Equal(t, 2, r.facts[secretCalls[0].fact])
		require.Equal(t, 1, r.facts[secretCalls[1].fact])
		require.Less(t, healed.Sub(refund.at), 5*time.Second, "the secret stayed wrong after calls of both met it")
		require.Contains(t, note, "the secret kept wrong")
		require.Contains(t, note, "until calls of both met it")
		require.True(t, r.withoutToken(late.at))
		require.True(t, r.withoutToken(refund.at))
		// The right secret is in the file: a call goes through.
		_, err = newClient().Submit(t.Context(), psp.Transfer{EndToEndID: "E1234567820261206150000000000098",
			AccountID: "acc-1", AmountCents: 100, PixKey: "k@test"})
		require.NoError(t, err)
	})

	t.Run("no call", func(t *testing.T) {
		r, _, _ := setup(t, time.Second, 2*time.Second)
		began := time.Now()
		healed, note, err := wrongClientSecret(t.Context(), r)
		require.NoError(t, err)
		took := healed.Sub(began)
		require.GreaterOrEqual(t, took, 3*time.Second, "the secret was right again before s.secretWrongFor + s.tokenHitWait")
		require.Less(t, took, 8*time.Second, "the secret stayed wrong past s.secretWrongFor + s.tokenHitWait")
		require.Contains(t, note, "its bound: calls of both had not met it")
		require.Equal(t, []string{"the fault did not happen: no " + secretCalls[0].fact, "the fault did not happen: no " + secretCalls[1].fact},
			needFacts(secretCalls.facts()...)(t.Context(), r, nil))
	})
}
