package sagakit

import (
	"time"

	"go.temporal.io/sdk/workflow"
)

// Timer is a durable timer a signal wakes, for a run that waits for a
// deadline its state gives (a scheduled PIX's date, a hold's 72 hours) and
// that an actor may end early (a cancel, a release, a return), as
// samples-go's updatabletimer. The signal only wakes the run: its payload
// is not read, and the run reads its state again (Reread), which says
// whether it still waits and until when. A signal without the change it
// announces (lost, forged, early) changes nothing; a signal lost delays the
// change to the deadline at most, where the run reads its state anyway.
//
// The actor writes its change first, in the saga's row under its lock, and
// signals after the commit (Wake); the run decides only on what it reads.
type Timer struct {
	// Signals are the names of the signal channels that wake the run.
	Signals []string
	// Until is the deadline from the state the run last read, and whether
	// the run waits at all (false: the state says the wait is over).
	Until func() (deadline time.Time, waiting bool)
	// Reread reads the state again after a signal (an activity): Until
	// answers from what it read.
	Reread func(ctx workflow.Context) error
	// Drain (opt-in) makes a wake receive every signal already pending on
	// Signals before the one Reread: a burst of signals costs one Reread,
	// not one each. Off, each signal is a wake (the histories recorded so,
	// saga/scheduled's, replay on it).
	Drain bool
	// Woken (opt-in), when set, is asked at each wake before Reread: false
	// ends Sleep (nil) without Reread, the run's budget of wakes spent; the
	// caller reads its state and continues as new. Nil: no budget.
	Woken func() bool
}

// Sleep waits as the run's state says: until the deadline, or, woken by a
// signal, reads the state again and waits on (until a new deadline), for
// as long as the state says the run waits. It returns nil when the wait is
// over, the deadline reached or the state read saying it no longer waits,
// and Reread's error. The caller then acts on its state.
//
// Its commands, recorded in the run's history, are per turn a timer until
// the deadline, and on a signal the timer's cancel then Reread's: a
// deadline already past records nothing. Recorded histories replay on
// them (saga/scheduled's testdata): change them only behind
// workflow.GetVersion.
func (t Timer) Sleep(ctx workflow.Context) error {
	channels := make([]workflow.ReceiveChannel, len(t.Signals))
	for i, name := range t.Signals {
		channels[i] = workflow.GetSignalChannel(ctx, name)
	}
	for {
		deadline, waiting := t.Until()
		if !waiting {
			return nil
		}
		wait := deadline.Sub(workflow.Now(ctx))
		if wait <= 0 {
			return nil
		}
		timerCtx, stopTimer := workflow.WithCancel(ctx)
		due := false
		sel := workflow.NewSelector(ctx)
		sel.AddFuture(workflow.NewTimer(timerCtx, wait), func(workflow.Future) { due = true })
		for _, ch := range channels {
			sel.AddReceive(ch, func(c workflow.ReceiveChannel, _ bool) { c.Receive(ctx, nil) })
		}
		sel.Select(ctx)
		if due {
			return nil
		}
		stopTimer()
		if t.Drain {
			for _, ch := range channels {
				for ch.ReceiveAsync(nil) {
				}
			}
		}
		if t.Woken != nil && !t.Woken() {
			return nil
		}
		if err := t.Reread(ctx); err != nil {
			return err
		}
	}
}
