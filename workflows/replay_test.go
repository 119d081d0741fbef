package workflows_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	failurepb "go.temporal.io/api/failure/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/proxy"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/pixbank/pix/internal/codec"
	"github.com/pixbank/pix/saga/registry"
	"github.com/pixbank/pix/workflows"
)

// recordedHistories were recorded from real runs on a Temporal dev server
// (`temporal workflow show -o json`, or the e2e tests with
// PIX_RECORD_HISTORIES set), without payload encryption: in plain text.
var recordedHistories = []string{
	"testdata/credit_done.json",   // credited at the first attempt
	"testdata/credit_failed.json", // unknown account: attempts exhausted, marked failed
	// The credit's listing versions (workflows.CreditListingVersion): 1, the
	// pix-search-attributes version marker with its upserts; 2, the same
	// upserts decided by the input, without the marker.
	"testdata/credit_done_v1.json",
	"testdata/credit_failed_v1.json",
	"testdata/credit_done_v2.json",
	"testdata/credit_failed_v2.json",
	"testdata/transfer_settled.json",  // submitted, polled until settled, marked settled
	"testdata/transfer_refunded.json", // rejected by the PSP at submission, refunded
	// Recorded by the e2e tests that mark them (tooling/e2e/record_test.go):
	"testdata/refund_returned_polling.json",   // requested, polled until DEVOLVIDO, returned
	"testdata/refund_returned_on_notice.json", // requested, the PSP's notice signalled, returned
	"testdata/refund_reversed_not_done.json",  // requested, NAO_REALIZADO after a while, reversed
	"testdata/refund_reversed_reject.json",    // NAO_REALIZADO in the PUT's answer, reversed
	"testdata/refund_refused_reversed.json",   // refused at the PUT, no record after the quiet period, reversed
	// The PSP catch-up (TestRecordCatchUpHistories): a scheduled run and an
	// operator's, as the release before parts ran them (the window whole)
	// and part by part.
	"testdata/catchup_scheduled_whole.json",
	"testdata/catchup_manual_whole.json",
	"testdata/catchup_scheduled_parts.json",
	"testdata/catchup_manual_parts.json",
}

// replayCodec is the replay tests' key ring, as a worker's
// TEMPORAL_CODEC_KEYS would be: one test key, base64 of "pix replay test
// key, 32 bytes!!!".
func replayCodec(t *testing.T) *codec.Codec {
	t.Helper()
	c, err := codec.FromString("replay-test=cGl4IHJlcGxheSB0ZXN0IGtleSwgMzIgYnl0ZXMhISE=")
	require.NoError(t, err)
	return c
}

// newReplayer is a replayer of the PIX workflows, with a worker's
// converters when cv is set.
func newReplayer(t *testing.T, cv *codec.Converters) worker.WorkflowReplayer {
	t.Helper()
	var opts worker.WorkflowReplayerOptions
	if cv != nil {
		cv.ApplyToReplayer(&opts)
	}
	r, err := worker.NewWorkflowReplayerWithOptions(opts)
	require.NoError(t, err)
	for _, d := range registry.All {
		d.RegisterWorkflows(r)
	}
	return r
}

// Histories recorded from real runs must replay against the current code:
// a change that would break running workflows fails here. Record new ones
// when the workflow changes on purpose, and keep the old ones while such
// runs may still be open (or version the change with workflow.GetVersion).
// They replay on a worker with the payload codec as well: runs begun before
// encryption was turned on go on after it.
func TestReplayRecordedHistories(t *testing.T) {
	cv := codec.NewConverters(replayCodec(t))
	for _, file := range recordedHistories {
		t.Run(file, func(t *testing.T) {
			require.NoError(t, newReplayer(t, nil).ReplayWorkflowHistoryFromJSONFile(nil, file))
			require.NoError(t, newReplayer(t, &cv).ReplayWorkflowHistoryFromJSONFile(nil, file), "with the codec")
		})
	}
}

// A history written with encryption on replays on a worker with the same
// keys. It is built from each recorded history as an encrypting worker
// would have written it: failure messages and stack traces moved into
// encoded attributes, then every payload but the search attributes (which
// Temporal indexes, and the SDK never encodes) encrypted.
func TestReplayEncryptedHistories(t *testing.T) {
	c := replayCodec(t)
	cv := codec.NewConverters(c)
	for _, file := range recordedHistories {
		t.Run(file, func(t *testing.T) {
			history := encryptHistory(t, file, c)
			require.NoError(t, newReplayer(t, &cv).ReplayWorkflowHistory(nil, history))
			// And without the keys it can't: the payloads are needed, and
			// unreadable. (The replayer's logs of that failure are dropped.)
			quiet := sdklog.NewStructuredLogger(slog.New(slog.DiscardHandler))
			err := newReplayer(t, nil).ReplayWorkflowHistory(quiet, encryptHistory(t, file, c))
			// The input can't be decoded: the run fails where the history
			// goes on, and the replay reports that divergence.
			require.Error(t, err, "replayed without the keys")
		})
	}
}

