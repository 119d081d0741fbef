package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/internal/broker"
	"github.com/pixbank/pix/internal/cli"
	"github.com/pixbank/pix/internal/tooling/natstest"
)

// result is what one run of pixctl printed, and its exit status.
type result struct {
	args           []string
	stdout, stderr string
	status         int
}

func (r result) requireStatus(t *testing.T, want int) {
	t.Helper()
	require.Equal(t, want, r.status, "pixctl %s\nstdout: %s\nstderr: %s", strings.Join(r.args, " "), r.stdout, r.stderr)
}

// pixctl runs pixctl with args in the environment getenv, as its main
// does: what it prints, and its exit status.
func pixctl(t *testing.T, getenv func(string) string, args ...string) result {
	t.Helper()
	return pixctlCtx(context.Background(), getenv, args...)
}

func pixctlCtx(ctx context.Context, getenv func(string) string, args ...string) result {
	var out, errOut bytes.Buffer
	err := run(ctx, args, &out, &errOut, getenv, time.Now)
	status := cli.Report(&errOut, "pixctl", err)
	return result{args: args, stdout: out.String(), stderr: errOut.String(), status: status}
}

// env is a getenv of the name, value pairs.
func env(kv ...string) func(string) string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) string { return m[k] }
}

// untouchable is an environment whose API, PSP and NATS fail the test when
// anything reaches them, and whose development issuer's directory must not
// come to exist.
func untouchable(t *testing.T) (getenv func(string) string, keyDir string) {
	t.Helper()
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("a request reached the API: %s %s", r.Method, r.URL)
		w.WriteHeader(http.StatusTeapot)
	}))
	t.Cleanup(api.Close)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			t.Errorf("a connection reached NATS from %s", c.RemoteAddr())
			c.Close()
		}
	}()
	keyDir = filepath.Join(t.TempDir(), "auth")
	return env("PIX_API_URL", api.URL, "PSP_URL", api.URL, "NATS_URL", "nats://"+ln.Addr().String(),
		"AUTH_DEV_KEY_DIR", keyDir, "ADMIN_TOKEN", "0123456789abcdef", "PIX_TOKEN", "tok"), keyDir
}

// Every help form, at every level, prints usage on stdout and exits 0,
// with no command run: no request to the API, no connection to NATS, no
// file written.
func TestHelpRunsNothing(t *testing.T) {
	t.Parallel()
	getenv, keyDir := untouchable(t)
	const top, events, tail = "usage: pixctl <command>", "usage: pixctl events <command>", "usage: pixctl events tail "
	const id = "E1234567820261129120000000000001"
	cases := []struct {
		args []string
		want string // how the usage starts
	}{
		{[]string{"-h"}, top}, {[]string{"--help"}, top}, {[]string{"-help"}, top}, {[]string{"help"}, top},
		{[]string{"events", "-h"}, events}, {[]string{"events", "--help"}, events}, {[]string{"events", "help"}, events},
		{[]string{"help", "events"}, events},
		{[]string{"events", "tail", "-h"}, tail}, {[]string{"events", "tail", "-all", "-o", "json", "--help"}, tail},
		{[]string{"help", "events", "tail"}, tail}, {[]string{"events", "help", "tail"}, tail},
		// A help flag anywhere: after the arguments, among the flags.
		{[]string{"show", id, "-h"}, "usage: pixctl show "}, {[]string{"show", "--help", id}, "usage: pixctl show "},
		{[]string{"demo", "-api-url", "http://x", "--help"}, "usage: pixctl demo "},
		{[]string{"refund", "-e2e", id, "-amount", "100", "--help"}, "usage: pixctl refund "},
		{[]string{"refund-status", "abc", "-account", "acc-1", "-wait", "1s", "-h"}, "usage: pixctl refund-status "},
		{[]string{"failed", "-account", "acc-1", "-help"}, "usage: pixctl failed "},
		{[]string{"retry", "-all-failed", "-account", "acc-1", "-h"}, "usage: pixctl retry "},
		{[]string{"retry", id, "--help"}, "usage: pixctl retry "},
		{[]string{"reconcile", "-o", "json", "-h"}, "usage: pixctl reconcile "},
		{[]string{"token", "-account", "acc-1", "-h"}, "usage: pixctl token "},
		{[]string{"dev-issuer", "-env", "--help"}, "usage: pixctl dev-issuer "},
	}
	for _, c := range commands {
		for _, args := range [][]string{{"help", c.name}, {c.name, "-h"}, {c.name, "--help"}, {c.name, "-help"}} {
			cases = append(cases, struct {
				args []string
				want string
			}{args, strings.TrimSpace("usage: pixctl "+c.name+" "+c.args) + "\n"})
		}
	}
	for _, c := range cases {
		r := pixctl(t, getenv, c.args...)
		r.requireStatus(t, cli.ExitOK)
		require.True(t, strings.HasPrefix(r.stdout, c.want), "pixctl %v printed:\n%s", c.args, r.stdout)
		require.Contains(t, r.stdout, "\n", "pixctl %v", c.args)
		require.Empty(t, r.stderr, "pixctl %v", c.args)
	}
	_, err := os.Stat(keyDir)
	require.ErrorIs(t, err, os.ErrNotExist, "a help flag wrote the development issuer's key pair")
}

