package med_test

import (
	"bytes"
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/saga/med"
	"github.com/pixbank/pix/saga/sagatest"
)

// Review r22 F3: a CLOSED result against our recorded close that arrives
// after the report ended is noted on the ended row, which no gauge counts
// (pix_med_dict_problems: open reports only); it is counted
// (pix_med_dict_contradictions_total{report="ended"}) and logged at ERROR
// with the PIX's end_to_end_id.

// loggedDoors are the saga's doors over f's store, their log in buf.
func loggedDoors(f *fixture, buf *bytes.Buffer) *med.Doors {
	return &med.Doors{Store: f.store, Temporal: &sagatest.Signals{}, Log: slog.New(slog.NewTextHandler(buf, nil))}
}

// Behind a PSP, a part returned, our PARTIALLY_ACCEPTED close recorded,
// the report ended returned_in_part at return_until; then the PSP's notice
// of the request CLOSED REJECTED. Seen failing before the fix: nothing
// counted, nothing logged.
func TestARejectedNoticeAfterTheReportEndedIsCountedAndLogged(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	_, r, req := f.partReturnedClosedOurs()
	late := f.store.WithClock(func() time.Time { return r.ReturnUntil.Add(time.Second) })
	r = f.step(late.Finish(ctx, f.get(r)))
	require.Equal(t, med.StatusEnded, r.Status)
	require.Equal(t, med.EndReturnedInPart, *r.EndCause)

	ended := med.Contradictions.WithLabelValues("ended")
	before := testutil.ToFloat64(ended)
	var log bytes.Buffer
	closed := closedRejectedCopy(req)
	got, changed, err := loggedDoors(f, &log).IntakeRefund(ctx, closed)
	require.NoError(t, err)
	require.True(t, changed)
	require.Equal(t, med.StatusEnded, got.Status)
	require.NotNil(t, got.DICTProblem)
	require.Contains(t, *got.DICTProblem, med.ProblemNotAsOurs)
	counts, err := f.store.Open(ctx, med.AnalysisAlertBefore)
	require.NoError(t, err)
	require.Zero(t, counts.DICTProblems, "an ended report's stop is in no gauge")
	require.Equal(t, before+1, testutil.ToFloat64(ended), "counted")
	require.Contains(t, log.String(), "level=ERROR")
	require.Contains(t, log.String(), "end_to_end_id="+r.EndToEndID)
	require.Contains(t, log.String(), "report_open=false")

	log.Reset()
	_, changed, err = loggedDoors(f, &log).IntakeRefund(ctx, closed)
	require.NoError(t, err)
	require.False(t, changed, "the same notice again")
	require.Equal(t, before+1, testutil.ToFloat64(ended), "counted once")
	require.NotContains(t, log.String(), "level=ERROR")
}

// The same notice on an open report is counted as open: its stop is in
// pix_med_dict_problems too (PixMEDDICTStopped).
func TestARejectedNoticeOnAnOpenReportIsCountedOpen(t *testing.T) {
	f := newFixture(t)
	_, _, req := f.partReturnedClosedOurs()
	open := med.Contradictions.WithLabelValues("open")
	before := testutil.ToFloat64(open)
	var log bytes.Buffer
	got := f.step(loggedDoors(f, &log).IntakeRefund(context.Background(), closedRejectedCopy(req)))
	require.True(t, got.Open())
	require.Equal(t, before+1, testutil.ToFloat64(open))
	require.Contains(t, log.String(), "report_open=true")
}
