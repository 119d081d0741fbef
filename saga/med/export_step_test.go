package med

import "time"

// RunStep is the step the run takes (nextStep) on r at now, every change
// of the workflow's taken, as a run started today takes them.
func RunStep(r Report, now time.Time) Step {
	return runStep(r, now, func(string) bool { return true })
}

// RunStepWithout is RunStep of a run recorded before the change: every
// other change taken.
func RunStepWithout(r Report, now time.Time, change string) Step {
	return runStep(r, now, func(c string) bool { return c != change })
}

// RejectedAtTheDICT is rejectedAtTheDICT: the stub's store skips the
// return_until checks for it, as the store does.
func RejectedAtTheDICT(r Report) bool { return rejectedAtTheDICT(r) }

// ClosedRejected is closedRejected: the model's hold stops filling as the
// store's (stopFilling) where it holds.
func ClosedRejected(r Report) bool { return closedRejected(r) }
