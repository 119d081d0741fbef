package memlimit_test

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/internal/memlimit"
)

func TestCgroupReadsTheLimitOfEachLayout(t *testing.T) {
	for _, tc := range []struct {
		dir   string
		limit int64
		why   string
	}{
		{"v2", 256 << 20, "v2: memory.max of the process's own cgroup"},
		{"v2-namespace", 128 << 20, "v2 in a cgroup namespace: the path is not mounted, the root's memory.max is the container's"},
		{"v2-max", 0, `v2 "max": no limit`},
		{"v1", 512 << 20, "v1 (hybrid host): the memory controller's limit_in_bytes wins over v2's file"},
		{"v1-unlimited", 0, "v1's unlimited value (page-aligned MaxInt64): no limit"},
	} {
		t.Run(tc.dir, func(t *testing.T) {
			limit, err := memlimit.Cgroup(os.DirFS("testdata/" + tc.dir))
			require.NoError(t, err)
			require.Equal(t, tc.limit, limit, tc.why)
		})
	}
}

func TestCgroupFailsOnWhatItCannotRead(t *testing.T) {
	_, err := memlimit.Cgroup(os.DirFS("testdata/none"))
	require.ErrorContains(t, err, "no memory cgroup", "no v1 memory controller and no v2 line")
	_, err = memlimit.Cgroup(os.DirFS("testdata/garbage"))
	require.ErrorContains(t, err, `"lots" is not a limit`)
	_, err = memlimit.Cgroup(os.DirFS("testdata/missing"))
	require.Error(t, err, "no /proc/self/cgroup (not Linux)")
}
