package memlimit

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
)

// Share is the part of the container's limit the runtime's soft limit is
// set to: the rest is for what the runtime does not count (the binary's
// text, cgo, the kernel's socket buffers charged to the cgroup).
const Share = 0.9

// Apply sets the runtime's soft memory limit to Share of the cgroup's
// limit, unless GOMEMLIMIT is set (the runtime applied it already) or the
// cgroup has no limit, and logs what it did.
func Apply(log *slog.Logger) {
	if v, ok := os.LookupEnv("GOMEMLIMIT"); ok {
		log.Info("memory limit from GOMEMLIMIT", "gomemlimit", v)
		return
	}
	limit, err := Cgroup(os.DirFS("/"))
	switch {
	case err != nil:
		log.Warn("no memory limit applied: the cgroup's could not be read", "error", err)
	case limit == 0:
		log.Info("no memory limit applied: the cgroup has none (set GOMEMLIMIT to bound the heap)")
	default:
		soft := int64(float64(limit) * Share)
		debug.SetMemoryLimit(soft)
		log.Info("memory limit from the cgroup", "cgroup_limit_bytes", limit, "gomemlimit_bytes", soft)
	}
}

// Cgroup is the memory limit of the process's cgroup, read under root (a
// file system holding proc/self/cgroup and sys/fs/cgroup); 0 when it has
// none. cgroup v1's memory controller is read when the process is in one
// (a v1 or hybrid host), else v2's; each in the process's own cgroup, else
// at the mount's root (a container with its own cgroup namespace sees its
// cgroup there).
func Cgroup(root fs.FS) (int64, error) {
	self, err := fs.ReadFile(root, "proc/self/cgroup")
	if err != nil {
		return 0, fmt.Errorf("memlimit: %w", err)
	}
	var mount, group, file string
	for line := range strings.Lines(string(self)) {
		// hierarchy-id:controllers:path
		f := strings.SplitN(strings.TrimSpace(line), ":", 3)
		switch {
		case len(f) != 3:
		case slices.Contains(strings.Split(f[1], ","), "memory"):
			mount, group, file = "sys/fs/cgroup/memory", f[2], "memory.limit_in_bytes"
		case f[0] == "0" && f[1] == "" && file == "":
			mount, group, file = "sys/fs/cgroup", f[2], "memory.max"
		}
	}
	if file == "" {
		return 0, errors.New("memlimit: no memory cgroup in /proc/self/cgroup")
	}
	b, err := fs.ReadFile(root, path.Join(mount, group, file))
	if errors.Is(err, fs.ErrNotExist) {
		b, err = fs.ReadFile(root, path.Join(mount, file))
	}
	if err != nil {
		return 0, fmt.Errorf("memlimit: %w", err)
	}
	v := strings.TrimSpace(string(b))
	if v == "max" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	switch {
	case err != nil || n <= 0:
		return 0, fmt.Errorf("memlimit: %s: %q is not a limit", file, v)
	case n > 1<<62:
		return 0, nil // v1's "no limit": the largest page-aligned int64
	}
	return n, nil
}