// encryptHistory reads a recorded history and encrypts it with c, checking
// that no plain payload or failure message is left.
func encryptHistory(t *testing.T, file string, c *codec.Codec) *historypb.History {
	t.Helper()
	f, err := os.Open(file)
	require.NoError(t, err)
	defer f.Close()
	history, err := client.HistoryFromJSON(f, client.HistoryJSONOptions{})
	require.NoError(t, err)
	ctx := context.Background()
	require.NoError(t, proxy.VisitFailures(ctx, history, proxy.VisitFailuresOptions{
		Visitor: func(_ *proxy.VisitFailuresContext, f *failurepb.Failure) error {
			return converter.EncodeCommonFailureAttributes(converter.GetDefaultDataConverter(), f)
		},
	}))
	require.NoError(t, proxy.VisitPayloads(ctx, history, proxy.VisitPayloadsOptions{
		SkipSearchAttributes: true,
		Visitor: func(_ *proxy.VisitPayloadsContext, p []*commonpb.Payload) ([]*commonpb.Payload, error) {
			return c.Encode(p)
		},
	}))
	encrypted := 0
	require.NoError(t, proxy.VisitPayloads(ctx, history, proxy.VisitPayloadsOptions{
		SkipSearchAttributes: true,
		Visitor: func(_ *proxy.VisitPayloadsContext, payloads []*commonpb.Payload) ([]*commonpb.Payload, error) {
			for _, p := range payloads {
				require.Equal(t, codec.EncodingEncrypted, string(p.GetMetadata()[codec.MetadataEncoding]))
				encrypted++
			}
			return payloads, nil
		},
	}))
	require.Positive(t, encrypted)
	require.NoError(t, proxy.VisitFailures(ctx, history, proxy.VisitFailuresOptions{
		Visitor: func(_ *proxy.VisitFailuresContext, f *failurepb.Failure) error {
			require.Equal(t, "Encoded failure", f.GetMessage())
			require.Empty(t, f.GetStackTrace())
			return nil
		},
	}))
	return history
}

// historyWithCreditInput reads a recorded credit history and rewrites its
// input's ListingVersion (removed when version is 0), as another
// dispatcher would have started the run.
func historyWithCreditInput(t *testing.T, file string, version workflow.Version) *historypb.History {
	t.Helper()
	f, err := os.Open(file)
	require.NoError(t, err)
	defer f.Close()
	history, err := client.HistoryFromJSON(f, client.HistoryJSONOptions{})
	require.NoError(t, err)
	payload := history.GetEvents()[0].GetWorkflowExecutionStartedEventAttributes().GetInput().GetPayloads()[0]
	var in map[string]any
	require.NoError(t, json.Unmarshal(payload.GetData(), &in))
	if version == 0 {
		delete(in, "ListingVersion")
	} else {
		in["ListingVersion"] = version
	}
	payload.Data, err = json.Marshal(in)
	require.NoError(t, err)
	return history
}

// During a rolling deploy a new dispatcher's run (its input names listing
// version 2) may have been begun by an old worker, which asked GetVersion
// and recorded the version marker and its TemporalChangeVersion upsert. A
// new worker goes on with it: the SDK's replay passes over version markers
// the code does not ask for, and both shapes upsert the same statuses.
func TestReplayCreditBegunByAnOldWorker(t *testing.T) {
	for _, file := range []string{"testdata/credit_done_v1.json", "testdata/credit_failed_v1.json"} {
		t.Run(file, func(t *testing.T) {
			require.NoError(t, newReplayer(t, nil).ReplayWorkflowHistory(nil, historyWithCreditInput(t, file, workflows.CreditListingVersion)))
		})
	}
}

// The input alone decides the shape of a run of listing version 2: the
// same history without the input's version is a run of before the
// upserts (no marker: DefaultVersion), whose code upserts nothing, and it
// does not replay.
func TestReplayCreditShapeIsTheInputs(t *testing.T) {
	quiet := sdklog.NewStructuredLogger(slog.New(slog.DiscardHandler))
	for _, file := range []string{"testdata/credit_done_v2.json", "testdata/credit_failed_v2.json"} {
		t.Run(file, func(t *testing.T) {
			err := newReplayer(t, nil).ReplayWorkflowHistory(quiet, historyWithCreditInput(t, file, 0))
			require.Error(t, err, "replayed as a run of before the upserts")
		})
	}
}
