package workflows_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"reflect"
	"testing"
	"time"

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
	"github.com/pixbank/pix/internal/config"
	"github.com/pixbank/pix/internal/payload"
	"github.com/pixbank/pix/saga/refund"
	"github.com/pixbank/pix/saga/registry"
	"github.com/pixbank/pix/saga/retention"
	"github.com/pixbank/pix/saga/transfer"
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
	// The sagas of their own packages keep their histories there, replayed
	// here with every saga's workflows (registry.All). The PSP catch-up
	// (saga/catchup's TestRecordCatchUpHistories): a scheduled run and an
	// operator's, as the release before parts ran them (the window whole)
	// and part by part.
	"../saga/catchup/testdata/catchup_scheduled_whole.json",
	"../saga/catchup/testdata/catchup_manual_whole.json",
	"../saga/catchup/testdata/catchup_scheduled_parts.json",
	"../saga/catchup/testdata/catchup_manual_parts.json",
	// The outgoing transfer (saga/transfer): submitted, polled until
	// settled, marked settled; rejected by the PSP at submission, refunded.
	"../saga/transfer/testdata/transfer_settled.json",
	"../saga/transfer/testdata/transfer_refunded.json",
	// The devolução (saga/refund), recorded by the e2e tests that mark
	// them (tooling/e2e/record_test.go).
	"../saga/refund/testdata/refund_returned_polling.json",   // requested, polled until DEVOLVIDO, returned
	"../saga/refund/testdata/refund_returned_on_notice.json", // requested, the PSP's notice signalled, returned
	"../saga/refund/testdata/refund_reversed_not_done.json",  // requested, NAO_REALIZADO after a while, reversed
	"../saga/refund/testdata/refund_reversed_reject.json",    // NAO_REALIZADO in the PUT's answer, reversed
	"../saga/refund/testdata/refund_refused_reversed.json",   // refused at the PUT, no record after the quiet period, reversed
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

// readHistory reads a recorded history.
func readHistory(t *testing.T, file string) *historypb.History {
	t.Helper()
	f, err := os.Open(file)
	require.NoError(t, err)
	defer f.Close()
	history, err := client.HistoryFromJSON(f, client.HistoryJSONOptions{})
	require.NoError(t, err)
	return history
}

