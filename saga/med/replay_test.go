package med_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/internal/dict"
	"github.com/pixbank/pix/saga/med"
	"github.com/pixbank/pix/saga/sagatest"
)

// recorded is the workflow the recorded histories are of.
var recorded = sagatest.Workflow{Func: med.Workflow, Name: med.WorkflowName}

// The runs of the saga recorded on a Temporal server (testdata) replay on
// the workflow as it is now: the saga's runs last up to 90 days, beyond
// any release, and move to the current build (AutoUpgrade), so a change
// that would break the runs open in production fails here.
func TestReplayRecordedHistories(t *testing.T) {
	sagatest.ReplayRecordedHistories(t, recorded, 10,
		"disagreed, no request within its window, analysed by a signal and returned, returns in parts ended at their window "+
			"(recorded before returnToDeadlineChange: Finish asked in its last minute), a part filled in the last minute returned, "+
			"a Finish the database's clock answered not yet and a part filled then returned (finishNotYetChange), "+
			"a request taken past return_until closed NO_BALANCE and released (lateRequestChange), "+
			"its close not yet by the database's clock and the request returned (closeNotYetChange), "+
			"its CLOSED copy taken in before our record of the close, closed and released (closedCopyChange), "+
			"its request CLOSED REJECTED outside the run, closed and released before return_until (rejectedCopyChange)")
}

