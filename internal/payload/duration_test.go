package payload_test

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/internal/payload"
)

// writing makes the test's Durations be written in f, and puts the
// process's format back after it.
func writing(t *testing.T, f payload.DurationFormat) {
	t.Helper()
	previous := payload.WriteDurations(f)
	t.Cleanup(func() { payload.WriteDurations(previous) })
}

// settings stands for a payload of the current release, and oldSettings
// for the same payload as a release before Duration declared it.
type settings struct {
	Timeout payload.Duration
	Poll    *payload.Duration `json:",omitempty"`
}

type oldSettings struct {
	Timeout time.Duration
	Poll    *time.Duration `json:",omitempty"`
}

func TestADurationIsWrittenAsTextOrNanoseconds(t *testing.T) {
	poll := payload.Duration(2*time.Minute + 30*time.Second)
	in := settings{Timeout: payload.Duration(time.Second), Poll: &poll}

	writing(t, payload.DurationsText)
	b, err := json.Marshal(in)
	require.NoError(t, err)
	require.JSONEq(t, `{"Timeout":"1s","Poll":"2m30s"}`, string(b))

	writing(t, payload.DurationsNanoseconds)
	b, err = json.Marshal(in)
	require.NoError(t, err)
	require.JSONEq(t, `{"Timeout":1000000000,"Poll":150000000000}`, string(b))
}

// Whichever form wrote a payload, this release reads it; a release before
// Duration reads only the nanoseconds: why they are the default
// (docs/operations.md, "Upgrading the workers").
func TestBothFormsAreReadAndAReleaseBeforeReadsOnlyNanoseconds(t *testing.T) {
	poll := payload.Duration(10 * time.Minute)
	in := settings{Timeout: payload.Duration(15 * time.Second), Poll: &poll}
	for _, f := range []payload.DurationFormat{payload.DurationsNanoseconds, payload.DurationsText} {
		t.Run(string(f), func(t *testing.T) {
			writing(t, f)
			b, err := json.Marshal(in)
			require.NoError(t, err)
			var got settings
			require.NoError(t, json.Unmarshal(b, &got))
			require.Equal(t, in, got)

			var old oldSettings
			err = json.Unmarshal(b, &old)
			if f == payload.DurationsText {
				require.Error(t, err, "a release before Duration read the text form")
				return
			}
			require.NoError(t, err)
			require.Equal(t, oldSettings{Timeout: 15 * time.Second, Poll: new(10 * time.Minute)}, old)
		})
	}

	// What a release before Duration wrote (a recorded history's input).
	b, err := json.Marshal(oldSettings{Timeout: 15 * time.Second})
	require.NoError(t, err)
	require.JSONEq(t, `{"Timeout":15000000000}`, string(b))
	var got settings
	require.NoError(t, json.Unmarshal(b, &got))
	require.Equal(t, settings{Timeout: payload.Duration(15 * time.Second)}, got)
}

// Every duration survives both forms exactly: the extremes, a
// nanosecond's precision, negative ones (the text's "µs" included).
func TestEveryDurationRoundTrips(t *testing.T) {
	values := []time.Duration{0, 1, -1, time.Microsecond + 500, 1500 * time.Microsecond, time.Second, -90 * time.Minute,
		24 * time.Hour, math.MaxInt64, math.MinInt64, math.MinInt64 + 1}
	r := rand.New(rand.NewPCG(36, 8))
	for range 10_000 {
		values = append(values, time.Duration(r.Int64()), time.Duration(-r.Int64()), time.Duration(r.Int64N(int64(time.Hour))))
	}
	for _, f := range []payload.DurationFormat{payload.DurationsNanoseconds, payload.DurationsText} {
		writing(t, f)
		for _, v := range values {
			b, err := json.Marshal(payload.Duration(v))
			require.NoError(t, err)
			var got payload.Duration
			require.NoError(t, json.Unmarshal(b, &got), "%s: %s", f, b)
			require.Equal(t, v, time.Duration(got), "%s: %s", f, b)
		}
	}
}

func TestWhatIsNoDurationIsRefused(t *testing.T) {
	for _, b := range []string{`"1"`, `"one second"`, `""`, `1.5`, `1e9`, `9223372036854775808`, `-9223372036854775809`,
		`true`, `{}`, `[]`, `"9223372036854775808ns"`} {
		var d payload.Duration
		require.Error(t, json.Unmarshal([]byte(b), &d), b)
	}
	// null leaves a duration as it is, as encoding/json does for any value.
	d := payload.Duration(time.Second)
	require.NoError(t, json.Unmarshal([]byte(`null`), &d))
	require.Equal(t, payload.Duration(time.Second), d)
	// Text as Go reads it: "us" for "µs" too.
	require.NoError(t, json.Unmarshal([]byte(`"1h2m3.5us"`), &d))
	require.Equal(t, time.Hour+2*time.Minute+3500*time.Nanosecond, time.Duration(d))
}

func TestDurationFormats(t *testing.T) {
	for _, s := range []string{"nanoseconds", "text"} {
		f, err := payload.ParseDurationFormat(s)
		require.NoError(t, err)
		require.Equal(t, payload.DurationFormat(s), f)
	}
	for _, s := range []string{"", "Text", "ns", "string"} {
		_, err := payload.ParseDurationFormat(s)
		require.Error(t, err, s)
	}
	// The process writes nanoseconds unless told otherwise.
	require.Equal(t, payload.DurationsNanoseconds, payload.WrittenDurations())
	require.Equal(t, payload.DurationsNanoseconds, payload.WriteDurations(payload.DurationsText))
	require.Equal(t, payload.DurationsText, payload.WrittenDurations())
	require.Equal(t, payload.DurationsText, payload.WriteDurations(payload.DurationsNanoseconds))
	require.Equal(t, "2m30s", payload.Duration(150*time.Second).String())
}
