package sagakit

import (
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/pixbank/pix/internal/rowscan"
)

// One reads the one row a statement returned (rs, and the query's err,
// checked first) into R by column name (rowscan.ByName: R's db tags, a
// column R does not know ignored): notFound when it returned none. A
// saga's store reads its table's rows so, its statements returning the
// row whole (RETURNING *).
func One[R any](rs pgx.Rows, err error, notFound error) (R, error) {
	var zero R
	if err != nil {
		return zero, err
	}
	r, err := pgx.CollectExactlyOneRow(rs, rowscan.ByName[R])
	if errors.Is(err, pgx.ErrNoRows) {
		return zero, notFound
	}
	if err != nil {
		return zero, err
	}
	return r, nil
}
