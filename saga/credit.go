package saga

import (
	"slices"

	"go.temporal.io/sdk/workflow"

	"github.com/pixbank/pix/activities"
	"github.com/pixbank/pix/api"
	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/internal/durable"
	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/internal/runconf"
	"github.com/pixbank/pix/workflows"
)

// The credit of a received PIX (workflows/credit.go), started from the
// inbox.
var Credit = Descriptor{
	Name:      "credit",
	Family:    runconf.Credits,
	Workflows: map[string]any{workflows.CreditWorkflowName: workflows.CreditPix},
	// AutoUpgrade: a credit lasts seconds and is the money-in path, so it
	// never waits for a build a rolling restart has stopped; its changes
	// stay replayable (GetVersion, the replay tests), as they always had to.
	Versioning: workflow.VersioningBehaviorAutoUpgrade,
	Deps:       sharedActivities,
	Activities: func(deps any) []any {
		a := deps.(*activities.Activities)
		return []any{
			a.CreditAccount, // a local activity
			a.MarkCreditFailed,
		}
	},
	Source: func(env Env, taskQueue string) durable.Source {
		return workflows.CreditSource(env.Store.InboxQueue(), taskQueue, env.Cfg.Retry(), workflows.CreditInputListingVersion(env.Cfg.CreditListingInInput))
	},
	// The core's: the credit's own, and the money API's (holds), which
	// every saga uses.
	Kinds:  slices.Concat(pix.CreditKinds, pix.HoldKinds),
	Events: db.CoreEvents,
	HTTP:   inAPI(api.CreditHTTP),
}
