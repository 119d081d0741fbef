package med

import (
	"context"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/pixbank/pix/internal/runconf"
	"github.com/pixbank/pix/saga/covered"
	"github.com/pixbank/pix/workflows"
)

// ListerWorkflowName is the registered name of ListerWorkflow, recorded in
// every run's history: never change it.
const ListerWorkflowName = "PixMEDDICTLister"

// ListerScheduleID is the Schedule of the DICT's lister of the workers of
// one TEMPORAL_TASK_QUEUE base: pix-med-dict-lister:pix-credit by default.
func ListerScheduleID(base string) string { return "pix-med-dict-lister:" + base }

// ListerInput is a run's input: none for the Schedule's runs, which list
// from the covered end; a run that listed listerPartsPerRun parts continues
// as new with the rest of its window (Window, its fence included) and what
// it did so far (Sofar).
type ListerInput struct {
	Window *covered.Window `json:",omitempty"`
	Sofar  *ListerResult   `json:",omitempty"`
}

// ListerResult is what a run took (with the runs it continued), in how
// many parts, and how far it advanced the covered window (CoveredUntil;
// nil: not at all, another run covered it, or nothing new).
type ListerResult struct {
	Window           covered.Window
	Reports, Refunds int
	Parts            int
	CoveredUntil     *time.Time `json:",omitempty"`
}

var lister *Lister

// listerPartsPerRun bounds the parts one run lists before it continues as
// new: its history stays small however far behind it is.
const listerPartsPerRun = 100

// ListerWorkflow lists the DICT's infraction reports and refund requests
// modified within a window into the saga's doors (Lister.ListDICTPart), the
// way the PSP catch-up lists GET /pix: the window runs from the covered end
// less MED_DICT_LIST_OVERLAP to now less MED_DICT_LIST_GRACE (covered.Begin),
// is listed part by part, and each part's end is recorded covered once all
// of it was handed, only from the value the run began from or last
// recorded (covered.Store.Advance): a run that fails or dies half-way
// keeps what it covered, a late one records nothing, and the next run
// lists on from the covered end, skipping nothing.
func ListerWorkflow(ctx workflow.Context, in ListerInput) (ListerResult, error) {
	short := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: 30 * time.Second, MaximumAttempts: 5},
	})
	// A part of many pages takes long: each item heartbeats, and a retry
	// goes on from the last instant handed. A DICT that keeps failing
	// fails the run after a few minutes; the next run lists on.
	listing := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: time.Hour,
		HeartbeatTimeout:    2 * time.Minute,
		RetryPolicy: &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute, MaximumAttempts: 10,
			NonRetryableErrorTypes: []string{ListedType}},
	})
	var out ListerResult
	if in.Sofar != nil {
		out = *in.Sofar
	}
	var w covered.Window
	if in.Window != nil {
		w = *in.Window
	} else {
		if err := workflow.ExecuteActivity(short, lister.BeginDICTList).Get(ctx, &w); err != nil {
			return out, err
		}
		out.Window = w
	}
	for parts := 0; ; parts++ {
		if parts == listerPartsPerRun {
			return out, workflow.NewContinueAsNewError(ctx, ListerWorkflowName, ListerInput{Window: &w, Sofar: &out})
		}
		var part ListPart
		if err := workflow.ExecuteActivity(listing, lister.ListDICTPart, w).Get(ctx, &part); err != nil {
			return out, err
		}
		out.Reports, out.Refunds, out.Parts = out.Reports+part.Reports, out.Refunds+part.Refunds, out.Parts+1
		if w.CoveredFrom == nil || part.Through.After(*w.CoveredFrom) {
			// (A part that ends before the covered end, within the overlap,
			// has nothing to record.)
			adv := w
			adv.End = part.Through
			var moved bool
			if err := workflow.ExecuteActivity(short, lister.AdvanceDICTList, adv).Get(ctx, &moved); err != nil {
				return out, err
			}
			if !moved {
				return out, nil // another run covered it: the next goes on from there
			}
			through := part.Through
			w.CoveredFrom, out.CoveredUntil = &through, &through
		}
		if !part.Through.Before(w.End) {
			return out, nil
		}
		w.Start = part.Through
	}
}

// EnsureListerSchedule brings the lister's Schedule to the configuration
// (every interval, runs never overlapping), its runs on the saga's queue
// (the devoluções'): created if missing, updated if it differs, an
// operator's pause kept (workflows.ScheduleSync.Ensure). MED without the
// DICT (MED_DICT_DISABLED=true, or no MED_DICT_URL) or an interval of 0
// deletes it; its covered window stays in PostgreSQL: turned on again, it
// goes on from there.
func EnsureListerSchedule(ctx context.Context, c client.Client, s workflows.ScheduleSync, queues runconf.TaskQueues, st Settings) error {
	id := ListerScheduleID(queues.Base)
	if off := st.listerOff(); off != "" {
		return s.Remove(ctx, c, id, off)
	}
	return s.Ensure(ctx, c, workflows.ScheduleConfig{ID: id, TaskQueue: queues.Of(runconf.Refunds), Every: st.ListInterval,
		Workflow: ListerWorkflowName, Args: []any{ListerInput{}}})
}

// listerOff says why st schedule no lister ("": they do): MED without the
// DICT, or an interval of 0.
func (st Settings) listerOff() string {
	switch {
	case st.DICT.BaseURL == "":
		return "MED_DICT_DISABLED=true"
	case st.ListInterval <= 0:
		return "MED_DICT_LIST_INTERVAL=0"
	}
	return ""
}
