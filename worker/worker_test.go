package worker_test

import (
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/workflow"

	"github.com/pixbank/pix/activities"
	"github.com/pixbank/pix/worker"
	"github.com/pixbank/pix/workflows"
)

// registry records the names registered on it, as the SDK names them.
type registry struct{ workflows, activities []string }

func (r *registry) RegisterWorkflowWithOptions(_ any, o workflow.RegisterOptions) {
	r.workflows = append(r.workflows, o.Name)
}

func (r *registry) RegisterActivity(a any) {
	name := runtime.FuncForPC(reflect.ValueOf(a).Pointer()).Name()
	name = strings.TrimSuffix(name[strings.LastIndex(name, ".")+1:], "-fm")
	r.activities = append(r.activities, name)
}

func registered(f func(worker.Registry)) *registry {
	r := &registry{}
	f(r)
	slices.Sort(r.workflows)
	slices.Sort(r.activities)
	return r
}

// Each family's worker registers its family's workflows and activities; the
// credits' worker also the others', for the runs started on its queue
// before each family had one (see RegisterFamily).
func TestEachFamilyRegistersItsWorkflowsAndActivities(t *testing.T) {
	acts := worker.Deps{Activities: &activities.Activities{}}
	of := func(f workflows.Family) *registry {
		return registered(func(r worker.Registry) { worker.RegisterFamily(r, acts, f) })
	}
	all := registered(func(r worker.Registry) { worker.Register(r, acts) })

	transfers := of(workflows.Transfers)
	require.Equal(t, []string{workflows.TransferWorkflowName}, transfers.workflows)
	require.Equal(t, []string{"AwaitSettlement", "RefundTransfer", "SettleTransfer", "SubmitTransfer"}, transfers.activities)

	maintenance := of(workflows.Maintenance)
	require.Equal(t, []string{workflows.ReconcileWorkflowName, workflows.RetentionWorkflowName}, maintenance.workflows)
	require.Equal(t, []string{"DeleteDoneInboxRows", "DeleteExpiredIdempotencyKeys", "DeletePublishedEvents", "ReconcileBooks"}, maintenance.activities)

	// Deploy safety: transfers, retention and reconciliation runs begun on
	// pix-credit before this release still find a worker there.
	require.Equal(t, all, of(workflows.Credits))

	// Every activity is registered somewhere.
	var exported []string
	for m := range reflect.TypeFor[*activities.Activities]().Methods() {
		exported = append(exported, m.Name)
	}
	require.Equal(t, exported, all.activities, "an activity of no family: add it to its family's register function")
	require.ElementsMatch(t, []string{workflows.CreditWorkflowName, workflows.TransferWorkflowName, workflows.RetentionWorkflowName, workflows.ReconcileWorkflowName}, all.workflows)
}
