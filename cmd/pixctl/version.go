package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/pixbank/pix/internal/buildinfo"
)

var versionCommand = &command{
	name: "version", summary: "print the build: version, revision, Go toolchain",
	about: `Prints pixctl's version, the VCS revision it was built from ("(modified)"
when the work tree had changes) and the Go toolchain, and asks nothing of the
service (pixd version prints the service's own build; its pix_build_info
metric too).
`,
	problem: "never",
	define: func(*flag.FlagSet) runner {
		return func(_ context.Context, inv *invocation, args []string) error {
			if len(args) > 0 {
				return usageErrorf("unexpected argument %q", args[0])
			}
			_, err := fmt.Fprintln(inv.out, "pixctl", buildinfo.Read())
			return err
		}
	},
}
