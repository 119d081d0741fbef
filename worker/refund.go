package worker

import (
	"go.temporal.io/sdk/workflow"

	"github.com/pixbank/pix/workflows"
)

func registerRefunds(w Registry, d Deps) {
	w.RegisterWorkflowWithOptions(workflows.RefundPix, workflow.RegisterOptions{Name: workflows.RefundWorkflowName})
	w.RegisterActivity(d.Refunds)
}
