package app

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/internal/cli"
)

var appliedAt = time.Date(2026, 11, 30, 9, 15, 0, 0, time.UTC)

func applied(version int64, name string) db.MigrationState {
	return db.MigrationState{Version: version, Name: name, InBuild: true, Applied: true, AppliedAt: appliedAt, Checksum: "aa", RecordedChecksum: "aa"}
}

func pending(version int64, name string) db.MigrationState {
	return db.MigrationState{Version: version, Name: name, InBuild: true, Checksum: "bb"}
}

func TestMigrationStatusExitStatus(t *testing.T) {
	changed := applied(2, "0002_b.sql")
	changed.Checksum = "cc"
	unknown := applied(9, "0009_later.sql")
	unknown.InBuild, unknown.Checksum = false, ""
	legacy := applied(1, "0001_a.sql")
	legacy.RecordedChecksum = ""
	for _, c := range []struct {
		name   string
		report db.MigrationReport
		want   int
		lines  []string
	}{
		{"current", db.MigrationReport{Migrations: []db.MigrationState{applied(1, "0001_a.sql")}}, cli.ExitOK,
			[]string{"1        0001_a.sql  applied  2026-11-30 09:15:00  ok", "Up to date."}},
		{"pending", db.MigrationReport{Migrations: []db.MigrationState{applied(1, "0001_a.sql"), pending(2, "0002_b.sql")}}, cli.ExitPending,
			[]string{"2        0002_b.sql  pending  -", "1 migration(s) pending: pixd migrate applies them."}},
		{"legacy", db.MigrationReport{Legacy: true, Migrations: []db.MigrationState{legacy, pending(2, "0002_b.sql")}}, cli.ExitPending,
			[]string{"not recorded", "pixd migrate takes it over"}},
		{"changed", db.MigrationReport{Migrations: []db.MigrationState{applied(1, "0001_a.sql"), changed}}, cli.ExitNeedsHuman,
			[]string{"CHANGED", "needs a human: 0002_b.sql changed since it was applied", "1 problem(s)"}},
		{"newer build", db.MigrationReport{Migrations: []db.MigrationState{applied(1, "0001_a.sql"), unknown}}, cli.ExitNeedsHuman,
			[]string{"applied, not in this build", "needs a human: 0009_later.sql (version 9) is applied but not in this build"}},
		{"invalid index", db.MigrationReport{Migrations: []db.MigrationState{applied(1, "0001_a.sql"), pending(2, "0002_b.sql")}, InvalidIndexes: []string{"x_idx"}},
			cli.ExitNeedsHuman, []string{"needs a human: index x_idx is INVALID", "1 problem(s) pixd migrate can't mend, 1 migration(s) pending"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var out bytes.Buffer
			require.Equal(t, c.want, cli.Status(printMigrationStatus(&out, c.report)))
			for _, l := range c.lines {
				require.Contains(t, out.String(), l)
			}
		})
	}
}
