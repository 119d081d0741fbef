package app_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/pixbank/pix/cmd/pixd/app"
	"github.com/pixbank/pix/db/dbtest"
	"github.com/pixbank/pix/internal/config"
	"github.com/pixbank/pix/internal/logging"
	"github.com/pixbank/pix/internal/tooling/temporaltest"
	"github.com/pixbank/pix/workflows"
)

// temporal-setup runs right after a set-up script creates the namespace,
// which the server's registry may not know yet: the registration waits for
// it instead of failing the set-up.
func TestTemporalSetupWaitsForANamespaceCreatedAMomentAgo(t *testing.T) {
	srv := temporaltest.StartT(t)
	namespace := fmt.Sprintf("pix-setup-%d", time.Now().UnixNano())
	cfg := config.Default()
	cfg.DatabaseURL = dbtest.URL(t)
	cfg.TemporalAddress = srv.Address
	cfg.TemporalNamespace = namespace
	a, err := app.New(context.Background(), cfg, logging.New(io.Discard, "error"))
	require.NoError(t, err)
	t.Cleanup(a.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	// Without the wait, the registration fails while the namespace is unknown.
	_, err = workflows.RegisterSearchAttributes(ctx, srv.Client(t), namespace)
	var notFound *serviceerror.NamespaceNotFound
	require.True(t, errors.As(err, &notFound), "got %v", err)

	nsClient, err := client.NewNamespaceClient(client.Options{HostPort: srv.Address})
	require.NoError(t, err)
	defer nsClient.Close()
	created := make(chan error, 1)
	go func() {
		time.Sleep(1500 * time.Millisecond)
		created <- nsClient.Register(ctx, &workflowservice.RegisterNamespaceRequest{
			Namespace: namespace, WorkflowExecutionRetentionPeriod: durationpb.New(24 * time.Hour),
		})
	}()
	require.NoError(t, a.RegisterSearchAttributes(ctx))
	require.NoError(t, <-created)
	require.NoError(t, workflows.CheckSearchAttributes(ctx, srv.Client(t), namespace))
}
