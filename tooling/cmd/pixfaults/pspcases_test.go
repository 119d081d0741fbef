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

// tokenCase is a token case's fault as the tests run it, and the calls it
// makes fail: our client's secret in a file (inFile) for case 23's
// rotation.
type tokenCase struct {
	name   string
	inFile bool
	fault  func(context.Context, *caseRun) (time.Time, string, error)
	calls  faultCalls
}

var (
	case21 = tokenCase{name: "case 21, the token endpoint down", fault: tokenEndpointDown, calls: tokenCalls}
	case23 = tokenCase{name: "case 23, a wrong client secret", inFile: true, fault: wrongClientSecret, calls: secretCalls}
)

// tokenFixture is a token case's world: the PSP simulator with OAuth on a
// port of its own, our client's secret (in a file the PSP client reads at
// each token request when inFile, as case 23's rotation needs), the
// worker's log and metrics, and the case run with its settings.
type tokenFixture struct {
	t   *testing.T
	r   *caseRun
	psp *pspServer
	cfg psp.Config
	// logCall logs a failed call's error as the worker's activity does.
	logCall func(error)
	mu      sync.Mutex
	n       int
}

func newTokenFixture(t *testing.T, inFile bool, s settings) *tokenFixture {
	t.Helper()
	const clientID, secret = "pix-bank", "s3cret"
	dir := t.TempDir()
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
	f := &tokenFixture{t: t, cfg: psp.Config{BaseURL: base, Timeout: 3 * time.Second, TokenURL: base + pspsim.TokenPath,
		ClientID: clientID, ClientSecret: secret}}
	var cred *pspCredentials
	if inFile {
		secretFile := filepath.Join(dir, "client-secret")
		require.NoError(t, os.WriteFile(secretFile, []byte(secret+"\n"), 0o600))
		f.cfg.ClientSecret, f.cfg.ClientSecretFile = "", secretFile
		cred = &pspCredentials{clientID: clientID, secretFile: secretFile}
	}
	// The worker's log: a failed call's error, as its activity logs it.
	lf, err := os.OpenFile(filepath.Join(dir, "worker.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	require.NoError(t, err)
	t.Cleanup(func() { lf.Close() })
	log := slog.New(slog.NewJSONHandler(lf, nil))
	f.logCall = func(err error) { log.Error("Activity error.", "ActivityType", "SubmitTransfer", "Error", err.Error()) }
	f.psp = &pspServer{sim: sim, url: base, apiURL: base, client: &http.Client{Timeout: 10 * time.Second}, cred: cred}
	f.r = &caseRun{st: &stack{psp: f.psp, worker: &process{name: "worker", logDir: dir}, workerMetricsURL: metrics.URL},
		s: s, facts: map[string]int{}}
	return f
}

// newClient is a PSP client as the worker uses it, with a token of its own
// to fetch.
func (f *tokenFixture) newClient() *psp.HTTPClient {
	c, err := psp.New(f.cfg)
	require.NoError(f.t, err)
	return c
}

// submit sends a transfer of a new end_to_end_id through c.
func (f *tokenFixture) submit(c *psp.HTTPClient) (string, error) {
	f.mu.Lock()
	f.n++
	e2e := fmt.Sprintf("E12345678202612061200%011d", f.n)
	f.mu.Unlock()
	_, err := c.Submit(f.t.Context(), psp.Transfer{EndToEndID: e2e, AccountID: "acc-1", AmountCents: 100, PixKey: "k@test"})
	return e2e, err
}

// onDelete makes the DELETE that brings the token endpoint back send, on
// its way, a transfer with a token fetched then, as the worker may: before
// the DELETE is sent (the simulator may have ended the outage on its own),
// or once the simulator answered it (the endpoint is back), before the
// case reads that answer. It returns where the transfer's end_to_end_id
// is put.
func (f *tokenFixture) onDelete(answered bool) *string {
	sent := new(string)
	send := func(when string) error {
		e2e, err := f.submit(f.newClient())
		if err != nil {
			return fmt.Errorf("a transfer sent once %s: %w", when, err)
		}
		*sent = e2e
		return nil
	}
	f.psp.client.Transport = roundTripFunc(func(req *http.Request) (*http.Response, error) {
		heal := req.Method == http.MethodDelete && req.URL.Path == "/sim/token-endpoint"
		if heal && !answered {
			if err := send("the simulator ended the outage"); err != nil {
				return nil, err
			}
		}
		res, err := http.DefaultTransport.RoundTrip(req)
		if err == nil && heal && answered {
			if err := send("the DELETE brought the endpoint back"); err != nil {
				res.Body.Close()
				return nil, err
			}
		}
		return res, err
	})
	return sent
}

// requireNoneMadeWithoutToken checks that the PSP made no transfer in the
// window without a token, and made the one sent as the fault ended (sent,
// not counted, msg says why), when there is one.
func (f *tokenFixture) requireNoneMadeWithoutToken(sent, msg string) {
	t, r := f.t, f.r
	made, _, err := f.psp.transfers(t.Context())
	require.NoError(t, err)
	// in says a transfer made at a moment (what, its words) is in the
	// window, and why not.
	in := func(at time.Time, what string, args ...any) (bool, []any) {
		return r.withoutToken(at), append([]any{what + ", in the window without a token (%s to %s)"},
			append(args, r.noTokenFrom.Format(time.StampMilli), r.noTokenTo.Format(time.StampMilli))...)
	}
	if msg != "" {
		require.NotEmpty(t, sent)
		require.Contains(t, made, sent)
		bad, why := in(made[sent].CreatedAt, msg+" counted", made[sent].CreatedAt.Format(time.StampMilli))
		require.False(t, bad, why...)
	}
	for e2e, v := range made {
		bad, why := in(v.CreatedAt, "transfer %s made at %s", e2e, v.CreatedAt.Format(time.StampMilli))
		require.False(t, bad, why...)
	}
}

// TestTokenCasesCountOnlyWhatNoTokenCouldAuthorise runs the token cases'
// faults against the simulator with OAuth, and the PSP client as the
// worker uses it: a token case must not count in its window without a
// token a transfer made with a token issued as the fault ended, before
// the case went on.
//
//   - case 21's, tokenEndpointDown: the case once failed with "1 transfers
//     created at the PSP while no token could be had": the simulator ends
//     the outage on its own tokenDown after it took the endpoint down,
//     before the case's DELETE is sent; a transfer sent with a token issued
//     in between was made before the DELETE's answer, which the case took
//     for the heal. Here the DELETE is held back (as a busy machine's
//     scheduler holds a process) while a token is fetched and a transfer
//     sent.
//   - case 23's, wrongClientSecret, the secret in a file the PSP client
//     reads at each token request: the case took the moment after it
//     replaced the secret file for the end of the window: between the
//     rename and that moment the worker's next token request reads the
//     right secret, and the transfer its token authorises is made. Here the
//     rename is followed at once by a token fetched with the file's secret
//     and a transfer sent, before the case reads the clock again.
//
// A client with a token fetched just before the fault sends a transfer
// every 100 ms all through it: what the PSP made of them falls outside the
// window (before: its token's last use, or the revocation; after: the
// heal), and some failed for want of a token (refused it, for the wrong
// secret); the window (what the fault leaves after the calls in flight
// ended: 10 s of the outage, 4 s of the wrong secret) is not empty, and
// whatever the PSP makes in it is counted.
func TestTokenCasesCountOnlyWhatNoTokenCouldAuthorise(t *testing.T) {
	if testing.Short() {
		t.Skip("the token outage lasts 12 s, the wrong secret 6 s")
	}
	for _, tc := range []struct {
		tokenCase
		s settings
		// heal arms the transfer sent as the fault ends, and returns
		// where its end_to_end_id is put and how to call it.
		heal func(*testing.T, *tokenFixture) (*string, string)
		// refused says whether a call failed for the fault's want of a
		// token.
		refused func(*psp.TokenError) bool
		// after: the client sends on after the fault for so long.
		after                 time.Duration
		sending, sent, bitten string
	}{
		{
			tokenCase: case21, s: settings{tokenDown: 12 * time.Second},
			heal: func(_ *testing.T, f *tokenFixture) (*string, string) {
				return f.onDelete(false), "a transfer sent with a token the simulator issued after it ended the outage (%s)"
			},
			refused: func(*psp.TokenError) bool { return true },
			sending: "a transfer with the early token: %v", sent: "no transfer sent with the early token",
			bitten: "no transfer failed for want of a token: the fault did not bite",
		},
		{
			tokenCase: case23, s: settings{secretWrongFor: 6 * time.Second},
			heal: func(t *testing.T, f *tokenFixture) (*string, string) {
				sent := new(string)
				replace := replaceFile
				t.Cleanup(func() { replaceFile = replace })
				replaceFile = func(from, to string) error {
					if err := replace(from, to); err != nil {
						return err
					}
					e2e, err := f.submit(f.newClient())
					if err != nil {
						return fmt.Errorf("a transfer sent once the right secret was in the file: %w", err)
					}
					*sent = e2e
					return nil
				}
				return sent, "a transfer sent with a token the right secret got, once it was in the file (%s)"
			},
			refused: func(err *psp.TokenError) bool { return !err.Transient },
			// A second more with the right secret in the file: its calls
			// go through again.
			after:   time.Second,
			sending: "a transfer through the rotation: %v", sent: "no transfer sent once the right secret was in the file",
			bitten: "no transfer refused for the wrong secret: the fault did not bite",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newTokenFixture(t, tc.inFile, tc.s)
			healed, msg := tc.heal(t, f)
			early := f.newClient()
			_, err := f.submit(early)
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
					_, err := f.submit(early)
					var tokenErr *psp.TokenError
					switch {
					case err == nil:
						sent++
					case errors.As(err, &tokenErr) && tc.refused(tokenErr):
						refused++
					default:
						t.Errorf(tc.sending, err)
					}
				}
			}()
			_, _, err = tc.fault(t.Context(), f.r)
			time.Sleep(tc.after)
			close(stop)
			<-sending
			require.NoError(t, err)

			f.requireNoneMadeWithoutToken(*healed, msg)
			require.Positive(t, sent, tc.sent)
			require.Positive(t, refused, tc.bitten)
			r := f.r
			require.Greater(t, r.noTokenTo.Sub(r.noTokenFrom), time.Second)
			require.True(t, r.withoutToken(r.noTokenFrom))
			require.True(t, r.withoutToken(r.noTokenTo.Add(-time.Millisecond)))
		})
	}
}

