package db_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/db/dbtest"
)

// The service's sessions end a transaction left idle (a forgotten one
// would hold every snapshot's xmin back, and the reconciliation's
// checkpoint with it), unless DATABASE_URL says otherwise.
func TestPoolEndsAnIdleTransaction(t *testing.T) {
	ctx := context.Background()
	u := dbtest.URL(t)
	for url, want := range map[string]string{u: "5min", u + "&idle_in_transaction_session_timeout=30s": "30s"} {
		pool, err := db.Open(ctx, url, 1)
		require.NoError(t, err)
		var got string
		require.NoError(t, pool.QueryRow(ctx, `SHOW idle_in_transaction_session_timeout`).Scan(&got))
		pool.Close()
		require.Equal(t, want, got, url)
	}
}
