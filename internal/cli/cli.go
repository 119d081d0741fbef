package cli

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

// Main runs run with the command's arguments and exits 1, printing the
// error prefixed with name, when it fails.
func Main(name string, run func(ctx context.Context, args []string) error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:])
	stop()
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		os.Exit(1)
	}
}