// A command's help says its flags, the settings and their environment
// variables, and the exit statuses.
func TestHelpShowsSettingsAndStatuses(t *testing.T) {
	t.Parallel()
	all := append([]*command{}, commands...)
	for _, g := range groups {
		all = append(all, g.commands...)
	}
	for _, c := range all {
		var b bytes.Buffer
		c.help(&b)
		h := b.String()
		for _, s := range c.settings {
			require.Contains(t, h, "-"+s.flag+" ", c.name)
			require.Contains(t, h, "$"+s.env, c.name)
			if s.def != "" {
				require.Contains(t, h, s.def, c.name)
			}
		}
		if c.output {
			require.Contains(t, h, "-o string", c.name)
		}
		require.Contains(t, h, "exit status: 0 done; 1 "+c.problem+"; 2 usage", c.name)
		require.Contains(t, h, "3 could not ask", c.name)
	}
	var b bytes.Buffer
	usage(&b)
	for _, c := range all {
		require.Contains(t, b.String(), "  "+c.name+" ", "pixctl help lists %s", c.name)
	}
	require.Contains(t, b.String(), "3  could not ask")
}

// An unknown command, a bad flag, a missing argument or a bad setting:
// usage on stderr, exit 2, nothing asked.
func TestUsageErrors(t *testing.T) {
	t.Parallel()
	getenv, keyDir := untouchable(t)
	const id = "E1234567820261129120000000000001"
	for _, c := range []struct {
		args []string
		env  []string // over getenv
		want string
	}{
		{nil, nil, "usage: pixctl <command>"},
		{[]string{"nope"}, nil, `pixctl: unknown command "nope"`},
		{[]string{"--nope"}, nil, `pixctl: unknown command "--nope"`},
		{[]string{"help", "nope"}, nil, `no help for "nope"`},
		{[]string{"help", "events", "nope"}, nil, `no help for "events nope"`},
		{[]string{"events"}, nil, "pixctl events: name a command"},
		{[]string{"events", "nope"}, nil, `pixctl events: unknown command "nope"`},
		{[]string{"events", "tail", "extra"}, nil, `pixctl events tail: unexpected argument "extra"`},
		{[]string{"events", "tail", "-o", "xml"}, nil, `-o: "xml" is neither text nor json`},
		{[]string{"show"}, nil, "pixctl show: name one PIX"},
		{[]string{"show", id, id}, nil, "pixctl show: name one PIX"},
		{[]string{"show", "-x", id}, nil, "pixctl show: flag provided but not defined: -x"},
		{[]string{"show", id, "-o", "yaml"}, nil, `-o: "yaml" is neither text nor json`},
		{[]string{"failed", "extra"}, nil, `pixctl failed: unexpected argument "extra"`},
		{[]string{"retry"}, nil, "pixctl retry: name one PIX"},
		{[]string{"retry", "-all-failed"}, nil, "pixctl retry: name one PIX"},
		{[]string{"retry", "-account", "acc-1", id}, nil, "pixctl retry: name one PIX"},
		{[]string{"reconcile", "extra"}, nil, `pixctl reconcile: unexpected argument "extra"`},
		{[]string{"demo", "extra"}, nil, `pixctl demo: unexpected argument "extra"`},
		{[]string{"demo", "-wait", "1s"}, nil, "flag provided but not defined: -wait"},
		{[]string{"token", "-nope"}, nil, "pixctl token: flag provided but not defined: -nope"},
		{[]string{"refund-status", "-wait", "soon", "abc"}, nil, `invalid value "soon" for flag -wait`},
		{[]string{"show", id}, []string{"WEBHOOK_SECRETS", "psp=not base64!"}, "WEBHOOK_SECRETS"},
		{[]string{"show", id}, []string{"ADMIN_TOKEN_FILE", "/nonexistent"}, "ADMIN_TOKEN and ADMIN_TOKEN_FILE: set one, not both"},
	} {
		over := env(c.env...)
		r := pixctl(t, func(k string) string {
			if v := over(k); v != "" {
				return v
			}
			return getenv(k)
		}, c.args...)
		r.requireStatus(t, cli.ExitUsage)
		require.Contains(t, r.stderr, c.want, "%v", c.args)
		require.Contains(t, r.stderr, "usage: pixctl ", "%v: usage follows", c.args)
		require.Empty(t, r.stdout, "%v", c.args)
	}
	_, err := os.Stat(keyDir)
	require.ErrorIs(t, err, os.ErrNotExist)
}

