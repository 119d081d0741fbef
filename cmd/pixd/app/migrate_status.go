package app

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/internal/cli"
)

// pixd migrate status exits 0 when the database has every migration of this
// build, as this build has it; cli.ExitPending when migrations are pending,
// which pixd migrate applies; cli.ExitNeedsHuman when something pixd migrate
// can't mend (report.Problems): a migration changed since it was applied,
// one applied that the build does not have, one pending below the newest
// applied, an INVALID index; cli.ExitUnavailable when it could not ask.

// printMigrationStatus prints one line per migration, what needs a human,
// and a summary, and returns the exit status that sums it up (cli.Exit; nil
// for 0).
func printMigrationStatus(w io.Writer, report db.MigrationReport) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "VERSION\tMIGRATION\tSTATE\tAPPLIED AT (UTC)\tCHECKSUM")
	for _, m := range report.Migrations {
		state, at, sum := "pending", "-", "-"
		if m.Applied {
			state, at, sum = "applied", m.AppliedAt.UTC().Format("2006-01-02 15:04:05"), "ok"
			switch {
			case !m.InBuild:
				state, sum = "applied, not in this build", "-"
			case m.Changed():
				sum = "CHANGED"
			case m.RecordedChecksum == "":
				sum = "not recorded"
			}
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\n", m.Version, m.Name, state, at, sum)
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("print the status: %w", err)
	}
	if report.Legacy {
		fmt.Fprintln(w, "\nThe database was migrated by the runner before goose (schema_migrations): pixd migrate takes it over, recording the checksums, and runs nothing again.")
	}
	problems := report.Problems()
	for _, p := range problems {
		fmt.Fprintln(w, "\nneeds a human: "+p)
	}
	pending := len(report.Pending())
	switch {
	case len(problems) > 0:
		fmt.Fprintf(w, "\n%d problem(s) pixd migrate can't mend, %d migration(s) pending: see docs/operations.md, \"Migrations\".\n", len(problems), pending)
		return cli.Exit(cli.ExitNeedsHuman)
	case pending > 0:
		fmt.Fprintf(w, "\n%d migration(s) pending: pixd migrate applies them.\n", pending)
		return cli.Exit(cli.ExitPending)
	}
	fmt.Fprintln(w, "\nUp to date.")
	return nil
}
