package db_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/saga/catchup"
)

// pspCatchUpRow is the PSP catch-up's covered window as a table holds it.
type pspCatchUpRow struct{ CoveredUntil, UpdatedAt time.Time }

// coveredWindow is the row of covered_windows the PSP catch-up's runs read
// (saga/covered, name catchup.CoveredName); ok is false when there is none.
func coveredWindow(t *testing.T, s *db.Store) (row pspCatchUpRow, ok bool) {
	t.Helper()
	err := s.Pool().QueryRow(context.Background(), `SELECT covered_until, updated_at FROM covered_windows WHERE name = $1`, catchup.CoveredName).
		Scan(&row.CoveredUntil, &row.UpdatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return pspCatchUpRow{}, false
	}
	require.NoError(t, err)
	return row, true
}

// beforeCoveredCopy is a database as the release before 0045 left it:
// psp_catchup holding psp (nil: no window was ever covered) and
// covered_windows holding written (nil: none), the PSP catch-up's row a
// build with saga/covered may have written first.
func beforeCoveredCopy(t *testing.T, psp, written *pspCatchUpRow) *db.Store {
	t.Helper()
	ctx := context.Background()
	s := db.NewStore(migratedBelow(t, 45))
	if psp != nil {
		_, err := s.Pool().Exec(ctx, `INSERT INTO psp_catchup (covered_until, updated_at) VALUES ($1, $2)`, psp.CoveredUntil, psp.UpdatedAt)
		require.NoError(t, err)
	}
	if written != nil {
		_, err := s.Pool().Exec(ctx, `INSERT INTO covered_windows (name, covered_until, updated_at) VALUES ($1, $2, $3)`, catchup.CoveredName, written.CoveredUntil, written.UpdatedAt)
		require.NoError(t, err)
	}
	return s
}

// The PSP catch-up's covered end (the net under lost webhooks: every PIX
// the PSP created before it was listed into the inbox) comes through 0045
// exactly: an end moved forward would skip the PIX between, one moved back
// lists them again. A database whose catch-up never covered a window gets
// no row (its first run looks back PSP_CATCHUP_LOOKBACK); a row some build
// wrote in covered_windows first is its runs' own, listed, and stays as
// it is, whichever end is later; and 0045 run again changes nothing.
func TestThePSPCatchUpsCoveredEndComesThroughTheUpgradeExactly(t *testing.T) {
	ctx := context.Background()
	// An end as a release before whole-second windows recorded it (to the
	// microsecond, PostgreSQL's precision), from another clock than now.
	end := time.Date(2026, 12, 6, 14, 37, 12, 345678000, time.UTC)
	psp := pspCatchUpRow{CoveredUntil: end, UpdatedAt: end.Add(3*time.Second + 217*time.Microsecond)}

	t.Run("copied", func(t *testing.T) {
		s := beforeCoveredCopy(t, &psp, nil)
		applied, err := db.Migrate(ctx, s.Pool())
		require.NoError(t, err)
		require.Equal(t, migrationsFrom(t, 45), applied)

		row, ok := coveredWindow(t, s)
		require.True(t, ok, "the covered end was lost: the first run would look back only PSP_CATCHUP_LOOKBACK")
		require.True(t, row.CoveredUntil.Equal(end), "covered until %s, was %s", row.CoveredUntil, end)
		require.True(t, row.UpdatedAt.Equal(psp.UpdatedAt), "updated at %s, was %s", row.UpdatedAt, psp.UpdatedAt)
		until, ok, err := catchup.NewStore(s).CoveredUntil(ctx)
		require.NoError(t, err)
		require.True(t, ok)
		require.True(t, until.Equal(end), "the catch-up reads %s, psp_catchup said %s", until, end)
		var left time.Time
		require.NoError(t, s.Pool().QueryRow(ctx, `SELECT covered_until FROM psp_catchup`).Scan(&left))
		require.True(t, left.Equal(end), "psp_catchup stays for the builds before")

		// The catch-up advances from the copied end; 0045 run again (and
		// Migrate again, which applies nothing) leaves the advance.
		moved, err := catchup.NewStore(s).Advance(ctx, &end, end.Add(time.Minute))
		require.NoError(t, err)
		require.True(t, moved, "the catch-up's runs advance from the copied end")
		again, err := db.Migrate(ctx, s.Pool())
		require.NoError(t, err)
		require.Empty(t, again)
		_, err = s.Pool().Exec(ctx, migrationSQL(t, 45))
		require.NoError(t, err)
		row, _ = coveredWindow(t, s)
		require.True(t, row.CoveredUntil.Equal(end.Add(time.Minute)), "0045 run again moved the covered end back to %s", row.CoveredUntil)
	})

	t.Run("fresh install", func(t *testing.T) {
		s := beforeCoveredCopy(t, nil, nil)
		_, err := db.Migrate(ctx, s.Pool())
		require.NoError(t, err)
		_, ok := coveredWindow(t, s)
		require.False(t, ok, "no window was covered: none is made up")
	})

	// covered_windows' row is written only by runs that listed up to it
	// (covered.Store.Advance), and psp_catchup's too: each end is one that
	// was listed, and 0045 overwrites neither way.
	for name, written := range map[string]pspCatchUpRow{
		"a later end written first":    {CoveredUntil: end.Add(10 * time.Minute), UpdatedAt: end.Add(10 * time.Minute)},
		"an earlier end written first": {CoveredUntil: end.Add(-10 * time.Minute), UpdatedAt: end.Add(-10 * time.Minute)},
	} {
		t.Run(name, func(t *testing.T) {
			s := beforeCoveredCopy(t, &psp, &written)
			_, err := db.Migrate(ctx, s.Pool())
			require.NoError(t, err)
			row, ok := coveredWindow(t, s)
			require.True(t, ok)
			require.True(t, row.CoveredUntil.Equal(written.CoveredUntil), "covered until %s, the row written first said %s", row.CoveredUntil, written.CoveredUntil)
			require.True(t, row.UpdatedAt.Equal(written.UpdatedAt))
		})
	}
}

// migrationSQL is the embedded migration of version, as committed.
func migrationSQL(t *testing.T, version int64) string {
	t.Helper()
	all, err := db.Migrations()
	require.NoError(t, err)
	for _, m := range all {
		if m.Version == version {
			return m.SQL
		}
	}
	t.Fatalf("no migration %d", version)
	return ""
}
