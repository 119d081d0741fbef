//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/pixbank/pix/cmd/pixd/app"
	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/internal/broker"
	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/internal/tracing"
)

// tracedStack is a stack whose spans a recorder of its own keeps (the
// other tests' stacks, in parallel, record nowhere).
func tracedStack(t *testing.T) (*stack, *tracetest.SpanRecorder) {
	t.Helper()
	recorder := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(recorder))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return newStack(t, shared, nil, app.WithTracing(tracing.FromTracerProvider(tp))), recorder
}

// spanChain is span and its ancestors, up to the root, among the ended
// spans; complete is false while an ancestor has not ended yet.
func spanChain(ended []sdktrace.ReadOnlySpan, span sdktrace.ReadOnlySpan) (chain []sdktrace.ReadOnlySpan, complete bool) {
	byID := map[trace.SpanID]sdktrace.ReadOnlySpan{}
	for _, s := range ended {
		byID[s.SpanContext().SpanID()] = s
	}
	for {
		chain = append(chain, span)
		parent := span.Parent()
		if !parent.IsValid() {
			return chain, true
		}
		if span = byID[parent.SpanID()]; span == nil {
			return chain, false
		}
	}
}

func spanNames(spans []sdktrace.ReadOnlySpan) []string {
	var names []string
	for _, s := range spans {
		names = append(names, s.Name())
	}
	return names
}

func attr(s sdktrace.ReadOnlySpan, key attribute.Key) attribute.Value {
	for _, kv := range s.Attributes() {
		if kv.Key == key {
			return kv.Value
		}
	}
	return attribute.Value{}
}

// publishSpan waits for the span of the publish of the event of type
// eventType about aggregateID, and its whole chain of ancestors.
func publishSpan(t *testing.T, recorder *tracetest.SpanRecorder, eventType, aggregateID string) []sdktrace.ReadOnlySpan {
	t.Helper()
	var chain []sdktrace.ReadOnlySpan
	require.Eventually(t, func() bool {
		ended := recorder.Ended()
		for _, s := range ended {
			if s.Name() == "publish "+broker.Subject(eventType) && attr(s, "pix.aggregate_id").AsString() == aggregateID {
				var complete bool
				chain, complete = spanChain(ended, s)
				return complete
			}
		}
		return false
	}, 30*time.Second, 50*time.Millisecond, "the publish of %s %s, and every span it descends from, ended", eventType, aggregateID)
	return chain
}

// eventMessage is the broker's message of the event of type eventType.
func eventMessage(t *testing.T, s *stack, eventType string) jetstream.Msg {
	t.Helper()
	ctx := context.Background()
	nc, err := broker.Connect(s.natsURL, t.Name())
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	stream, err := js.Stream(ctx, broker.StreamName)
	require.NoError(t, err)
	cons, err := stream.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{FilterSubjects: []string{broker.Subject(eventType)}})
	require.NoError(t, err)
	m, err := cons.Next(jetstream.FetchMaxWait(5 * time.Second))
	require.NoError(t, err)
	return m
}

// logLines are the stack's log lines whose msg is msg.
func (s *stack) logLines(msg string) []map[string]any {
	s.t.Helper()
	s.logs.mu.Lock()
	raw := bytes.Clone(s.logs.buf.Bytes())
	s.logs.mu.Unlock()
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var line map[string]any
		require.NoError(s.t, json.Unmarshal(sc.Bytes(), &line), sc.Text())
		if line["msg"] == msg {
			out = append(out, line)
		}
	}
	return out
}

// requireNothingSecret checks that no span recorded a header, a bearer
// token, the webhook's signature or the admin token.
func requireNothingSecret(t *testing.T, spans []sdktrace.ReadOnlySpan) {
	t.Helper()
	for _, s := range spans {
		for _, kv := range s.Attributes() {
			require.NotContains(t, string(kv.Key), "header", "span %s", s.Name())
			v := kv.Value.String()
			for _, secret := range []string{"Bearer", e2eAdminToken, "v1,"} {
				require.NotContains(t, v, secret, "span %s attribute %s", s.Name(), kv.Key)
			}
		}
	}
}

