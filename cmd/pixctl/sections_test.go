package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"
)

// show prints a saga's section of a credit's view, which it has no row
// for, under the section's name, after the credit and its refunds; a view
// without one prints none.
func TestShowPrintsTheSectionsOfOtherSagas(t *testing.T) {
	const e2e = "E1234567820261129120000000000001"
	views := map[string]string{
		e2e: `{"end_to_end_id":"` + e2e + `","source":"native","account_id":"acc-1","amount_cents":500,"status":"done",` +
			`"attempts":1,"last_error":null,"deliveries":1,"received_at":"2026-11-29T12:00:00Z","processed_at":null,` +
			`"credited_at":null,"workflow_id":"pix-credit:` + e2e + `","workflow_status":"Completed","temporal_ui_url":"http://ui",` +
			`"refunds":[{"id":"R1","end_to_end_id":"` + e2e + `","account_id":"acc-1","amount_cents":100,"status":"returned"}],` +
			`"blocks":[{"id":"B1","amount_cents":200,"status":"active"}],"med":{"report":"open"}}`,
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(views[r.URL.Path[len("/admin/pix/credits/"):]]))
	}))
	t.Cleanup(srv.Close)
	var out bytes.Buffer
	require.NoError(t, show(context.Background(), &apiClient{base: srv.URL, adminToken: "adm"}, e2e, false, &out))
	printed := out.String()
	require.Contains(t, printed, "\nrefunds\n")
	require.Contains(t, printed, "\nblocks\n  [\n    {\n      \"id\": \"B1\",")
	require.Contains(t, printed, "\nmed\n  {\n    \"report\": \"open\"\n  }\n")
	require.Less(t, bytes.Index(out.Bytes(), []byte("\nrefunds\n")), bytes.Index(out.Bytes(), []byte("\nblocks\n")))
	require.Less(t, bytes.Index(out.Bytes(), []byte("\nblocks\n")), bytes.Index(out.Bytes(), []byte("\nmed\n")), "in the API's order")
	for _, member := range shownMembers {
		require.NotContains(t, printed, "\n"+member+"\n  ", "%s is a row, not a section", member)
	}
}
