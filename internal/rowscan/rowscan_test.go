package rowscan_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/db/dbtest"
	"github.com/pixbank/pix/internal/rowscan"
)

type inner struct {
	Gen int64 `db:"gen"`
}

// thing is a row as a store reads it: tagged fields, an untagged one (by
// name, underscores aside), one ignored, one unexported, one embedded.
type thing struct {
	ID        string    `db:"id"`
	Status    string    `db:"status,omitempty"`
	CreatedAt time.Time // created_at
	Note      string    `db:"-"`
	secret    string
	inner
}

func connect(t *testing.T) *pgx.Conn {
	t.Helper()
	if testing.Short() {
		t.Skip("needs PostgreSQL")
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dbtest.BaseURL())
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	_, err = conn.Exec(ctx, `CREATE TYPE pg_temp.added_mood AS ENUM ('later')`)
	require.NoError(t, err)
	return conn
}

// later is a row of thing's table after a migration added columns the
// build reading it does not know: a jsonb, a numeric, and one of a type
// pgx has not registered (an enum made here).
const later = `SELECT 'r1' AS id, '{"k": [1, 2]}'::jsonb AS added_doc, 'open' AS status,
	timestamptz '2026-12-07 12:00:00Z' AS created_at, 12345678901234567890.5::numeric AS added_amount,
	7::bigint AS gen, 'later'::pg_temp.added_mood AS added_mood`

func laterRows(t *testing.T, conn *pgx.Conn) pgx.Rows {
	t.Helper()
	rs, err := conn.Query(context.Background(), later)
	require.NoError(t, err)
	return rs
}

func TestByNameDiscardsColumnsTheStructDoesNotKnow(t *testing.T) {
	conn := connect(t)
	got, err := pgx.CollectExactlyOneRow(laterRows(t, conn), rowscan.ByName[thing])
	require.NoError(t, err)
	require.Equal(t, thing{ID: "r1", Status: "open", CreatedAt: time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC).Local(),
		inner: inner{Gen: 7}}, got)
	require.Empty(t, got.secret, "unexported: never read")
}

// pgx's scanners, the stores' before ByName, refuse the same row: the
// older build's reads fail until it is replaced.
func TestPgxByNameRefusesColumnsTheStructDoesNotKnow(t *testing.T) {
	conn := connect(t)
	_, err := pgx.CollectExactlyOneRow(laterRows(t, conn), pgx.RowToStructByName[thing])
	require.ErrorContains(t, err, "struct doesn't have corresponding row field added_doc")
	_, err = pgx.CollectExactlyOneRow(laterRows(t, conn), pgx.RowToStructByNameLax[thing])
	require.ErrorContains(t, err, "struct doesn't have corresponding row field added_doc")
}

// A field without its column is refused (see the package's comment), not
// read as a zero.
func TestByNameRefusesAFieldWithoutItsColumn(t *testing.T) {
	conn := connect(t)
	rs, err := conn.Query(context.Background(), `SELECT 'r1' AS id, 'open' AS status, now() AS created_at`)
	require.NoError(t, err)
	_, err = pgx.CollectExactlyOneRow(rs, rowscan.ByName[thing])
	require.ErrorContains(t, err, "no column gen in the row for field Gen")
}

// wide is a row of 40 columns, a store's widest table and more, read by
// the struct of its first 36: a build that four added columns passed by.
type wide struct {
	C00, C01, C02, C03, C04, C05, C06, C07, C08, C09 int64
	C10, C11, C12, C13, C14, C15, C16, C17, C18, C19 int64
	C20, C21, C22, C23, C24, C25, C26, C27, C28, C29 int64
	C30, C31, C32, C33, C34, C35                     int64
}

// fakeRow is a row that scans nothing: what the benchmark measures is the
// scanner's own cost (the matching, its cache, the targets), not decoding.
type fakeRow struct{ cols []pgconn.FieldDescription }

func (r fakeRow) FieldDescriptions() []pgconn.FieldDescription { return r.cols }
func (r fakeRow) Scan(...any) error                            { return nil }
func (r fakeRow) Values() ([]any, error)                       { return nil, nil }
func (r fakeRow) RawValues() [][]byte                          { return nil }

func wideRow(n int) fakeRow {
	cols := make([]pgconn.FieldDescription, n)
	for i := range cols {
		cols[i].Name = "c" + string(rune('0'+i/10)) + string(rune('0'+i%10))
	}
	return fakeRow{cols}
}

func BenchmarkWideRow(b *testing.B) {
	b.Run("pgx.RowToStructByName", func(b *testing.B) {
		row := wideRow(36) // pgx reads only a row of exactly its fields
		for b.Loop() {
			if _, err := pgx.RowToStructByName[wide](row); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("rowscan.ByName", func(b *testing.B) {
		row := wideRow(36)
		for b.Loop() {
			if _, err := rowscan.ByName[wide](row); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("rowscan.ByName/4_columns_added", func(b *testing.B) {
		row := wideRow(40)
		for b.Loop() {
			if _, err := rowscan.ByName[wide](row); err != nil {
				b.Fatal(err)
			}
		}
	})
}
