package med_test

import (
	"context"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/api"
	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/saga/med"
	"github.com/pixbank/pix/saga/sagatest"
)

// An item quarantined with an id the DICT wrote with a '/' in it (no uuid:
// listed quoted, "a/b") is cleared by its dict_id as listed, sent
// percent-encoded (%2F, as pixctl med quarantine clear sends it) or not:
// the route takes the rest of the path as the id. Before, the route's id
// was one segment, and such an item answered 404 (no route) whatever the
// operator sent: it could not be cleared. A customer's token is refused
// (403) on it as on every operator route.
func TestAQuarantinedIDWithASlashIsCleared(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	h := &med.Handlers{Store: f.store, Keys: f.s, Temporal: &sagatest.Signals{}, Log: sagatest.Discard()}
	c := f.credit(10_000, 0)
	a := sagatest.NewAPI(t, f.s, sagatest.Options{
		Sagas: []api.SagaHTTP{api.CreditHTTP(), h.HTTP()},
		Deps:  api.Deps{Keys: db.KeyPolicy{LockFor: time.Minute, KeepFor: time.Hour}, Temporal: noRuns{}},
		Callers: sagatest.Callers{
			"ops":      sagatest.Operator("ops-1"),
			"customer": sagatest.Customer("cust", c.AccountID),
		}})
	at := time.Now().Add(-time.Minute).UTC().Truncate(time.Microsecond)
	for _, id := range []string{"a/b", "x/../y/"} {
		_, err := f.store.Quarantine(ctx, med.Quarantined{Kind: med.QuarantinedRefund, ID: id, LastModified: at, Reason: "dict_malformed:Id"})
		require.NoError(t, err)
	}
	items, err := f.store.QuarantinedItems(ctx, nil, 10)
	require.NoError(t, err)
	require.Len(t, items, 2)

	through := "?through=" + url.QueryEscape(at.Format(time.RFC3339Nano))
	status, got := a.Call(http.MethodDelete, "/pix/med/quarantine/refund/"+url.PathEscape(`"a/b"`)+through, "customer", "", nil)
	require.Equal(t, http.StatusForbidden, status, "%v", got)
	require.Equal(t, "insufficient_scope", sagatest.Code(got))

	status, got = a.Call(http.MethodDelete, "/pix/med/quarantine/refund/"+url.PathEscape(`"a/b"`)+through, "ops", "", nil)
	require.Equal(t, http.StatusOK, status, "escaped: %v", got)
	require.Equal(t, `"a/b"`, got["dict_id"])
	require.Len(t, got["cleared"], 1)
	status, got = a.Call(http.MethodDelete, "/pix/med/quarantine/refund/"+url.PathEscape(`"a/b"`)+through, "ops", "", nil)
	require.Equal(t, http.StatusNotFound, status, "%v", got)
	require.Equal(t, "med_quarantine_not_found", sagatest.Code(got))

	status, got = a.Call(http.MethodDelete, "/pix/med/quarantine/refund/"+url.PathEscape(`"x/../y/"`)+through, "ops", "", nil)
	require.Equal(t, http.StatusOK, status, "a dot segment and a trailing slash: %v", got)
	require.Equal(t, `"x/../y/"`, got["dict_id"])

	status, got = a.Call(http.MethodDelete, "/pix/med/quarantine/refund/"+through, "ops", "", nil)
	require.Equal(t, http.StatusBadRequest, status, "no id: %v", got)
	items, err = f.store.QuarantinedItems(ctx, nil, 10)
	require.NoError(t, err)
	require.Empty(t, items)
}
