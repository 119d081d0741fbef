package reconcile

// FencesChanged is what a run reports when the fences of the books were
// written since the last run (0041).
const FencesChanged = fencesChanged
