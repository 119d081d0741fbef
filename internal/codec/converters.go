package codec

import (
	failurepb "go.temporal.io/api/failure/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"google.golang.org/protobuf/proto"
)

// Converters are what a Temporal client (or replayer) is given to encrypt
// the payloads it writes and decrypt those it reads. Every process that
// reads or writes the service's workflows needs the same ones.
type Converters struct {
	DataConverter converter.DataConverter
	// FailureConverter moves failure messages and stack traces into an
	// encoded attribute: an error's text can quote a payer's data too.
	FailureConverter converter.FailureConverter
}

// NewConverters wraps Temporal's default data converter in c, and builds a
// failure converter on it.
func NewConverters(c converter.PayloadCodec) Converters {
	dc := converter.NewCodecDataConverter(converter.GetDefaultDataConverter(), c)
	return Converters{
		DataConverter: dc,
		// The failure converter's own data converter must be the codec's:
		// left unset, it would encode the messages with the default one,
		// in plain JSON.
		FailureConverter: decodeCopies{temporal.NewDefaultFailureConverter(temporal.DefaultFailureConverterOptions{
			DataConverter:          dc,
			EncodeCommonAttributes: true,
		})},
	}
}

// decodeCopies decodes a copy of each failure it is given. The SDK's
// default converter (v1.51) decodes the message and stack trace into the
// very proto it is handed, and for a local activity's failure that proto
// is also the marker the worker then records: the decrypted message went
// back into the history in plain text (tooling/e2e/codec_test.go caught it).
type decodeCopies struct {
	converter.FailureConverter
}

func (d decodeCopies) FailureToError(f *failurepb.Failure) error {
	if f == nil {
		return nil
	}
	return d.FailureConverter.FailureToError(proto.Clone(f).(*failurepb.Failure))
}

// ApplyTo sets the converters on a client's options.
func (cv Converters) ApplyTo(opts *client.Options) {
	opts.DataConverter, opts.FailureConverter = cv.DataConverter, cv.FailureConverter
}

// ApplyToReplayer sets the converters on a replayer's options.
func (cv Converters) ApplyToReplayer(opts *worker.WorkflowReplayerOptions) {
	opts.DataConverter, opts.FailureConverter = cv.DataConverter, cv.FailureConverter
}