// TestRecordHistories records the saga's histories on a Temporal dev
// server, when PIX_RECORD_HISTORIES (sagatest.RecordEnv) names a folder,
// with the windows cut to seconds (the stub's): a report DISAGREED, one
// AGREED whose request does not come, one whose analysis and request come
// by signal and are returned, one returned in parts whose window ends, one
// whose hold fills in its last minute, one whose Finish the database's
// clock answers "not yet" while a credit fills its hold, one whose request
// came past return_until, one whose close of such a request the
// database's clock answers "not yet", one whose request's CLOSED copy
// came before our record of our close, and one whose request was CLOSED
// REJECTED outside the run.
//
//	PIX_RECORD_HISTORIES=$PWD/saga/med/testdata go test ./saga/med -run TestRecordHistories
func TestRecordHistories(t *testing.T) {
	s := &stub{now: time.Now, requestWindow: 2 * time.Second}
	rec := sagatest.NewRecorder(t, sagatest.RecordEnv, "pix-med-record", recorded, s)
	ctx := context.Background()
	run := func(name string, r med.Report, signal func(r *med.Report)) {
		s.mu.Lock()
		s.r, s.calls, s.credits = r, nil, nil
		s.mu.Unlock()
		wf := rec.Start(ctx, med.WorkflowID(r.ID.String()), med.Input{ID: r.ID.String()})
		if signal != nil {
			time.Sleep(time.Second)
			s.set(signal)
			require.NoError(t, rec.Client.SignalWorkflow(ctx, wf.GetID(), "", med.ChangedSignal, nil))
		}
		var out med.Report
		rec.Save(ctx, name, wf, &out)
		t.Logf("%s: %s (%s), recorded", name, out.Status, *out.EndCause)
	}
	fresh := func() med.Report {
		r := received()
		r.ID = uuid.New()
		return r
	}
	disagreed := fresh()
	disagreed.AnalysisResult, disagreed.AnalysisDetails = ptr(string(dict.Disagreed)), ptr("")
	run("med_disagreed", disagreed, nil)

	agreed := fresh()
	agreed.AnalysisResult, agreed.AnalysisDetails = ptr(string(dict.Agreed)), ptr("")
	run("med_no_request", agreed, nil)

	run("med_returned", fresh(), func(r *med.Report) {
		r.AnalysisResult, r.AnalysisDetails = ptr(string(dict.Agreed)), ptr("")
		if r.Status == med.StatusAcknowledged {
			r.Status = med.StatusAnalysed
		}
		r.RefundRequestID, r.RefundRequestCents, r.RefundRequestState = ptr(uuid.New()), ptr(int64(10_000)), ptr(string(dict.RefundOpen))
	})

	parts := fresh()
	parts.Status, parts.AnalysisResult = med.StatusAwaitingCredit, ptr(string(dict.Agreed))
	parts.RefundRequestID, parts.RefundRequestCents, parts.RefundRequestState = ptr(uuid.New()), ptr(int64(10_000)), ptr(string(dict.RefundOpen))
	parts.ReturnedCents, parts.Returns, parts.FirstRtrID, parts.RefundClosedAt = 3_000, 1, ptr("D12345678202612061300abcdefghijk"), ptr(time.Now())
	parts.ReturnUntil = ptr(time.Now().Add(3 * time.Second))
	// Not saved as med_in_parts: that file is the history recorded before
	// returnToDeadlineChange (Finish asked in its last minute), the one
	// replay of the old path that runs open at the change still take, so
	// it is never recorded over (attack review r12 LOW-3). A new recording
	// adds this one beside it, and the replay's count says so.
	run("med_in_parts_to_deadline", parts, nil)

	// In its last minute a credit fills the hold: returned, the return
	// tried on until return_until (returnToDeadlineChange).
	last := parts
	last.ID, last.Gen = uuid.New(), 1
	last.ReturnUntil = ptr(time.Now().Add(3 * time.Second))
	run("med_in_parts_last_minute", last, func(r *med.Report) { r.HeldCents = 2_000 })

	// The database's clock 3 s behind the run's: Finish answered "not yet"
	// (finishNotYetChange), a credit filling the hold then, returned.
	behind := parts
	behind.ID, behind.Gen = uuid.New(), 1
	behind.ReturnUntil = ptr(time.Now().Add(3 * time.Second))
	s.dbBehind, s.fillAtNotYet = 3*time.Second, 2_000
	run("med_in_parts_db_behind", behind, nil)

	// A request taken too late, past return_until, its 10,000 held: closed
	// as the deadline closes it (NO_BALANCE), then the report ended
	// released (lateRequestChange), never a Return.
	late := fresh()
	late.Status, late.DICTStatus, late.AnalysisResult = med.StatusAwaitingRequest, string(dict.ReportClosed), ptr(string(dict.Agreed))
	late.HeldCents, late.Holds, late.RequestDueAt = 10_000, 1, ptr(time.Now().Add(-time.Hour))
	late.RefundRequestID, late.RefundRequestCents, late.RefundRequestState = ptr(uuid.New()), ptr(int64(10_000)), ptr(string(dict.RefundOpen))
	late.ReturnUntil = ptr(time.Now().Add(-time.Second))
	s.dbBehind, s.fillAtNotYet, s.notYets = 0, 0, 0
	run("med_late_request", late, nil)

	// The same request past return_until by the run's clock, not by the
	// database's (5 s behind): the close is "not yet" (closeNotYetChange),
	// the run returns the 10,000 and closes the request TOTALLY_ACCEPTED.
	gap := late
	gap.ID, gap.RefundRequestID = uuid.New(), ptr(uuid.New())
	gap.ReturnUntil = ptr(time.Now().Add(-time.Second))
	s.dbBehind = 5 * time.Second
	run("med_close_not_yet", gap, nil)

	// Our REJECTED close of a late request marked sent (behind a PSP, it
	// stopped for the operator), the PSP's CLOSED notice taken in before
	// our record of the close: closed (closedCopyChange), then ended
	// released, never the 72 hours' expiry.
	copied := late
	copied.ID, copied.RefundRequestID, copied.RefundRequestState = uuid.New(), ptr(uuid.New()), ptr(string(dict.RefundClosed))
	copied.ReturnUntil, copied.RefundCloseSentAt = ptr(time.Now().Add(-time.Second)), ptr(time.Now())
	s.dbBehind = 0
	run("med_closed_copy", copied, nil)

	// Nothing returned, its request CLOSED REJECTED outside the run (our
	// operator through the PSP's channel), a credit filling its hold:
	// closed from the copy and ended released at once, an hour before
	// return_until (rejectedCopyChange), never kept until then.
	rejected := parts
	rejected.ID, rejected.Gen, rejected.RefundClosedAt = uuid.New(), 1, nil
	rejected.ReturnedCents, rejected.Returns, rejected.FirstRtrID, rejected.HeldCents = 0, 0, nil, 4_000
	rejected.RefundRequestState, rejected.RefundRequestDICTResult = ptr(string(dict.RefundClosed)), ptr(string(dict.Rejected))
	rejected.ReturnUntil = ptr(time.Now().Add(time.Hour))
	run("med_rejected_copy", rejected, nil)
}
