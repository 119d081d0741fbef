// Package memlimit owns the Go runtime's soft memory limit of pixd when
// the operator set none: GOMEMLIMIT unset, the limit is read from the
// process's cgroup (v2 memory.max, v1 memory.limit_in_bytes) and 90% of
// it is given to debug.SetMemoryLimit, so that the collector works
// harder as the heap nears the container's limit instead of the kernel
// killing the process at it.
package memlimit
