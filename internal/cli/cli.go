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

// Exit statuses: one table for pixd and pixctl, so that a status means the
// same whichever binary a script runs (docs/cli.md). A command tells its
// failures apart with WithStatus; any other error is ExitProblem, so a
// command that does not is 0 or 1. A status keeps its meaning for good: a
// new outcome takes a new number (pixd migrate status's "pending" was 3,
// which pixctl already used for "could not ask", and moved to 5).
const (
	ExitOK = 0
	// ExitProblem: the command ran and what it found is a failure (the
	// books do not balance, the service refused the request, ...), or it
	// failed in a way no other status names.
	ExitProblem = 1
	// ExitUsage: the command was not called right (an unknown command or
	// flag, a missing argument, a setting that does not parse).
	ExitUsage = 2
	// ExitUnavailable: the command could not get an answer to trust (the
	// network, a timeout, the service's 5xx, its credentials refused, the
	// database unreachable).
	ExitUnavailable = 3
	// ExitNeedsHuman: the command found something that no command of this
	// build mends (pixd migrate status: a migration changed since it was
	// applied, an INVALID index, ...).
	ExitNeedsHuman = 4
	// ExitPending: the command found work that a command of this build
	// does (pixd migrate status: migrations pending, which pixd migrate
	// applies).
	ExitPending = 5
)

// Statuses are the exit statuses with their meanings, in order: what the
// binaries' help prints and docs/cli.md tabulates (a test holds them to it).
var Statuses = []struct {
	Code    int
	Meaning string
}{
	{ExitOK, "done (pixd migrate status: up to date)"},
	{ExitProblem, "the command ran and found a problem, or failed otherwise (the error is printed)"},
	{ExitUsage, "usage: an unknown command or flag, a missing or extra argument, a setting that does not parse"},
	{ExitUnavailable, "could not ask: the service, NATS or PostgreSQL unreachable, a timeout, a 5xx, credentials refused"},
	{ExitNeedsHuman, "something needs a human (pixd migrate status)"},
	{ExitPending, "work pending that the build does (pixd migrate status: pixd migrate applies it)"},
}

// PrintStatuses prints the exit-status table, for a command's help.
func PrintStatuses(w io.Writer) {
	fmt.Fprintln(w, "exit status:")
	for _, s := range Statuses {
		fmt.Fprintf(w, "  %d  %s\n", s.Code, s.Meaning)
	}
}

// IsHelp reports whether arg asks for help, as the flag package takes it
// (-h, -help, with one dash or two): pixd and pixctl answer it with their
// usage on stdout, exit 0, and run nothing.
func IsHelp(arg string) bool {
	return arg == "-h" || arg == "--h" || arg == "-help" || arg == "--help"
}

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