// One PIX is one trace: the PSP's webhook (its server span the root), the
// dispatcher's start of the credit's workflow (continued from the inbox
// row's traceparent, after the commit), the run, the credit's local
// activity, and the publish of its event (continued from the outbox row's
// traceparent), whose NATS message carries the trace on. The credit's log
// line names the trace and the activity's span.
func TestOnePixIsOneTrace(t *testing.T) {
	s, recorder := tracedStack(t)
	s.openAccount("acc-1", 0)
	id := pixID()
	require.Equal(t, http.StatusAccepted, s.post(webhook{id, "acc-1", 1_234}).Status)
	s.waitStatus(id, pix.StatusDone, 30*time.Second)

	chain := publishSpan(t, recorder, db.EventCreditSettled, id)
	require.Equal(t, []string{
		"publish " + broker.Subject(db.EventCreditSettled),
		"RunActivity:CreditAccount",
		"StartActivity:CreditAccount",
		"RunWorkflow:PixCredit",
		"StartWorkflow:PixCredit",
		"POST /webhooks/pix",
	}, spanNames(chain), "the publish descends from the credit, the credit from the webhook")
	publish, credit, webhookSpan := chain[0], chain[1], chain[len(chain)-1]
	traceID := webhookSpan.SpanContext().TraceID()
	for _, span := range chain {
		require.Equal(t, traceID, span.SpanContext().TraceID(), span.Name())
	}
	require.Equal(t, trace.SpanKindServer, webhookSpan.SpanKind())
	require.Equal(t, "/webhooks/pix", attr(webhookSpan, "http.route").AsString())
	require.Equal(t, id, attr(webhookSpan, tracing.AttrEndToEndID).AsString())
	require.Equal(t, trace.SpanKindProducer, publish.SpanKind())

	// The statements are spans of their request or activity, named by
	// their statement.
	parents := map[string]trace.SpanID{}
	for _, span := range recorder.Ended() {
		if span.SpanContext().TraceID() == traceID {
			parents[span.Name()] = span.Parent().SpanID()
		}
	}
	require.Equal(t, webhookSpan.SpanContext().SpanID(), parents["query credits.Receive"], "the webhook's insert")
	require.Equal(t, credit.SpanContext().SpanID(), parents["query credits.Credit"], "the credit's statement")

	// The credit's log line.
	lines := s.logLines("pix credited")
	require.Len(t, lines, 1)
	require.Equal(t, id, lines[0]["end_to_end_id"])
	require.Equal(t, traceID.String(), lines[0]["trace_id"])
	require.Equal(t, credit.SpanContext().SpanID().String(), lines[0]["span_id"])
	accepted := s.logLines("webhook accepted")
	require.Len(t, accepted, 1)
	require.Equal(t, traceID.String(), accepted[0]["trace_id"])

	// The event's message continues the trace from its publish.
	m := eventMessage(t, s, db.EventCreditSettled)
	require.Equal(t, "00-"+traceID.String()+"-"+publish.SpanContext().SpanID().String()+"-01", m.Headers().Get("traceparent"))

	requireNothingSecret(t, recorder.Ended())
}

// A transfer is one trace too, through its POST's row (a saga's due rows,
// like the inbox's): the customer's request, the saga, the PSP's calls and
// the publish of its events.
func TestATransferIsOneTrace(t *testing.T) {
	s, recorder := tracedStack(t)
	s.openAccount("acc-1", 100_000)
	r := s.sendPix(uuid.NewString(), "acc-1", 15_000, "maria@example.com")
	require.Equal(t, http.StatusCreated, r.Status)
	id := r.Body["id"].(string)
	s.waitTransfer(id, pix.TransferSettled, 30*time.Second)

	settled := publishSpan(t, recorder, db.EventTransferSettled, id)
	require.Equal(t, []string{
		"publish " + broker.Subject(db.EventTransferSettled),
		"RunActivity:SettleTransfer",
		"StartActivity:SettleTransfer",
		"RunWorkflow:PixTransfer",
		"StartWorkflow:PixTransfer",
		"POST /pix",
	}, spanNames(settled))
	root := settled[len(settled)-1]
	traceID := root.SpanContext().TraceID()
	debited := publishSpan(t, recorder, db.EventTransferDebited, id)
	require.Equal(t, []string{"publish " + broker.Subject(db.EventTransferDebited), "POST /pix"}, spanNames(debited),
		"the debit's event continues the request that wrote it")
	require.Equal(t, traceID, debited[0].SpanContext().TraceID())

	// The PSP was called within the saga's activities, each call a span.
	// The stack's catch-up Schedule lists the PSP's record (GET /pix) in
	// runs of its own, each its own trace, whenever its interval comes
	// round: those calls are not the transfer's (seen once: a catch-up's
	// span in the transfer's window).
	var pspCalls []string
	for _, span := range recorder.Ended() {
		if span.Name() == "PSP GET /pix" && span.SpanContext().TraceID() != traceID {
			continue
		}
		if strings.HasPrefix(span.Name(), "PSP ") {
			require.Equal(t, traceID, span.SpanContext().TraceID(), span.Name())
			require.Equal(t, trace.SpanKindClient, span.SpanKind())
			pspCalls = append(pspCalls, span.Name())
		}
	}
	require.Contains(t, pspCalls, "PSP POST /transfers")
	requireNothingSecret(t, recorder.Ended())
}
