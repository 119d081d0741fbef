package sagatest

import (
	"context"
	"slices"
	"sync"

	"go.temporal.io/api/serviceerror"
)

// Signals records the signals a saga's routes send its runs, in place of
// the Temporal client (a sagakit.Signaller).
type Signals struct {
	mu      sync.Mutex
	sent    []string
	missing bool
}

// SignalWorkflow records "<workflow id> <signal>", or answers, once
// NoRunOpen was called, that no run is open (as Temporal does of a
// workflow never started or completed).
func (s *Signals) SignalWorkflow(_ context.Context, workflowID, _, name string, _ any) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.missing {
		return serviceerror.NewNotFound("workflow execution already completed")
	}
	s.sent = append(s.sent, workflowID+" "+name)
	return nil
}

// Sent are the signals delivered so far, "<workflow id> <signal>" each, in
// order.
func (s *Signals) Sent() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.sent)
}

// NoRunOpen makes every signal from now on find no run open.
func (s *Signals) NoRunOpen() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.missing = true
}
