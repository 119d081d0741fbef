package workflows_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/workflows"
)

// Each family's queue is derived from TEMPORAL_TASK_QUEUE as documented in
// taskqueues.go: the default keeps the credits on pix-credit.
func TestTaskQueuesAreDerivedFromTheBase(t *testing.T) {
	for _, tc := range []struct {
		base string
		want workflows.TaskQueues
	}{
		{workflows.CreditTaskQueue, workflows.TaskQueues{Base: "pix-credit", Credits: "pix-credit", Transfers: "pix-transfer", Maintenance: "pix-maintenance"}},
		{"pix-credit-0a1b2c", workflows.TaskQueues{Base: "pix-credit-0a1b2c", Credits: "pix-credit-0a1b2c", Transfers: "pix-transfer-0a1b2c", Maintenance: "pix-maintenance-0a1b2c"}},
		{"acme-credit-credit", workflows.TaskQueues{Base: "acme-credit-credit", Credits: "acme-credit-credit", Transfers: "acme-transfer-credit", Maintenance: "acme-maintenance-credit"}},
		{"myq", workflows.TaskQueues{Base: "myq", Credits: "myq", Transfers: "myq-transfer", Maintenance: "myq-maintenance"}},
	} {
		t.Run(tc.base, func(t *testing.T) {
			got := workflows.TaskQueuesFor(tc.base)
			require.Equal(t, tc.want, got)
			seen := map[string]bool{}
			for i, f := range workflows.Families {
				q := workflows.TaskQueue(tc.base, f)
				require.Equal(t, got.All()[i], q)
				require.Equal(t, q, got.Of(f))
				require.False(t, seen[q], "queue %s is given to two families", q)
				seen[q] = true
			}
		})
	}
	require.Equal(t, "pix-credit", workflows.TaskQueue(workflows.CreditTaskQueue, workflows.Credits), "in-flight credits keep their queue")
}
