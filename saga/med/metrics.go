package med

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/pixbank/pix/saga"
	"github.com/pixbank/pix/saga/sagakit"
)

// intakeTotal counts the reports received for the first time in this
// process, by the status they were recorded in: received (a PIX we
// credited), not_ours (a PIX we did not: nothing held), ended (cancelled
// before we saw it).
var intakeTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "pix_med_reports_received_total",
	Help: "MED infraction reports received for the first time, by the status recorded (received, not_ours, ended).",
}, []string{"status"})

// endedTotal counts the reports ended in this process, by cause.
var endedTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "pix_med_reports_ended_total",
	Help: "MED infraction reports ended, by cause (released, returned, returned_in_part, cancelled, rejected_at_dict, operator_released).",
}, []string{"cause"})

// dictStoppedTotal counts the DICT steps the saga stopped at: refused by
// the DICT, or answered without a valid signature (Report.DICTProblem);
// not the steps that await the PSP (ProblemPSPActionAwaited).
var dictStoppedTotal = prometheus.NewCounter(prometheus.CounterOpts{
	Name: "pix_med_dict_stopped_total",
	Help: "MED saga steps stopped at the DICT: refused, or the answer's signature not verified (not those awaiting a step at the PSP).",
})

// returnsRefusedTotal counts the reports whose devolução was refused for
// good (ReturnRefusal), by refusal: a business outcome, paged
// (PixMEDReturnRefused).
var returnsRefusedTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "pix_med_returns_refused_total",
	Help: "MED reports whose devolução was refused for good, by refusal (refund_window_closed, account_closed).",
}, []string{"refusal"})

// lateRequestsTotal counts the refund requests that came when their report
// could not answer them as its own (IntakeRefund): reopened (an ended
// report takes it again) or unanswered (recorded in
// pix_med_refund_requests, paged while OPEN: PixMEDRefundRequestNotTaken).
var lateRequestsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "pix_med_refund_requests_late_total",
	Help: "MED refund requests its report could not answer as its own: reopened (an ended report takes it again) or unanswered.",
}, []string{"outcome"})

// contradictionsTotal counts the CLOSED results of a report's own refund
// request taken in (the DICT's list, the PSP's notice) that contradict our
// recorded close of it or the result recorded (closedResultNoticed:
// REJECTED after we answered it with our rtrId, accepted after a REJECTED,
// two accepted results), by whether the report was open or ended
// (reportState). Each is noted dict_not_as_ours on the report, which
// pix_med_dict_problems counts only while the report is open: one on an
// ended report (returned in part, ended at return_until, then noticed
// REJECTED) is seen by this counter, its alert
// (PixMEDEndedReportContradicted) and the doors' ERROR only (review r22
// F3, r23 LOW-9).
var contradictionsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "pix_med_dict_contradictions_total",
	Help: "MED refund requests whose CLOSED result taken in contradicts our recorded close or the result recorded, or is none or accepted with no close of ours while the report awaits its request (noted dict_not_as_ours), by whether their report was open or ended.",
}, []string{"report"})

// The report label of contradictionsTotal.
const (
	reportOpen  = "open"
	reportEnded = "ended"
)

// reportState is r's contradictionsTotal label.
func reportState(r Report) string {
	if r.Open() {
		return reportOpen
	}
	return reportEnded
}

// quarantinedTotal counts the items of the DICT's lists the doors refused
// for good, by kind (report, refund), each once at its LastModified: the
// lister recorded it in pix_med_quarantine and moved past it
// (PixMEDDICTItemQuarantined).
var quarantinedTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "pix_med_dict_items_quarantined_total",
	Help: "Items of the DICT's lists (reports, refund requests) the MED saga's doors refused for good: recorded in pix_med_quarantine, the lister's window moved past them (PixMEDDICTItemQuarantined).",
}, []string{"kind"})

// listFailedTotal counts the lister's runs failed for good by a list
// (PixMEDDICTListFailed): refused (the DICT's 4xx: our credentials, our
// query) or instant_too_full (dict.ErrInstantTooFull). The covered end
// stays; the next run lists from it.
var listFailedTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "pix_med_dict_list_failed_total",
	Help: "MED DICT lister runs failed for good by a list, by reason (refused: the DICT answered 4xx; instant_too_full: more items of one status at one instant than a page holds) (PixMEDDICTListFailed).",
}, []string{"reason"})

// The reasons of listFailedTotal.
const (
	listRefused        = "refused"
	listInstantTooFull = "instant_too_full"
)

// bucketTokens is the tokens available in the bank's DICT bucket of each
// list policy the lister throttles its pages by (throttle), as last read
// by this process; NaN after a read that failed; none before a read.
var bucketTokens = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Name: "pix_med_dict_bucket_available_tokens",
	Help: "Tokens available in the bank's DICT rate-limit bucket of a policy (AvailableTokens, getPolicy), as the MED DICT lister last read it; NaN after a read that failed.",
}, []string{"policy"})