// encryptHistory reads a recorded history and encrypts it with c, checking
// that no plain payload or failure message is left.
func encryptHistory(t *testing.T, file string, c *codec.Codec) *historypb.History {
	t.Helper()
	history := readHistory(t, file)
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
	history := readHistory(t, file)
	p := history.GetEvents()[0].GetWorkflowExecutionStartedEventAttributes().GetInput().GetPayloads()[0]
	var in map[string]any
	require.NoError(t, json.Unmarshal(p.GetData(), &in))
	if version == 0 {
		delete(in, "ListingVersion")
	} else {
		in["ListingVersion"] = version
	}
	var err error
	p.Data, err = json.Marshal(in)
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

// writingDurations makes this test's process write payload.Durations in f
// (TEMPORAL_DURATION_WRITE_FORMAT), and puts the previous format back
// after it.
func writingDurations(t *testing.T, f payload.DurationFormat) {
	t.Helper()
	previous := payload.WriteDurations(f)
	t.Cleanup(func() { payload.WriteDurations(previous) })
}

// inputTypes are the inputs of the workflows whose recorded histories
// hold durations, by workflow type.
var inputTypes = map[string]reflect.Type{
	workflows.CreditWorkflowName: reflect.TypeFor[workflows.CreditInput](),
	transfer.WorkflowName:        reflect.TypeFor[transfer.Input](),
	refund.WorkflowName:          reflect.TypeFor[refund.Input](),
}

// recordedInput reads a recorded history, its first event's input payload
// and the Go type of that input (nil for a workflow without durations).
func recordedInput(t *testing.T, file string) (*historypb.History, *commonpb.Payload, reflect.Type) {
	t.Helper()
	history := readHistory(t, file)
	started := history.GetEvents()[0].GetWorkflowExecutionStartedEventAttributes()
	return history, started.GetInput().GetPayloads()[0], inputTypes[started.GetWorkflowType().GetName()]
}

// releaseBefore is typ as the releases before payload.Duration declared
// it: every payload.Duration in it a time.Duration, which encoding/json
// reads and writes as integer nanoseconds only. A type without durations
// is itself.
func releaseBefore(typ reflect.Type) reflect.Type {
	switch typ.Kind() {
	case reflect.Int64:
		if typ == reflect.TypeFor[payload.Duration]() {
			return reflect.TypeFor[time.Duration]()
		}
	case reflect.Pointer:
		if elem := releaseBefore(typ.Elem()); elem != typ.Elem() {
			return reflect.PointerTo(elem)
		}
	case reflect.Struct:
		changed := false
		var fields []reflect.StructField
		for i := range typ.NumField() {
			f := typ.Field(i)
			if !f.IsExported() {
				continue // not in the JSON
			}
			if before := releaseBefore(f.Type); before != f.Type {
				f.Type, changed = before, true
			}
			fields = append(fields, f)
		}
		if changed {
			return reflect.StructOf(fields)
		}
	}
	return typ
}

// The recorded histories are what the releases before payload.Duration
// wrote: every duration in their inputs integer nanoseconds (they decode
// into the inputs as those releases declared them). They replay on the
// current code whichever form this worker writes: decoding reads both, and
// what the workflows write from them (an activity's input, a
// continue-as-new's) is compared by the SDK's replay by command type and
// activity name only, never by payload. So runs open across the upgrade
// go on without a workflow.GetVersion.
func TestRecordedHistoriesWithNanosecondsReplayWritingText(t *testing.T) {
	writingDurations(t, payload.DurationsText)
	cv := codec.NewConverters(replayCodec(t))
	withDurations := 0
	for _, file := range recordedHistories {
		t.Run(file, func(t *testing.T) {
			_, p, typ := recordedInput(t, file)
			if typ != nil {
				withDurations++
				old := reflect.New(releaseBefore(typ))
				require.NoError(t, json.Unmarshal(p.GetData(), old.Interface()), "integer nanoseconds, as the release before wrote: %s", p.GetData())
				in := reflect.New(typ)
				require.NoError(t, json.Unmarshal(p.GetData(), in.Interface()))
				again := reflect.New(releaseBefore(typ))
				require.NoError(t, json.Unmarshal(marshalAs(t, in.Interface(), payload.DurationsNanoseconds), again.Interface()))
				require.Equal(t, old.Interface(), again.Interface(), "read into the current input, the same values")
			}
			require.NoError(t, newReplayer(t, nil).ReplayWorkflowHistoryFromJSONFile(nil, file))
			require.NoError(t, newReplayer(t, &cv).ReplayWorkflowHistoryFromJSONFile(nil, file), "with the codec")
		})
	}
	require.Equal(t, 13, withDurations, "the credit (6), transfer (2) and refund (5) histories")
}

// A run begun by a dispatcher writing text ("1s") replays the same
// history as one begun with nanoseconds: the same commands, from the same
// values. Each recorded history's input is rewritten as such a dispatcher
// writes it and replayed.
func TestReplayWithAnInputWrittenAsText(t *testing.T) {
	for _, file := range recordedHistories {
		history, p, typ := recordedInput(t, file)
		if typ == nil {
			continue
		}
		t.Run(file, func(t *testing.T) {
			in := reflect.New(typ)
			require.NoError(t, json.Unmarshal(p.GetData(), in.Interface()))
			p.Data = marshalAs(t, in.Interface(), payload.DurationsText)
			require.Regexp(t, `"[0-9hms.]+s"`, string(p.GetData()))
			back := reflect.New(typ)
			require.NoError(t, json.Unmarshal(p.GetData(), back.Interface()))
			require.Equal(t, in.Interface(), back.Interface(), "the same values")
			require.NoError(t, newReplayer(t, nil).ReplayWorkflowHistory(nil, history))
		})
	}
}

// marshalAs is v's JSON with its durations written in f.
func marshalAs(t *testing.T, v any, f payload.DurationFormat) []byte {
	t.Helper()
	previous := payload.WriteDurations(f)
	defer payload.WriteDurations(previous)
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

// newInputs are the inputs the worker writes now, as its dispatchers and
// Schedule build them from the configuration's defaults.
func newInputs() map[string]any {
	cfg := config.Default()
	return map[string]any{
		"credit":    workflows.CreditInput{EndToEndID: "E1", Retry: cfg.Retry(), ListingVersion: workflows.CreditInputListingVersion(cfg.CreditListingInInput)},
		"transfer":  transfer.Input{TransferID: "T1", Settings: transfer.DefaultSettings().Run(cfg)},
		"refund":    refund.Input{RefundID: "R1", Settings: refund.DefaultSettings().Run(cfg)},
		"retention": retention.NewInput(retention.DefaultSettings(), cfg.OutboxRetention),
	}
}

// written is what the Temporal UI shows of v as a worker writes it with
// the payload codec: its payload, decoded by the codec server, as JSON.
func written(t *testing.T, v any) map[string]any {
	t.Helper()
	cv := codec.NewConverters(replayCodec(t))
	p, err := cv.DataConverter.ToPayload(v)
	require.NoError(t, err)
	require.Equal(t, codec.EncodingEncrypted, string(p.GetMetadata()[codec.MetadataEncoding]))
	var raw json.RawMessage
	require.NoError(t, cv.DataConverter.FromPayload(p, &raw))
	var shown map[string]any
	require.NoError(t, json.Unmarshal(raw, &shown))
	// And it reads back as it was written.
	back := reflect.New(reflect.TypeOf(v))
	require.NoError(t, cv.DataConverter.FromPayload(p, back.Interface()))
	require.Equal(t, v, back.Elem().Interface())
	return shown
}

// With TEMPORAL_DURATION_WRITE_FORMAT=text, a new input shows its
// durations as Go writes them: what an on-call engineer reads in the
// Temporal UI.
func TestANewInputShowsItsDurationsAsText(t *testing.T) {
	writingDurations(t, payload.DurationsText)
	in := newInputs()
	credit := written(t, in["credit"])["Retry"].(map[string]any)
	require.Equal(t, "1s", credit["InitialInterval"])
	require.Equal(t, "30s", credit["MaxInterval"])
	require.Equal(t, "10s", credit["ActivityTimeout"])
	sent := written(t, in["transfer"])["Settings"].(map[string]any)
	require.Equal(t, "15s", sent["PSPCallTimeout"], "PSP_TIMEOUT + 5s")
	require.Equal(t, "200ms", sent["SettlementPollInitial"])
	require.Equal(t, "24h0m0s", sent["SettlementTimeout"])
	returned := written(t, in["refund"])["Settings"].(map[string]any)
	require.Equal(t, "10m0s", returned["PollMax"])
	require.Equal(t, "1m0s", returned["RefusalQuietPeriod"])
	retention := written(t, in["retention"])
	require.Equal(t, "720h0m0s", retention["InboxRetention"])
	require.Equal(t, "168h0m0s", retention["OutboxRetention"])
}

// By default (TEMPORAL_DURATION_WRITE_FORMAT=nanoseconds) a new input is
// byte for byte what the release before payload.Duration wrote, which that
// release reads; written as text it can't read it, and a run it took
// (an auto-upgrade run moved to it, a rollback, a pinned saga started by
// this release's dispatcher while it is still the current build) would
// fail its workflow tasks: why text waits until no such release runs
// (docs/operations.md, "Upgrading the workers").
func TestByDefaultANewInputIsWhatTheReleaseBeforeReads(t *testing.T) {
	for name, v := range newInputs() {
		t.Run(name, func(t *testing.T) {
			typ := releaseBefore(reflect.TypeOf(v))
			require.NotEqual(t, reflect.TypeOf(v), typ, "the input holds durations")

			b := marshalAs(t, v, config.Default().DurationWriteFormat)
			old := reflect.New(typ)
			require.NoError(t, json.Unmarshal(b, old.Interface()))
			before, err := json.Marshal(old.Interface())
			require.NoError(t, err)
			require.Equal(t, string(before), string(b), "what the release before reads and writes")

			err = json.Unmarshal(marshalAs(t, v, payload.DurationsText), reflect.New(typ).Interface())
			require.ErrorContains(t, err, "cannot unmarshal string into Go struct field", "the release before reading text")
		})
	}
}