// A finding (1) is told from no answer (3): the books unbalanced, a PIX
// not found, against the API unreachable, failing or refusing the
// credentials.
func TestExitStatusesTellAProblemFromNoAnswer(t *testing.T) {
	t.Parallel()
	answer := func(status int, body string) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			_, _ = w.Write([]byte(body))
		}))
		t.Cleanup(srv.Close)
		return srv.URL
	}
	unbalanced := answer(http.StatusOK, `{"balanced":false,"report":{"unbalanced_accounts":["acc-1"]}}`)
	balanced := answer(http.StatusOK, `{"balanced":true,"report":{}}`)
	notFound := answer(http.StatusNotFound, `{"error":{"code":"pix_credit_not_found","message":"no PIX credit with this end_to_end_id"}}`)
	failing := answer(http.StatusInternalServerError, `{"error":{"code":"internal","message":"internal error"}}`)
	refused := answer(http.StatusUnauthorized, `{"error":{"code":"unauthorized","message":"admin token required"}}`)
	notJSON := answer(http.StatusBadGateway, `<html>bad gateway</html>`)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	unreachable := "http://" + ln.Addr().String()
	require.NoError(t, ln.Close())

	keyDir := filepath.Join(t.TempDir(), "none")
	for _, c := range []struct {
		api    string
		args   []string
		status int
		want   string
	}{
		{balanced, []string{"reconcile"}, cli.ExitOK, ""},
		{unbalanced, []string{"reconcile"}, cli.ExitProblem, "the books do not balance"},
		{unbalanced, []string{"reconcile", "-o", "json"}, cli.ExitProblem, "the books do not balance"},
		{notFound, []string{"show", "E1234567820261129120000000000001"}, cli.ExitProblem, "404 pix_credit_not_found"},
		{notFound, []string{"show", "-o", "json", "E1234567820261129120000000000001"}, cli.ExitProblem, "404 pix_credit_not_found"},
		{unreachable, []string{"reconcile"}, cli.ExitUnavailable, "connect: connection refused"},
		{unreachable, []string{"show", "E1234567820261129120000000000001"}, cli.ExitUnavailable, "connection refused"},
		{unreachable, []string{"failed"}, cli.ExitUnavailable, "connection refused"},
		{failing, []string{"reconcile"}, cli.ExitUnavailable, "500 internal"},
		{refused, []string{"reconcile"}, cli.ExitUnavailable, "401 unauthorized"},
		{notJSON, []string{"reconcile"}, cli.ExitUnavailable, "decode answer (HTTP 502)"},
	} {
		r := pixctl(t, env("PIX_API_URL", c.api, "ADMIN_TOKEN", "0123456789abcdef", "AUTH_DEV_KEY_DIR", keyDir), c.args...)
		r.requireStatus(t, c.status)
		require.Contains(t, r.stderr, c.want, "%v", c.args)
		require.NotContains(t, r.stderr, "usage:", "%v: not a usage error", c.args)
	}

	// NATS unreachable: events tail could not ask.
	ln, err = net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	natsURL := "nats://" + ln.Addr().String()
	require.NoError(t, ln.Close())
	r := pixctl(t, env("NATS_URL", natsURL), "events", "tail")
	r.requireStatus(t, cli.ExitUnavailable)
	require.Contains(t, r.stderr, "the events on NATS at "+natsURL)
}

