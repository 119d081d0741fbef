package sagakit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"go.temporal.io/api/serviceerror"
)

// Signaller signals a workflow's run: the Temporal client (client.Client),
// or a test's recorder.
type Signaller interface {
	SignalWorkflow(ctx context.Context, workflowID, runID, signalName string, arg any) error
}

// Signal sends the signal name, with arg, to the open run of workflowID. A
// workflow with no run open is no failure, and nothing is delivered (open
// false): never started, or closed (Temporal answers both "not found", the
// second as "workflow execution already completed"). Any other error is
// returned: the signal may or may not have been delivered.
func Signal(ctx context.Context, s Signaller, workflowID, name string, arg any) (open bool, err error) {
	err = s.SignalWorkflow(ctx, workflowID, "", name, arg)
	var notFound *serviceerror.NotFound
	switch {
	case errors.As(err, &notFound):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("signal %s to %s: %w", name, workflowID, err)
	}
	return true, nil
}

// WakeTimeout bounds a wake (Wake): the request that committed the change
// waits no longer for its run to be told.
const WakeTimeout = 5 * time.Second

// Wake signals the run of workflowID, once the change it must read is
// committed, to read its state again (a Timer's Signals): on a context of
// its own, which the request's end does not cancel, for at most
// WakeTimeout. A workflow with no run open has nothing to wake. Any other
// failure is logged, as lost, with attrs, the workflow id and the error:
// the run reads its state at its deadline anyway, which lost says ("…, its
// run not woken: it reads the block at its 72 hours"). The caller's answer does
// not depend on it: the change is committed.
func Wake(ctx context.Context, s Signaller, log *slog.Logger, workflowID, signal, lost string, attrs ...any) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), WakeTimeout)
	defer cancel()
	if _, err := Signal(ctx, s, workflowID, signal, nil); err != nil {
		log.WarnContext(ctx, lost, slices.Concat(attrs, []any{"workflow_id", workflowID, "error", err})...)
	}
}

// WakeAllTimeout bounds all the wakes of one commit together (WakeAll):
// the request that committed waits no longer, however many runs it tells.
const WakeAllTimeout = 2 * time.Second

// WakeAllAtOnce bounds the wakes WakeAll sends at once.
const WakeAllAtOnce = 8

// AWake is one run WakeAll tells: its workflow id, and the attrs its lost
// line carries.
type AWake struct {
	WorkflowID string
	Attrs      []any
}

// WakeAll signals each run of wakes, as Wake does, but concurrently (at
// most WakeAllAtOnce at once) and within one deadline, WakeAllTimeout, for
// them all: a commit that tells N runs (a credit filling the holds of
// several reports) waits WakeAllTimeout at most whatever N, not WakeTimeout
// per run one after another (past the activity's StartToClose, when
// Temporal does not answer). A wake not sent by the deadline is logged as
// lost, like a failed one: the run reads its state at its next look. Every
// goroutine started ends before WakeAll returns (the Signaller returns when
// its context ends).
func WakeAll(ctx context.Context, s Signaller, log *slog.Logger, signal, lost string, wakes []AWake) {
	if len(wakes) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), WakeAllTimeout)
	defer cancel()
	slots := make(chan struct{}, WakeAllAtOnce)
	var wg sync.WaitGroup
	defer wg.Wait()
	for _, w := range wakes {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
		}
		if err := ctx.Err(); err != nil {
			// Past the deadline (a slot freed as it passed may win the
			// select): not tried.
			log.WarnContext(ctx, lost, slices.Concat(w.Attrs, []any{"workflow_id", w.WorkflowID, "error", err})...)
			continue
		}
		wg.Add(1)
		go func() {
			defer func() { <-slots; wg.Done() }()
			if _, err := Signal(ctx, s, w.WorkflowID, signal, nil); err != nil {
				log.WarnContext(ctx, lost, slices.Concat(w.Attrs, []any{"workflow_id", w.WorkflowID, "error", err})...)
			}
		}()
	}
}
