package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// Exit statuses. A command that documents its statuses (pixctl) tells its
// failures apart with WithStatus; any other error is ExitProblem, so a
// command that does not is 0 or 1, as before.
const (
	ExitOK = 0
	// ExitProblem: the command ran and what it found is a failure (the
	// books do not balance, the service refused the request, ...).
	ExitProblem = 1
	// ExitUsage: the command was not called right (an unknown command or
	// flag, a missing argument, a setting that does not parse).
	ExitUsage = 2
	// ExitUnavailable: the command could not get an answer to trust (the
	// network, a timeout, the service's 5xx, its credentials refused).
	ExitUnavailable = 3
)

// statusError is an error with the exit status it ends the command with.
type statusError struct {
	status int
	err    error // nil: already reported
}

func (e *statusError) Error() string {
	if e.err == nil {
		return ""
	}
	return e.err.Error()
}

func (e *statusError) Unwrap() error { return e.err }

// WithStatus is err ending the command with status (nil stays nil). An
// error wrapping it (fmt.Errorf's %w) keeps the status.
func WithStatus(status int, err error) error {
	if err == nil {
		return nil
	}
	return &statusError{status: status, err: err}
}

// Exit ends the command with status, its reason already printed.
func Exit(status int) error { return &statusError{status: status} }

// Status is the exit status err ends a command with: 0 for nil, the status
// WithStatus or Exit gave it, else ExitProblem.
func Status(err error) int {
	var s *statusError
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &s):
		return s.status
	}
	return ExitProblem
}

// Report prints err, prefixed with name, to w (nothing when it was
// reported already) and returns its exit status.
func Report(w io.Writer, name string, err error) int {
	if err != nil && err.Error() != "" {
		fmt.Fprintf(w, "%s: %v\n", name, err)
	}
	return Status(err)
}

// Main runs run with the command's arguments and, when it fails, reports
// the error on stderr and exits with its status (Status).
func Main(name string, run func(ctx context.Context, args []string) error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:])
	stop()
	if err != nil {
		os.Exit(Report(os.Stderr, name, err))
	}
}
