package worker_test

import (
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/workflow"

	"github.com/pixbank/pix/internal/runconf"
	"github.com/pixbank/pix/saga"
	"github.com/pixbank/pix/saga/catchup"
	"github.com/pixbank/pix/saga/reconcile"
	"github.com/pixbank/pix/saga/registry"
	"github.com/pixbank/pix/saga/retention"
	"github.com/pixbank/pix/saga/transfer"
	"github.com/pixbank/pix/worker"
	"github.com/pixbank/pix/workflows"
)

// names records the names registered on it, as the SDK names them.
type names struct{ workflows, activities []string }

func (r *names) RegisterWorkflowWithOptions(_ any, o workflow.RegisterOptions) {
	r.workflows = append(r.workflows, o.Name)
}

func (r *names) RegisterActivity(a any) {
	v := reflect.ValueOf(a)
	if v.Kind() == reflect.Pointer && v.Elem().Kind() == reflect.Struct {
		// A struct of activities: the SDK registers each exported method.
		for m := range v.Type().Methods() {
			r.activities = append(r.activities, m.Name)
		}
		return
	}
	name := runtime.FuncForPC(v.Pointer()).Name()
	name = strings.TrimSuffix(name[strings.LastIndex(name, ".")+1:], "-fm")
	r.activities = append(r.activities, name)
}

func registered(f func(worker.Registry)) *names {
	r := &names{}
	f(r)
	slices.Sort(r.workflows)
	slices.Sort(r.activities)
	return r
}

// Each family's worker registers its family's workflows and activities; the
// credits' worker also the others', for the runs started on its queue
// before each family had one (see RegisterFamily).
func TestEachFamilyRegistersItsWorkflowsAndActivities(t *testing.T) {
	// Every saga's struct of activities, built from nothing (nothing is
	// called).
	var env saga.Env
	of := func(f runconf.Family) *names {
		return registered(func(r worker.Registry) { worker.RegisterFamily(r, registry.All, env, f) })
	}

	// The transfers' family hosts the transfer saga, and other sagas of
	// outgoing PIX (each pins its own names in its package's tests).
	transfers := of(runconf.Transfers)
	require.Contains(t, transfers.workflows, transfer.WorkflowName)
	transferActivities := []string{"AwaitSettlement", "RefundTransfer", "SettleTransfer", "SubmitTransfer"}
	require.Subset(t, transfers.activities, transferActivities)

	maintenance := of(runconf.Maintenance)
	require.Equal(t, []string{catchup.WorkflowName, reconcile.WorkflowName, retention.WorkflowName}, maintenance.workflows)
	catchUp := []string{"AdvanceCatchUp", "BeginCatchUp", "BeginManualCatchUp", "ListPSPPart", "ListPSPWindow"}
	legacyMaintenance := []string{"DeleteDoneInboxRows", "DeleteExpiredIdempotencyKeys", "DeletePublishedEvents", "ReconcileBooks"}
	require.ElementsMatch(t, append(catchUp, legacyMaintenance...), maintenance.activities)

	// Deploy safety: transfers, retention and reconciliation runs begun on
	// pix-credit before each family had its queue still find a worker
	// there.
	credits := of(runconf.Credits)
	require.Equal(t, []string{workflows.CreditWorkflowName, reconcile.WorkflowName, retention.WorkflowName, transfer.WorkflowName}, credits.workflows)
	require.Subset(t, credits.activities, append(transferActivities, legacyMaintenance...))
	// The PSP catch-up never ran on pix-credit: only the maintenance queue has it.
	for _, name := range catchUp {
		require.NotContains(t, credits.activities, name)
	}

	// Every activity is registered by one family; every family registers.
	var exported []string
	structs := map[reflect.Type]bool{}
	for _, d := range registry.All {
		structs[reflect.TypeOf(d.Deps(env))] = true
	}
	for s := range structs {
		for m := range s.Methods() {
			exported = append(exported, m.Name)
		}
	}
	var families []string
	for _, f := range runconf.Families {
		r := of(f)
		require.NotEmpty(t, r.workflows, "family %s registers no workflow", f)
		if f != runconf.Credits {
			families = append(families, r.activities...)
		}
	}
	families = append(families, "CreditAccount", "MarkCreditFailed")
	require.ElementsMatch(t, exported, families, "an activity of no family: add it to its saga's Activities (package saga)")
	all := registered(func(r worker.Registry) { worker.Register(r, registry.All, env) })
	require.ElementsMatch(t, exported, all.activities)
}