// Settings: the flag's value, else the environment's, else the default.
func TestSettingsPrecedence(t *testing.T) {
	t.Parallel()
	var got struct{ api, admin, nats string }
	probe := &command{name: "probe", settings: []setting{apiURLSetting, adminTokenSetting, natsURLSetting},
		define: func(*flag.FlagSet) runner {
			return func(_ context.Context, inv *invocation, _ []string) error {
				got.api, got.nats = inv.get(apiURLSetting), inv.get(natsURLSetting)
				var err error
				got.admin, err = adminTokenOf(inv.getenv)
				return err
			}
		}}
	file := filepath.Join(t.TempDir(), "admin-token")
	require.NoError(t, os.WriteFile(file, []byte("from-the-file\n"), 0o600))
	probeWith := func(getenv func(string) string, args ...string) {
		t.Helper()
		var out, errOut bytes.Buffer
		require.NoError(t, probe.run(context.Background(), args, &out, &errOut, getenv, time.Now), errOut.String())
	}

	probeWith(env())
	require.Equal(t, "http://127.0.0.1:8080", got.api)
	require.Equal(t, "nats://127.0.0.1:4222", got.nats)
	require.Empty(t, got.admin)

	probeWith(env("PIX_API_URL", "http://env:1", "NATS_URL", "nats://env:2", "ADMIN_TOKEN_FILE", file))
	require.Equal(t, "http://env:1", got.api)
	require.Equal(t, "nats://env:2", got.nats)
	require.Equal(t, "from-the-file", got.admin)

	probeWith(env("PIX_API_URL", "http://env:1", "NATS_URL", "nats://env:2", "ADMIN_TOKEN_FILE", file),
		"-api-url", "http://flag:1", "-nats-url", "nats://flag:2", "-admin-token", "from-the-flag")
	require.Equal(t, "http://flag:1", got.api)
	require.Equal(t, "nats://flag:2", got.nats)
	require.Equal(t, "from-the-flag", got.admin, "-admin-token overrides ADMIN_TOKEN_FILE too")

	probeWith(env("ADMIN_TOKEN", "from-the-env"), "-admin-token", "from-the-flag")
	require.Equal(t, "from-the-flag", got.admin)

	// Through a real command: -api-url over PIX_API_URL.
	calls := map[string]int{}
	var mu sync.Mutex
	server := func(name string) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			mu.Lock()
			calls[name]++
			mu.Unlock()
			writeJSONAnswer(w, http.StatusOK, map[string]any{"balanced": true})
		}))
		t.Cleanup(srv.Close)
		return srv.URL
	}
	fromEnv, fromFlag := server("env"), server("flag")
	getenv := env("PIX_API_URL", fromEnv, "ADMIN_TOKEN", "0123456789abcdef", "AUTH_DEV_KEY_DIR", filepath.Join(t.TempDir(), "none"))
	pixctl(t, getenv, "reconcile").requireStatus(t, cli.ExitOK)
	pixctl(t, getenv, "reconcile", "-api-url", fromFlag).requireStatus(t, cli.ExitOK)
	require.Equal(t, map[string]int{"env": 1, "flag": 1}, calls)
}

