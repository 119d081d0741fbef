//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/internal/broker"
	"github.com/pixbank/pix/internal/broker/eventschema"
	"github.com/pixbank/pix/internal/pix"
)

// A credit and a transfer, through the whole service: their events reach
// the broker, once each, a transfer's in commit order, each as its JSON
// Schema says (docs/events.md).
func TestEventsOfACreditAndATransferReachTheBroker(t *testing.T) {
	ctx := context.Background()
	s := newStack(t, shared, nil)
	nc, err := broker.Connect(s.natsURL, t.Name())
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	require.NoError(t, err)

	s.openAccount("acc-1", 100_000)
	id := pixID()
	require.Equal(t, http.StatusAccepted, s.post(webhook{id, "acc-1", 2_500}).Status)
	s.waitStatus(id, pix.StatusDone, 30*time.Second)
	r := s.sendPix(uuid.NewString(), "acc-1", 15_000, "maria@example.com")
	require.Equal(t, http.StatusCreated, r.Status)
	transferID := r.Body["id"].(string)
	s.waitTransfer(transferID, pix.TransferSettled, 30*time.Second)

	var events []broker.Envelope
	require.Eventually(t, func() bool {
		l, err := s.store.OutboxLag(ctx)
		require.NoError(t, err)
		return l.Unpublished == 0
	}, 30*time.Second, 50*time.Millisecond, "the relay publishes every event")
	stream, err := js.Stream(ctx, broker.StreamName)
	require.NoError(t, err)
	cons, err := stream.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{})
	require.NoError(t, err)
	batch, err := cons.Fetch(10, jetstream.FetchMaxWait(2*time.Second))
	require.NoError(t, err)
	schemas, err := eventschema.New()
	require.NoError(t, err)
	for m := range batch.Messages() {
		require.NoError(t, schemas.Message(m.Data()), "%s", m.Data())
		var e broker.Envelope
		require.NoError(t, json.Unmarshal(m.Data(), &e))
		require.Equal(t, broker.Subject(e.Type), m.Subject())
		require.Equal(t, e.ID, m.Headers().Get(jetstream.MsgIDHeader), "the broker deduplicates by the event id")
		events = append(events, e)
	}
	var types []string
	for _, e := range events {
		types = append(types, e.Type+" "+e.AggregateID)
	}
	require.Equal(t, []string{
		db.EventCreditSettled + " " + id,
		db.EventTransferDebited + " " + transferID,
		db.EventTransferSettled + " " + transferID,
	}, types)
	var credit map[string]any
	require.NoError(t, json.Unmarshal(events[0].Data, &credit))
	require.EqualValues(t, 2_500, credit["amount_cents"])
	require.Equal(t, "acc-1", credit["account_id"])

	// The worker's counters moved too.
	require.EqualValues(t, 1, s.metric("pix_credits_total"))
	require.EqualValues(t, 1, s.metric("pix_transfers_finished_total{settled}"))
	require.EqualValues(t, 1, s.metric("pix_webhooks_received_total{native}"))
	// One first start each of the credit's and the transfer's workflows.
	require.EqualValues(t, 1, s.metric("pix_dispatch_lag_seconds{inbox}"))
	require.EqualValues(t, 1, s.metric("pix_dispatch_lag_seconds{transfers}"))
	require.EqualValues(t, 1, s.metric("pix_dispatch_starts_total{inbox}{new}"))
	require.EqualValues(t, 1, s.metric("pix_dispatch_starts_total{transfers}{new}"))
	// The Temporal SDK's own metrics are in the same registry (its
	// OpenTelemetry handler, read at the scrape).
	require.Eventually(t, func() bool {
		return s.total("temporal_workflow_completed_total") >= 2 && s.total("temporal_request_total") > 0
	}, 10*time.Second, 100*time.Millisecond, "the Temporal SDK's metrics did not move")
}
