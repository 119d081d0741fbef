package catchup

import (
	"context"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/pixbank/pix/internal/runconf"
	"github.com/pixbank/pix/workflows"
)

// WorkflowName is the registered name of Workflow, recorded in every run's
// history: never change it.
const WorkflowName = "PixPSPCatchUp"

// ScheduleID is the Temporal Schedule that runs the PSP catch-up
// of the workers of one TEMPORAL_TASK_QUEUE base (as retention.ScheduleID):
// pix-psp-catchup:pix-credit by default.
func ScheduleID(base string) string { return "pix-psp-catchup:" + base }

// WindowWorkflowID is the workflow ID of a catch-up of one window
// an operator asked for (pixctl psp catchup): its own, never the
// Schedule's, so that it runs beside the scheduled runs and moves nothing
// of theirs; the same window asked twice at once is one run.
func WindowWorkflowID(base string, start, end time.Time) string {
	return "pix-psp-catchup-window:" + base + ":" + start.UTC().Format(time.RFC3339) + "/" + end.UTC().Format(time.RFC3339)
}

// Input is the catch-up's input: none for the Schedule's runs,
// which list from the covered window's end; Window for an operator's, which
// lists that window (and moves the covered window only when it starts at
// or before its end). A run that listed partsPerRun parts continues
// as new with the rest of its window (Continued: Window as it stands, its
// fence included) and what it did so far (Sofar).
type Input struct {
	Window    *Window `json:",omitempty"`
	Continued bool    `json:",omitempty"`
	Sofar     *Result `json:",omitempty"`
}

// Result is what a run listed (with the runs it continued), in
// how many parts, and whether it advanced the covered window, up to
// CoveredUntil (a scheduled run whose start was moved meanwhile by another
// does not; nor does an operator's window that starts after the covered
// end).
type Result struct {
	Window       Window
	Counts       Counts
	Advanced     bool
	Parts        int        `json:",omitempty"`
	CoveredUntil *time.Time `json:",omitempty"`
}

var catchUp *Activities

// catchUpPartsVersion is the change id of the catch-up that lists a window
// part by part (Activities.ListPSPPart), advancing the covered
// window after each; runs begun before it (DefaultVersion) list their
// window whole, then advance (pspCatchUpWhole).
const catchUpPartsVersion = "pix-psp-catchup-parts"

// partsPerRun bounds the parts one run lists before it continues as
// new: its history stays small however far behind it is (a part is one
// listing activity and one advance).
const partsPerRun = 100

// Workflow lists the PSP's own record of the PIX it received (GET /pix)
// over one window into the inbox, through the inbox's listing path, so
// that a PIX whose webhook never came is credited all the same (once:
// its end_to_end_id is unique). A scheduled run's window runs from the end
// of the window covered last, less PSP_CATCHUP_OVERLAP, up to now less
// PSP_CATCHUP_GRACE. The window is listed part by part, each as large as
// one listing takes (ListPSPPart cuts it by time), and each part's end is
// recorded as covered once every page of it was stored, only from the
// value the run began from or last recorded: a run that fails or dies
// half-way keeps what it covered, and the next run lists on from there,
// skipping nothing. However large the window (an outage, a first run's
// lookback, a PSP of 2 PIX a page), the covered window moves forward at
// the PSP's pace, part after part, not at the Schedule's interval.
func Workflow(ctx workflow.Context, in Input) (Result, error) {
	short := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: 30 * time.Second, MaximumAttempts: 5},
	})
	// A part of many pages takes long: each page heartbeats, and a retry
	// goes on from the last page stored. A PSP that refuses us fails the
	// run after a few minutes of retries (pspNeedsAttention); the next run
	// of the Schedule lists on from the covered end.
	listing := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 2 * time.Hour,
		HeartbeatTimeout:    2 * time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute, MaximumAttempts: 10},
	})
	if workflow.GetVersion(ctx, catchUpPartsVersion, workflow.DefaultVersion, 1) == workflow.DefaultVersion {
		return pspCatchUpWhole(ctx, short, listing, in)
	}
	var out Result
	if in.Sofar != nil {
		out = *in.Sofar
	}
	var w Window
	switch {
	case in.Continued && in.Window != nil:
		w = *in.Window
	case in.Window != nil:
		if err := workflow.ExecuteActivity(short, catchUp.BeginManualCatchUp, *in.Window).Get(ctx, &w); err != nil {
			return out, err
		}
		out.Window = w
	default:
		if err := workflow.ExecuteActivity(short, catchUp.BeginCatchUp).Get(ctx, &w); err != nil {
			return out, err
		}
		out.Window = w
	}
	for parts := 0; ; parts++ {
		if parts == partsPerRun {
			return out, workflow.NewContinueAsNewError(ctx, WorkflowName, Input{Window: &w, Continued: true, Sofar: &out})
		}
		var part Part
		if err := workflow.ExecuteActivity(listing, catchUp.ListPSPPart, w).Get(ctx, &part); err != nil {
			return out, err
		}
		out.Counts.Add(part.Counts)
		out.Parts++
		if advances(w) && (w.CoveredFrom == nil || part.Through.After(*w.CoveredFrom)) {
			// (A part that ends before the covered end, within the
			// overlap, has nothing to record.)
			covered := w
			covered.End = part.Through
			var moved bool
			if err := workflow.ExecuteActivity(short, catchUp.AdvanceCatchUp, covered).Get(ctx, &moved); err != nil {
				return out, err
			}
			if !moved && !w.Manual {
				return out, nil // another run covered it: the next run goes on from there
			}
			w.CoveredFrom = nil // an operator's window whose fence was moved meanwhile lists on, moving nothing
			if moved {
				through := part.Through
				w.CoveredFrom, out.Advanced, out.CoveredUntil = &through, true, &through
			}
		}
		if !part.Through.Before(w.End) {
			return out, nil
		}
		w.Start, w.PartPages = part.Through, part.NextPartPages
	}
}

