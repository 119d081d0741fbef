package runconf_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/internal/runconf"
)

// Each family's queue is derived from TEMPORAL_TASK_QUEUE as documented in
// taskqueues.go: the default keeps the credits on pix-credit.
func TestTaskQueuesAreDerivedFromTheBase(t *testing.T) {
	for _, tc := range []struct {
		base string
		want runconf.TaskQueues
	}{
		{runconf.CreditTaskQueue, runconf.TaskQueues{Base: "pix-credit", Credits: "pix-credit", Transfers: "pix-transfer", Maintenance: "pix-maintenance"}},
		{"pix-credit-0a1b2c", runconf.TaskQueues{Base: "pix-credit-0a1b2c", Credits: "pix-credit-0a1b2c", Transfers: "pix-transfer-0a1b2c", Maintenance: "pix-maintenance-0a1b2c"}},
		{"credit-acme", runconf.TaskQueues{Base: "credit-acme", Credits: "credit-acme", Transfers: "transfer-acme", Maintenance: "maintenance-acme"}},
	} {
		t.Run(tc.base, func(t *testing.T) {
			got := runconf.TaskQueuesFor(tc.base)
			require.Equal(t, tc.want, got)
			seen := map[string]bool{}
			for i, f := range runconf.Families {
				q := runconf.TaskQueue(tc.base, f)
				require.Equal(t, got.All()[i], q)
				require.Equal(t, q, got.Of(f))
				require.False(t, seen[q], "queue %s is given to two families", q)
				seen[q] = true
			}
		})
	}
	require.Equal(t, "pix-credit", runconf.TaskQueue(runconf.CreditTaskQueue, runconf.Credits), "in-flight credits keep their queue")
}

// A base from which two bases could derive one queue is refused (the
// configuration refuses it at load): with the rule of taskqueues.go, base
// myq gave myq-transfer, the credits' queue of base myq-transfer, and base
// x-credit gives x-transfer as base x did.
func TestATaskQueueBaseThatCouldCollideIsRefused(t *testing.T) {
	for _, base := range []string{runconf.CreditTaskQueue, "pix-credit-0a1b2c", "credit-acme", "acme-credit-eu-west"} {
		require.NoError(t, runconf.CheckTaskQueueBase(base), base)
	}
	for base, why := range map[string]string{
		"myq":                "exactly once",
		"myq-transfer":       "exactly once",
		"acme-credit-credit": "exactly once",
		"pix-credits":        "segment of its own",
		"pixcredit":          "segment of its own",
		"pix-credit-refund":  `"refund"`,
		"pix-transfer":       "exactly once",
		"transfers-credit":   `"transfer"`,
		"pix.credit":         `"."`,
		"pix:credit":         `":"`,
	} {
		err := runconf.CheckTaskQueueBase(base)
		require.Error(t, err, base)
		require.Contains(t, err.Error(), why, base)
	}
	// What the rule buys: over the accepted bases made of a few words, no
	// queue is derived by two bases.
	owner := map[string]string{}
	words := []string{"credit", "a", "transfe", "r", "ment"}
	var bases []string
	for _, x := range words {
		for _, y := range words {
			for _, z := range words {
				bases = append(bases, x+"-"+y, x+"-"+y+"-"+z, x+y+"-"+z)
			}
		}
	}
	for _, base := range bases {
		if runconf.CheckTaskQueueBase(base) != nil {
			continue
		}
		for _, q := range runconf.TaskQueuesFor(base).All() {
			if prev, ok := owner[q]; ok && prev != base {
				t.Fatalf("queue %s derived from bases %s and %s", q, prev, base)
			}
			owner[q] = base
		}
	}
}
