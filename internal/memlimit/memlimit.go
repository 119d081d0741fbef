package memlimit

import (
	"log/slog"
	"os"

	"github.com/KimMachineGun/automemlimit/memlimit"
)

// Share is the part of the container's limit the runtime's soft limit is
// set to: the rest is for what the runtime does not count (the binary's
// text, cgo, the kernel's socket buffers charged to the cgroup).
const Share = 0.9

// Apply sets the runtime's soft memory limit to Share of the cgroup's
// limit, unless GOMEMLIMIT is set (the runtime applied it already) or the
// cgroup has no limit, and logs what it did. AUTOMEMLIMIT, the library's
// own setting, overrides the share ("off": nothing applied).
func Apply(log *slog.Logger) {
	if v := os.Getenv("GOMEMLIMIT"); v != "" { // empty is unset, to the runtime as to the library
		log.Info("memory limit from GOMEMLIMIT", "gomemlimit", v)
		return
	}
	var cgroup uint64
	read := false
	soft, err := memlimit.Set(memlimit.WithRatio(Share), memlimit.WithProvider(func() (uint64, error) {
		var err error
		cgroup, err = memlimit.FromCgroup()
		read = true
		return cgroup, err
	}))
	switch {
	case err != nil:
		log.Warn("no memory limit applied: the cgroup's could not be read", "error", err)
	case !read:
		log.Info("no memory limit applied: AUTOMEMLIMIT is off")
	case cgroup == 0:
		log.Info("no memory limit applied: the cgroup has none (set GOMEMLIMIT to bound the heap)")
	default:
		log.Info("memory limit from the cgroup", "cgroup_limit_bytes", cgroup, "gomemlimit_bytes", soft)
	}
}