// pixctl events tail -o json prints each envelope as it is on the wire, one
// a line; text, the subject before it.
func TestEventsTailJSON(t *testing.T) {
	t.Parallel()
	n := natstest.StartT(t)
	nc, err := nats.Connect(n.URL)
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	pub, err := broker.NewPublisher(nc, 5*time.Second, broker.DefaultStreamLimits)
	require.NoError(t, err)
	events := []db.Event{
		{ID: "0b6f6a2e-4d3c-4f8e-9d1a-1f2e3d4c5b6a", Seq: 1, AggregateType: db.AggregateCredit, AggregateID: "E1234567820261129120000000000001",
			Type: db.EventCreditSettled, Payload: []byte(`{"schema_version": 1, "amount_cents": 250}`), CreatedAt: time.Now()},
		{ID: "1b6f6a2e-4d3c-4f8e-9d1a-1f2e3d4c5b6a", Seq: 2, AggregateType: db.AggregateTransfer, AggregateID: "t-1",
			Type: db.EventTransferDebited, Payload: []byte(`{"schema_version": 1}`), CreatedAt: time.Now()},
	}
	ok, err := pub.Publish(context.Background(), events)
	require.NoError(t, err)
	require.Equal(t, []bool{true, true}, ok)

	for _, format := range []string{"json", "text"} {
		ctx, cancel := context.WithCancel(context.Background())
		out := &lines{want: len(events), done: cancel}
		var errOut bytes.Buffer
		require.NoError(t, run(ctx, []string{"events", "tail", "-all", "-o", format, "-nats-url", n.URL}, out, &errOut, env(), time.Now))
		got := strings.Split(strings.TrimSpace(out.String()), "\n")
		require.Len(t, got, len(events), format)
		for i, line := range got {
			if format == "text" {
				subject, rest, _ := strings.Cut(line, " ")
				require.Equal(t, broker.Subject(events[i].Type), subject)
				line = rest
			}
			var e broker.Envelope
			require.NoError(t, json.Unmarshal([]byte(line), &e), line)
			require.Equal(t, events[i].ID, e.ID)
			require.Equal(t, events[i].Type, e.Type)
			require.Equal(t, events[i].AggregateID, e.AggregateID)
			require.Equal(t, events[i].Seq, e.Seq)
			require.JSONEq(t, string(events[i].Payload), string(e.Data))
		}
		require.Contains(t, errOut.String(), "tailing PIX_EVENTS")
	}
}

// lines is an output that ends the command (done) once it holds want lines.
type lines struct {
	mu   sync.Mutex
	b    bytes.Buffer
	want int
	done func()
}

func (l *lines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n, err := l.b.Write(p)
	if strings.Count(l.b.String(), "\n") >= l.want {
		l.done()
	}
	return n, err
}

func (l *lines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// A check that found no difference but has not counted every account's
// history yet (after migration 0024 or a reset) says so, and how many, and
// does not say the books balance: it is no problem (0), and no finding.
func TestReconcileSaysWhatIsNotCheckedYet(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"balanced":true,"report":{"unbalanced_accounts":[],"progress":{"unchecked_accounts":412,"done_history_pending":true}}}`))
	}))
	t.Cleanup(srv.Close)
	r := pixctl(t, env("PIX_API_URL", srv.URL, "ADMIN_TOKEN", "0123456789abcdef"), "reconcile")
	r.requireStatus(t, cli.ExitOK)
	require.Contains(t, r.stdout, "not checked yet")
	require.Contains(t, r.stdout, ": 412 accounts")
	require.Contains(t, r.stdout, "not all yet")
	require.NotContains(t, r.stdout, "the books balance")
}
