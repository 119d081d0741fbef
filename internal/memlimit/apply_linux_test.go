package memlimit_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/internal/memlimit"
)

// layoutEnv names the testdata layout a child process runs Apply in.
const layoutEnv = "PIX_MEMLIMIT_TEST_LAYOUT"

func TestMain(m *testing.M) {
	if layout := os.Getenv(layoutEnv); layout != "" {
		if err := applyIn(layout); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// applyIn runs Apply as pixd does at start, in a container whose cgroup
// files are those of testdata/<layout>: bound over the process's own
// /proc/self/cgroup and /proc/self/mountinfo, and over /sys/fs/cgroup, in
// the mount namespace of its own the test started it in (the host's are
// untouched). It prints Apply's log lines, then the runtime's soft limit,
// one JSON object a line.
func applyIn(layout string) error {
	dir, err := filepath.Abs(filepath.Join("testdata", layout))
	if err != nil {
		return err
	}
	self := fmt.Sprintf("/proc/%d/", os.Getpid())
	for _, bind := range []struct{ file, over string }{
		{"proc/self/cgroup", self + "cgroup"},
		{"proc/self/mountinfo", self + "mountinfo"},
		{"sys/fs/cgroup", "/sys/fs/cgroup"},
	} {
		src := filepath.Join(dir, bind.file)
		if _, err := os.Stat(src); errors.Is(err, fs.ErrNotExist) {
			continue // the layout has none: the host's stays
		}
		if err := syscall.Mount(src, bind.over, "", syscall.MS_BIND, ""); err != nil {
			return fmt.Errorf("bind %s over %s: %w", src, bind.over, err)
		}
	}
	memlimit.Apply(slog.New(slog.NewJSONHandler(os.Stdout, nil)))
	return json.NewEncoder(os.Stdout).Encode(map[string]int64{"runtime_limit": debug.SetMemoryLimit(-1)})
}

// applied is what Apply did in a layout: its log lines and the runtime's
// soft limit after it.
type applied struct {
	lines []map[string]any
	limit int64
}

// runApply runs Apply in a child process of the test binary, in a mount
// namespace of its own with layout's cgroup files, and env added to its
// environment.
func runApply(t *testing.T, layout string, env ...string) applied {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	// The test's own memory settings are not the child's.
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "GOMEMLIMIT=") || strings.HasPrefix(kv, "AUTOMEMLIMIT=")
	})
	cmd.Env = append(cmd.Env, layoutEnv+"="+layout)
	cmd.Env = append(cmd.Env, env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS} // and / made private: nothing leaks to the host
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "stderr: %s", stderr.String())
	var got applied
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		var line map[string]any
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		dec.UseNumber() // a limit of MaxInt64 is no float64
		require.NoError(t, dec.Decode(&line), "%s", sc.Text())
		if v, ok := line["runtime_limit"]; ok {
			got.limit, err = v.(json.Number).Int64()
			require.NoError(t, err)
			continue
		}
		got.lines = append(got.lines, line)
	}
	return got
}

// The boundary pixd relies on: in each cgroup layout a container can give
// it, the runtime's soft limit is 90% of the container's memory limit, or
// left as it is without one, or what GOMEMLIMIT says when it is set; and
// one line says which and why.
func TestApplyInEachLayout(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("binds a layout's files over /proc/self/cgroup and /sys/fs/cgroup in a mount namespace of its own: needs root, as the project's machines and CI run")
	}
	const (
		fromCgroup = "memory limit from the cgroup"
		noLimit    = "no memory limit applied: the cgroup has none (set GOMEMLIMIT to bound the heap)"
		unreadable = "no memory limit applied: the cgroup's could not be read"
	)
	ninety := func(limit int64) int64 { return int64(float64(limit) * memlimit.Share) }
	for _, tc := range []struct {
		name, layout string
		env          []string
		limit        int64 // the runtime's soft limit after Apply
		level, msg   string
		cgroupLimit  int64 // the line's cgroup_limit_bytes, when it has one
		why          string
	}{
		{"v2", "v2", nil, ninety(256 << 20), "INFO", fromCgroup, 256 << 20,
			"v2: memory.max of the process's own cgroup"},
		{"v2-namespace", "v2-namespace", nil, ninety(128 << 20), "INFO", fromCgroup, 128 << 20,
			"v2 with the container's cgroup mounted at /sys/fs/cgroup: its root's memory.max"},
		{"v2-parent", "v2-parent", nil, ninety(64 << 20), "INFO", fromCgroup, 64 << 20,
			"v2: the pod's limit on the parent of the container's unlimited cgroup (automemlimit walks up to the mount)"},
		{"v2-max", "v2-max", nil, math.MaxInt64, "INFO", noLimit, 0, `v2 "max": no limit`},
		{"v1", "v1", nil, ninety(512 << 20), "INFO", fromCgroup, 512 << 20,
			"v1 (hybrid host): the memory controller's limit_in_bytes wins over v2's file"},
		{"v1-unlimited", "v1-unlimited", nil, math.MaxInt64, "INFO", noLimit, 0,
			"v1's unlimited value (page-aligned MaxInt64): no limit"},
		{"GOMEMLIMIT", "v2", []string{"GOMEMLIMIT=100MiB"}, 100 << 20, "INFO", "memory limit from GOMEMLIMIT", 0,
			"set by the operator: the runtime applied it, the cgroup's is not read"},
		{"AUTOMEMLIMIT=off", "v2", []string{"AUTOMEMLIMIT=off"}, math.MaxInt64, "INFO", "no memory limit applied: AUTOMEMLIMIT is off", 0,
			"the library's own switch"},
		{"AUTOMEMLIMIT=0.5", "v2", []string{"AUTOMEMLIMIT=0.5"}, 128 << 20, "INFO", fromCgroup, 256 << 20,
			"the library's own share, over ours"},
		{"no memory cgroup", "none", nil, math.MaxInt64, "WARN", unreadable, 0,
			"no v1 memory controller and no v2 line: nothing applied, said"},
		{"garbage", "garbage", nil, math.MaxInt64, "WARN", unreadable, 0,
			"a memory.max that is no number: nothing applied, said"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := runApply(t, tc.layout, tc.env...)
			require.Equal(t, tc.limit, got.limit, tc.why)
			require.Len(t, got.lines, 1, "one line says what was applied: %v", got.lines)
			line := got.lines[0]
			require.Equal(t, tc.level, line["level"], "%v", line)
			require.Equal(t, tc.msg, line["msg"], "%v", line)
			if tc.cgroupLimit != 0 {
				require.Equal(t, json.Number(fmt.Sprint(tc.cgroupLimit)), line["cgroup_limit_bytes"], "%v", line)
				require.Equal(t, json.Number(fmt.Sprint(tc.limit)), line["gomemlimit_bytes"], "%v", line)
			}
			if tc.level == "WARN" {
				require.NotEmpty(t, line["error"], "the line says what could not be read: %v", line)
			}
		})
	}
}
