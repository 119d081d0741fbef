package config

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// gRPC headers come from TEMPORAL_GRPC_META_*, which only the environment's
// list can show (Load); names normalised as envconfig does.
func TestTemporalGRPCHeaders(t *testing.T) {
	environ := []string{"TEMPORAL_GRPC_META_X_TENANT=pix", "PATH=/usr/bin"}
	env := map[string]string{"TEMPORAL_GRPC_META_X_TENANT": "pix", "PATH": "/usr/bin"}
	c, err := load(LookupIn(env), func() []string { return environ })
	require.NoError(t, err)
	opts, err := c.TemporalClientOptions()
	require.NoError(t, err)
	require.NotNil(t, opts.HeadersProvider)
	headers, err := opts.HeadersProvider.GetHeaders(context.Background())
	require.NoError(t, err)
	require.Equal(t, map[string]string{"x-tenant": "pix"}, headers)
}