// advances is whether the covered window moves once a part of w is
// listed: a scheduled run's always (from CoveredFrom, or its first end);
// an operator's only from the covered end it started at or before.
func advances(w Window) bool { return !w.Manual || w.CoveredFrom != nil }

// pspCatchUpWhole is the catch-up of the runs begun before
// catchUpPartsVersion: the whole window in one listing, then its end
// recorded (a scheduled run's only).
func pspCatchUpWhole(ctx, short, listing workflow.Context, in Input) (Result, error) {
	var out Result
	if in.Window != nil {
		out.Window = *in.Window
		out.Window.Manual = true
	} else if err := workflow.ExecuteActivity(short, catchUp.BeginCatchUp).Get(ctx, &out.Window); err != nil {
		return out, err
	}
	if err := workflow.ExecuteActivity(listing, catchUp.ListPSPWindow, out.Window).Get(ctx, &out.Counts); err != nil {
		return out, err
	}
	if out.Window.Manual {
		return out, nil
	}
	err := workflow.ExecuteActivity(short, catchUp.AdvanceCatchUp, out.Window).Get(ctx, &out.Advanced)
	return out, err
}

// EnsureSchedule brings the PSP catch-up's Temporal Schedule to
// the configuration (every interval, runs never overlapping: a run still
// listing makes the next tick skip), its runs on the maintenance queue:
// created if missing, updated if it differs, an operator's pause kept
// (workflows.ScheduleSync.Ensure). An interval of 0 (PSP_CATCHUP_INTERVAL=0: the catch-up off)
// deletes the Schedule rather than pausing it: a paused Schedule still
// looks configured (and `temporal schedule unpause` would start it behind
// the configuration's back), while a deleted one is created again, at the
// configured interval, by the first worker that starts with the catch-up
// on. Its covered window stays in PostgreSQL: turned on again, it goes on
// from there. The runs already started are not stopped.
func EnsureSchedule(ctx context.Context, c client.Client, s workflows.ScheduleSync, queues runconf.TaskQueues, every time.Duration) error {
	id := ScheduleID(queues.Base)
	if every <= 0 {
		return s.Remove(ctx, c, id, "PSP_CATCHUP_INTERVAL=0")
	}
	return s.Ensure(ctx, c, workflows.ScheduleConfig{ID: id, TaskQueue: queues.Maintenance, Every: every, Workflow: WorkflowName, Args: []any{Input{}}})
}

// StartWindow starts the catch-up of one window an operator asked
// for (widened to whole seconds: WholeSeconds), on the
// maintenance queue, under its own workflow ID
// (WindowWorkflowID), or joins the run of the same window that
// is open already; the caller waits for its result.
func StartWindow(ctx context.Context, c client.Client, queues runconf.TaskQueues, start, end time.Time) (client.WorkflowRun, error) {
	w := WholeSeconds(Window{Start: start, End: end, Manual: true})
	start, end = w.Start, w.End // its ID names the window listed
	return c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                       WindowWorkflowID(queues.Base, start, end),
		TaskQueue:                queues.Maintenance,
		WorkflowIDConflictPolicy: enums.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		WorkflowIDReusePolicy:    enums.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
	}, WorkflowName, Input{Window: &w})
}
