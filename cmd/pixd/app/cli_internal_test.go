package app

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/internal/buildinfo"
	"github.com/pixbank/pix/internal/cli"
	"github.com/pixbank/pix/internal/config"
)

// pixd runs the command as main does: what it printed, and its exit status.
func pixd(t *testing.T, args ...string) (stdout, stderr string, status int) {
	t.Helper()
	var out, errOut bytes.Buffer
	status = cli.Report(&errOut, "pixd", run(context.Background(), args, &out, &errOut))
	return out.String(), errOut.String(), status
}

// emptyEnvironment clears the process's environment for the test (as a
// clean clone with nothing set), and restores it after.
func emptyEnvironment(t *testing.T) {
	saved := os.Environ()
	os.Clearenv()
	t.Cleanup(func() {
		os.Clearenv()
		for _, kv := range saved {
			k, v, _ := strings.Cut(kv, "=")
			os.Setenv(k, v)
		}
	})
}

// Help, in every form, answers on stdout with status 0 before any
// configuration is read: in an empty environment, and in one whose
// configuration would stop every role.
func TestHelpReadsNoConfiguration(t *testing.T) {
	emptyEnvironment(t)
	const top = "usage: pixd <command>"
	type helpCase struct {
		args []string
		want string // how stdout starts
	}
	cases := []helpCase{{[]string{"-h"}, top}, {[]string{"--help"}, top}, {[]string{"-help"}, top}, {[]string{"help"}, top},
		// A help flag after a command's arguments too.
		{[]string{"migrate", "status", "-h"}, "usage: pixd migrate"},
		{[]string{"healthcheck", "http://127.0.0.1:1/", "--help"}, "usage: pixd healthcheck"}}
	for _, c := range commands {
		want := "usage: pixd " + c.name
		for _, args := range [][]string{{"help", c.name}, {c.name, "-h"}, {c.name, "--help"}} {
			cases = append(cases, helpCase{args, want})
		}
	}
	for _, poisoned := range []bool{false, true} {
		if poisoned {
			// Load would refuse this: help must never get there.
			t.Setenv("DATABASE_MAX_CONNS", "many")
			_, err := config.Load()
			require.Error(t, err)
		}
		for _, c := range cases {
			stdout, stderr, status := pixd(t, c.args...)
			require.Equal(t, cli.ExitOK, status, "pixd %q: %s", c.args, stderr)
			require.True(t, strings.HasPrefix(stdout, c.want), "pixd %q printed:\n%s", c.args, stdout)
			require.Empty(t, stderr, "pixd %q", c.args)
			require.Contains(t, stdout, "exit status:\n  0  done", "pixd %q", c.args)
		}
	}
}

// pixd help lists every command, every variable with the roles that use
// it, and the exit statuses; a role's help, the variables it uses.
func TestHelpListsCommandsAndVariables(t *testing.T) {
	stdout, _, _ := pixd(t, "--help")
	for _, c := range commands {
		require.Contains(t, stdout, "\n  "+c.name, "pixd help lists %s", c.name)
	}
	for _, v := range config.Variables {
		require.Contains(t, stdout, v.Name, "pixd help lists %s", v.Name)
	}
	require.Contains(t, stdout, "  api worker migrate:\n    DATABASE_URL DATABASE_URL_FILE DATABASE_MAX_CONNS\n")
	for _, s := range cli.Statuses {
		require.Contains(t, stdout, s.Meaning)
	}
	for _, role := range []string{"api", "worker", "migrate", "dev", "temporal-setup"} {
		c, _ := commandNamed(role)
		stdout, _, _ := pixd(t, role, "-h")
		for _, name := range config.VariablesOf(c.roles) {
			require.Contains(t, stdout, name, "pixd %s -h lists %s", role, name)
		}
	}
	stdout, _, _ = pixd(t, "migrate", "-h")
	require.NotContains(t, stdout, "HTTP_ADDR", "migrate does not use the API's variables")
	stdout, _, _ = pixd(t, "version", "-h")
	require.NotContains(t, stdout, "environment", "version reads no configuration")
}

