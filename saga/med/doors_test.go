package med_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/internal/dict"
	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/saga/med"
	"github.com/pixbank/pix/saga/sagatest"
)

// The doors wake a run that is open already: a refund request taken while
// the run waits out its 72 hours, a cancel while it waits for its
// analysis, are signalled after their commit (the durable start starts
// only runs that are not open). What changed nothing, or a report not
// ours, signals nothing; a run that does not exist is no error.
func TestTheDoorsWakeTheOpenRun(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	sig := &sagatest.Signals{}
	doors := &med.Doors{Store: f.store, Temporal: sig, Log: sagatest.Discard()}
	_, r := f.agreed(10_000, 0)
	wf := med.WorkflowID(r.ID.String()) + " " + med.ChangedSignal

	req := request(r, 10_000, dict.RefundOpen)
	_, changed, err := doors.IntakeRefund(ctx, req)
	require.NoError(t, err)
	require.True(t, changed)
	require.Equal(t, []string{wf}, sig.Sent(), "the request wakes the run waiting for it")
	_, changed, err = doors.IntakeRefund(ctx, req)
	require.NoError(t, err)
	require.False(t, changed)
	require.Len(t, sig.Sent(), 1, "the same request again wakes nothing")

	c := f.credit(10_000, 0)
	in := report(c.EndToEndID, dict.ReportOpen, time.Now().Add(-time.Hour))
	other, changed, err := doors.Intake(ctx, in)
	require.NoError(t, err)
	require.True(t, changed)
	in.Status, in.LastModified = dict.ReportCancelled, in.LastModified.Add(time.Minute)
	_, changed, err = doors.Intake(ctx, in)
	require.NoError(t, err)
	require.True(t, changed)
	require.Equal(t, []string{wf, med.WorkflowID(other.ID.String()) + " " + med.ChangedSignal,
		med.WorkflowID(other.ID.String()) + " " + med.ChangedSignal}, sig.Sent(), "the cancel wakes the run waiting for its analysis")

	_, changed, err = doors.Intake(ctx, report(pix.NewEndToEndID("87654321", time.Now()), dict.ReportOpen, time.Now()))
	require.NoError(t, err)
	require.True(t, changed)
	require.Len(t, sig.Sent(), 3, "a report not ours has no run")

	sig.NoRunOpen()
	in.LastModified = in.LastModified.Add(time.Minute)
	_, _, err = doors.Intake(ctx, in)
	require.NoError(t, err, "a run that does not exist is no error: the durable start is the net")
}
