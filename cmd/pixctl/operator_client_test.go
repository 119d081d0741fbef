package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"
)

// An operator's client sends the admin token on any path (a saga's
// operator routes, such as POST /pix/credits/{id}/blocks, are not under
// /admin/), never the customer token; the customer's client keeps the
// customer token there.
func TestAnOperatorClientSendsTheAdminTokenOnAnyPath(t *testing.T) {
	t.Parallel()
	var got []string
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Method+" "+r.URL.Path+" "+r.Header.Get("Authorization"))
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{}`))
	}))
	defer api.Close()
	c := &apiClient{base: api.URL, adminToken: "admin-secret", customerToken: "customer-token"}
	ctx := context.Background()
	_, err := c.asOperator().call(ctx, http.MethodPost, "/pix/credits/E1/blocks", map[string]any{}, nil)
	require.NoError(t, err)
	_, err = c.asOperator().as("acc-1").call(ctx, http.MethodGet, "/pix/credits/E1/blocks", nil, nil)
	require.NoError(t, err)
	_, err = c.call(ctx, http.MethodGet, "/pix/credits/E1", nil, nil)
	require.NoError(t, err)
	require.Equal(t, []string{
		"POST /pix/credits/E1/blocks Bearer admin-secret",
		"GET /pix/credits/E1/blocks Bearer admin-secret",
		"GET /pix/credits/E1 Bearer customer-token",
	}, got)
}