// TestTokenCasesKeepTheFaultUntilCallsMeetIt runs the token cases' faults
// (case 21's, tokenEndpointDown; case 23's, wrongClientSecret) with a
// worker whose PSP calls come late, as on a loaded machine (case 21 failed
// "the fault did not happen" when none came within the outage): the fault
// must stay past its set time (s.tokenDown, s.secretWrongFor) until a
// transfer call and a devolução call failed for want of a token inside
// the window without one (the worker's log says so), then end at once; a
// call that failed before that window does not end it, nor do transfer
// calls alone (a product that refunds a transfer on a token failure passed
// case 21 when only devoluções met the outage). Case 21's window ends when
// the DELETE is sent: a transfer made once the DELETE brought the endpoint
// back, before its answer, is not counted; case 23's at the clock read
// before the rename, and then the right secret is in the file. With no
// call at all, the fault ends at its set time + s.tokenHitWait and the
// case fails: the fault did not happen, for either kind.
func TestTokenCasesKeepTheFaultUntilCallsMeetIt(t *testing.T) {
	if testing.Short() {
		t.Skip("the faults last 7.5 s to 12 s")
	}
	for _, tc := range []struct {
		tokenCase
		settings func(set, hitWait time.Duration) settings
		// lateAt: when the late transfer call and the devolução call come.
		lateAt    [2]time.Duration
		transient bool
		// kept: the case's note on the fault kept.
		kept string
		// late, refund, healed, early, bound: the messages.
		late, refund, healed, early, bound string
		// heal arms before the fault what to check once it ended.
		heal func(*tokenFixture) func()
	}{
		{
			tokenCase: case21,
			settings:  func(set, hitWait time.Duration) settings { return settings{tokenDown: set, tokenHitWait: hitWait} },
			// The window without a token begins pspTokenUsable + 4 s in:
			// the late calls come 2 s into it (12 s in) and 1.5 s later.
			lateAt:    [2]time.Duration{pspTokenUsable + 6*time.Second, pspTokenUsable + 7500*time.Millisecond},
			transient: true, kept: "the endpoint kept down",
			late:   "a transfer call %s into an outage of %s that no call had met inside its window went through: the endpoint was not kept down",
			refund: "a devolução call %s into the outage, after a transfer call met it but none of its own, went through: the endpoint was not kept down",
			healed: "the outage went on after calls of both met it",
			early:  "the outage ended before s.tokenDown + s.tokenHitWait",
			bound:  "the outage went on past s.tokenDown + s.tokenHitWait",
			heal: func(f *tokenFixture) func() {
				sent := f.onDelete(true)
				return func() {
					f.requireNoneMadeWithoutToken(*sent, "a transfer sent once the DELETE brought the endpoint back (%s)")
				}
			},
		},
		{
			tokenCase: case23,
			settings:  func(set, hitWait time.Duration) settings { return settings{secretWrongFor: set, tokenHitWait: hitWait} },
			// The window without a token begins 4 s in: the late calls
			// come 6 s in and 1.5 s later.
			lateAt: [2]time.Duration{6 * time.Second, 7500 * time.Millisecond},
			kept:   "the secret kept wrong",
			late:   "a transfer call %s after a rotation of %s that no call had met inside its window went through: the secret was not kept wrong",
			refund: "a devolução call %s after the rotation, after a transfer call met it but none of its own, went through: the secret was not kept wrong",
			healed: "the secret stayed wrong after calls of both met it",
			early:  "the secret was right again before s.secretWrongFor + s.tokenHitWait",
			bound:  "the secret stayed wrong past s.secretWrongFor + s.tokenHitWait",
			heal: func(f *tokenFixture) func() {
				return func() {
					// The right secret is in the file: a call goes through.
					_, err := f.submit(f.newClient())
					require.NoError(f.t, err)
				}
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Run("late calls", func(t *testing.T) {
				const set = 2 * time.Second
				f := newTokenFixture(t, tc.inFile, tc.settings(set, 30*time.Second))
				check := tc.heal(f)
				// A transfer call half a second in, before the window
				// without a token (it fails at once); one long after the
				// fault's set time; a devolução call 1.5 s later.
				began := time.Now()
				type call struct {
					at  time.Time
					err error
				}
				calls := make(chan call, 3)
				go func() {
					for i, at := range []time.Duration{500 * time.Millisecond, tc.lateAt[0], tc.lateAt[1]} {
						time.Sleep(time.Until(began.Add(at)))
						c := call{at: time.Now()}
						if i < 2 {
							_, c.err = f.submit(f.newClient())
						} else {
							_, c.err = f.newClient().RequestRefund(t.Context(), psp.RefundRequest{EndToEndID: "E1234567820261206140000000000099",
								ID: "d1", AmountCents: 100})
						}
						if c.err != nil {
							f.logCall(c.err)
						}
						calls <- c
					}
				}()
				r := f.r
				healed, note, err := tc.fault(t.Context(), r)
				require.NoError(t, err)
				early, late, refund := <-calls, <-calls, <-calls
				var tokenErr *psp.TokenError
				require.ErrorAs(t, early.err, &tokenErr)
				require.ErrorAs(t, late.err, &tokenErr, tc.late, late.at.Sub(began).Round(time.Millisecond), set)
				require.Equal(t, tc.transient, tokenErr.Transient)
				require.ErrorAs(t, refund.err, &tokenErr, tc.refund, refund.at.Sub(began).Round(time.Millisecond))
				require.Equal(t, tc.transient, tokenErr.Transient)
				require.Equal(t, 2, r.facts[tc.calls[0].fact])
				require.Equal(t, 1, r.facts[tc.calls[1].fact])
				require.Less(t, healed.Sub(refund.at), 5*time.Second, tc.healed)
				require.Contains(t, note, tc.kept)
				require.Contains(t, note, "until calls of both met it")
				require.True(t, r.withoutToken(late.at))
				require.True(t, r.withoutToken(refund.at))
				check()
			})

			t.Run("no call", func(t *testing.T) {
				f := newTokenFixture(t, tc.inFile, tc.settings(time.Second, 2*time.Second))
				began := time.Now()
				healed, note, err := tc.fault(t.Context(), f.r)
				require.NoError(t, err)
				took := healed.Sub(began)
				require.GreaterOrEqual(t, took, 3*time.Second, tc.early)
				require.Less(t, took, 8*time.Second, tc.bound)
				require.Contains(t, note, "its bound: calls of both had not met it")
				require.Equal(t, []string{"the fault did not happen: no " + tc.calls[0].fact, "the fault did not happen: no " + tc.calls[1].fact},
					needFacts(tc.calls.facts()...)(t.Context(), f.r, nil))
			})
		})
	}
}
