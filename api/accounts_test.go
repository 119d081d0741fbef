package api_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/db/dbtest"
)

// GET /accounts/{id} shows what of the balance is held and what is
// available (I11); POST /pix may spend only the available part.
func TestAccountShowsWhatIsHeld(t *testing.T) {
	ctx := context.Background()
	store := dbtest.New(t)
	srv := newServer(t, store)
	dbtest.OpenAccount(t, store, "acc-1", 10_000)
	err := db.InTx(ctx, store.Pool(), func(tx pgx.Tx) error {
		_, _, err := db.Hold(ctx, tx, db.NewHold{Ref: "judicial:1", AccountID: "acc-1", AmountCents: 2_500, Kind: "judicial"})
		return err
	})
	require.NoError(t, err)

	r := do(t, http.MethodGet, srv.URL+"/accounts/acc-1", "", "")
	require.Equal(t, http.StatusOK, r.status)
	require.EqualValues(t, 10_000, r.body["balance_cents"])
	require.EqualValues(t, 2_500, r.body["held_cents"])
	require.EqualValues(t, 7_500, r.body["available_cents"])

	refused := postPix(t, srv.URL, uuid.NewString(), transferBody(t, "acc-1", 7_501))
	require.Equal(t, http.StatusUnprocessableEntity, refused.status)
	require.Equal(t, "insufficient_funds", refused.body["error"].(map[string]any)["code"])
	require.Equal(t, http.StatusCreated, postPix(t, srv.URL, uuid.NewString(), transferBody(t, "acc-1", 7_500)).status)
	r = do(t, http.MethodGet, srv.URL+"/accounts/acc-1", "", "")
	require.EqualValues(t, []any{2_500.0, 2_500.0, 0.0}, []any{r.body["balance_cents"], r.body["held_cents"], r.body["available_cents"]})
}
