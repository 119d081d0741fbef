package med

import "time"

// RunStep is the step the run takes (nextStep) on r at now, every change
// of the workflow's taken, as a run started today takes them.
func RunStep(r Report, now time.Time) Step {
	return runStep(r, now, func(string) bool { return true })
}