// A usage error prints why and the usage on stderr, status 2, with no
// configuration read and nothing run.
func TestUsageErrors(t *testing.T) {
	emptyEnvironment(t)
	t.Setenv("DATABASE_MAX_CONNS", "many") // a command that ran would fail on it, with status 1
	for _, c := range []struct {
		args       []string
		why, usage string
	}{
		{nil, "pixd: name a command", "usage: pixd <command>"},
		{[]string{"bogus"}, `pixd: unknown command "bogus"`, "usage: pixd <command>"},
		{[]string{"--verbose"}, `pixd: unknown command "--verbose"`, "usage: pixd <command>"},
		{[]string{"help", "bogus"}, `pixd: no help for "bogus"`, "usage: pixd <command>"},
		{[]string{"migrate", "stats"}, `pixd: migrate: unknown subcommand "stats"`, "usage: pixd migrate [up|status]"},
		{[]string{"migrate", "status", "now"}, "pixd: migrate: wrong number of arguments", "usage: pixd migrate"},
		{[]string{"api", "status"}, "pixd: api: wrong number of arguments", "usage: pixd api"},
		{[]string{"healthcheck"}, "pixd: healthcheck: wrong number of arguments", "usage: pixd healthcheck URL"},
		{[]string{"version", "now"}, "pixd: version: wrong number of arguments", "usage: pixd version"},
	} {
		stdout, stderr, status := pixd(t, c.args...)
		require.Equal(t, cli.ExitUsage, status, "pixd %q: %s", c.args, stderr)
		require.Empty(t, stdout, "pixd %q", c.args)
		require.True(t, strings.HasPrefix(stderr, c.why+"\n\n"+c.usage), "pixd %q printed:\n%s", c.args, stderr)
	}
}

// pixd version prints the build, whatever the environment.
func TestVersion(t *testing.T) {
	emptyEnvironment(t)
	stdout, stderr, status := pixd(t, "version")
	require.Equal(t, cli.ExitOK, status, stderr)
	require.Equal(t, "pixd "+buildinfo.Read().String()+"\n", stdout)
}

// The binary, in an empty environment (env -i: a clean clone, nothing
// configured), answers help and version with status 0 on stdout and a usage
// error with 2; a version given at link time, as the image's build gives
// it, is the one it prints.
func TestBinaryInEmptyEnvironment(t *testing.T) {
	if testing.Short() {
		t.Skip("builds pixd")
	}
	bin := filepath.Join(t.TempDir(), "pixd")
	build := exec.Command("go", "build", "-o", bin,
		"-ldflags", "-X github.com/pixbank/pix/internal/buildinfo.Override=v9.9.9-test", "github.com/pixbank/pix/cmd/pixd")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "%s", out)
	for _, c := range []struct {
		args   []string
		status int
		stdout string // how stdout starts
	}{
		{[]string{"--help"}, 0, "usage: pixd <command>"},
		{[]string{"-h"}, 0, "usage: pixd <command>"},
		{[]string{"help"}, 0, "usage: pixd <command>"},
		{[]string{"migrate", "-h"}, 0, "usage: pixd migrate"},
		{[]string{"version"}, 0, "pixd version v9.9.9-test revision "},
		{[]string{"bogus"}, 2, ""},
		{nil, 2, ""},
	} {
		cmd := exec.Command(bin, c.args...)
		cmd.Env = []string{} // env -i
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		status := 0
		if exit, ok := errors.AsType[*exec.ExitError](err); ok {
			status = exit.ExitCode()
		} else {
			require.NoError(t, err)
		}
		require.Equal(t, c.status, status, "pixd %q: %s", c.args, stderr.String())
		require.True(t, strings.HasPrefix(stdout.String(), c.stdout), "pixd %q printed:\n%s", c.args, stdout.String())
		if c.status == 2 {
			require.Contains(t, stderr.String(), "usage: pixd <command>")
		}
	}
}

// A start with a bad setting of the core's (read by Load) and a bad one of
// a saga's (read in its package) names both, before anything is connected:
// the operator fixes them in one go.
func TestAStartNamesTheCoresAndTheSagasBadSettingsAtOnce(t *testing.T) {
	t.Setenv("DATABASE_MAX_CONNS", "many")
	t.Setenv("PSP_CATCHUP_GRACE", "soon")
	err := runRole(context.Background(), "api", "", io.Discard)
	require.Error(t, err)
	require.Contains(t, err.Error(), "DATABASE_MAX_CONNS")
	require.Contains(t, err.Error(), "PSP_CATCHUP_GRACE")
}
