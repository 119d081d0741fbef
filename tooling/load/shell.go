package load

import (
	"context"
	"fmt"
	"os/exec"
)

// Shell runs a command line with bash, for the hooks that scripts hand to
// the load and fault commands (pause a process, stop PostgreSQL, ...).
func Shell(ctx context.Context, line string) error {
	if b, err := exec.CommandContext(ctx, "bash", "-c", line).CombinedOutput(); err != nil {
		return fmt.Errorf("%s: %w: %s", line, err, b)
	}
	return nil
}