// listThrottledTotal counts the pages the lister held back (a bounded
// wait) because their list's bucket was at or below its reserve, by
// policy; bucketReadFailedTotal the reads of a list's bucket that failed
// or were not a bucket's state (the list then goes unthrottled).
var (
	listThrottledTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pix_med_dict_list_throttled_total",
		Help: "Pages of the MED DICT lister held back (the refill of the tokens short, at most 5 s each) because their list's rate-limit bucket was at or below the reserve left to the other callers, by policy.",
	}, []string{"policy"})
	bucketReadFailedTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "pix_med_dict_bucket_read_failed_total",
		Help: "Reads of a list's rate-limit bucket (getPolicy) by the MED DICT lister that failed or were not a bucket's state, by policy: the list went on unthrottled.",
	}, []string{"policy"})
)

// AnalysisAlertBefore is how long before its 7 days a report not closed at
// the DICT yet (awaiting its analysis, or analysed and its close not done)
// counts as due soon (pix_med_analysis_due_soon).
const AnalysisAlertBefore = 24 * time.Hour

// collectors are the saga's metrics: the counters, and the gauges read
// from PostgreSQL at each scrape.
func collectors(env saga.Env) []prometheus.Collector {
	store := NewStore(env.Store)
	gauges := []sagakit.Gauge[OpenCounts]{
		{Desc: prometheus.NewDesc("pix_med_reports_open",
			"Open MED infraction reports (ours, not ended).", nil, nil),
			Value: func(c OpenCounts) float64 { return float64(c.Open) }},
		{Desc: prometheus.NewDesc("pix_med_analysis_due_soon",
			"MED reports not closed at the DICT (awaiting their analysis, or analysed and their close not done) within 24 hours of their 7 days, or past them.", nil, nil),
			Value: func(c OpenCounts) float64 { return float64(c.AnalysisDueSoon) }},
		{Desc: prometheus.NewDesc("pix_med_held_cents",
			"Centavos held by the open MED reports.", nil, nil),
			Value: func(c OpenCounts) float64 { return float64(c.HeldCents) }},
		{Desc: prometheus.NewDesc("pix_med_dict_problems",
			"Open MED reports whose saga stopped at the DICT (refused, or an answer not verified); not those that await a step at the PSP (pix_med_psp_actions_awaited).", nil, nil),
			Value: func(c OpenCounts) float64 { return float64(c.DICTProblems) }},
		{Desc: prometheus.NewDesc("pix_med_psp_actions_awaited",
			"Open MED reports of a bank behind a PSP whose run awaits a step at the PSP (psp_action_awaited: the operator's close through the PSP's channel, the PSP's acknowledge) and its notice.", nil, nil),
			Value: func(c OpenCounts) float64 { return float64(c.PSPActionsAwaited) }},
		{Desc: prometheus.NewDesc("pix_med_psp_action_awaited_seconds",
			"Seconds since the oldest MED report awaiting a step at the PSP last changed (its cue noted); 0 when none awaits (PixMEDPSPActionAwaited).", nil, nil),
			Value: func(c OpenCounts) float64 { return c.PSPActionAwaitedFor.Seconds() }},
		{Desc: prometheus.NewDesc("pix_med_refund_requests_not_taken",
			"MED refund requests OPEN at the DICT that no report takes (came after it ended, or a second one): on-call's.", nil, nil),
			Value: func(c OpenCounts) float64 { return float64(c.Unanswered) }},
	}
	for _, r := range returnRefusals {
		returnsRefusedTotal.WithLabelValues(r.name)
	}
	for _, kind := range []string{QuarantinedReport, QuarantinedRefund} {
		quarantinedTotal.WithLabelValues(kind)
	}
	for _, reason := range []string{listRefused, listInstantTooFull} {
		listFailedTotal.WithLabelValues(reason)
	}
	for _, policy := range listPolicies {
		listThrottledTotal.WithLabelValues(policy)
		bucketReadFailedTotal.WithLabelValues(policy)
	}
	for _, state := range []string{reportOpen, reportEnded} {
		contradictionsTotal.WithLabelValues(state)
	}
	for _, outcome := range []string{keptRejected, keptMoved, keptNotClosed} {
		keptClosedTotal.WithLabelValues(outcome)
	}
	return []prometheus.Collector{intakeTotal, endedTotal, dictStoppedTotal, dictSignatureRefusedTotal, returnsRefusedTotal, lateRequestsTotal,
		contradictionsTotal, quarantinedTotal, listFailedTotal, listThrottledTotal, bucketReadFailedTotal, bucketTokens, keptClosedTotal, ageGauges(env), listerGauges(env, settings.Of(env.Lookup)), quarantineGauges(env), &sagakit.ScrapeGauges[OpenCounts]{
			What:   "med gauges",
			Query:  func(ctx context.Context) (OpenCounts, error) { return store.Open(ctx, AnalysisAlertBefore) },
			Gauges: gauges,
			Log:    env.Log,
		}}
}
