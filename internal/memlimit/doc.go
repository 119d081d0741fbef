// Package memlimit owns the Go runtime's soft memory limit of pixd when
// the operator set none: GOMEMLIMIT unset, 90% of the process's cgroup
// memory limit is given to the runtime, so that the collector works
// harder as the heap nears the container's limit instead of the kernel
// killing the process at it.
//
// Reading the cgroup and setting the limit are
// github.com/KimMachineGun/automemlimit's (its memlimit package): cgroup v2
// memory.max, the smallest of the process's cgroup and its parents up to
// the mount, and v1 memory.limit_in_bytes (and hierarchical_memory_limit),
// each found through /proc/self/mountinfo wherever it is mounted. What is
// ours: the share, and the one line at start that says what was applied
// and from what (the test pins both, in each cgroup layout).
package memlimit
