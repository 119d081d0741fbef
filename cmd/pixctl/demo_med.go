package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// demoMEDWait bounds each of the MED demo's waits: the DICT's lister runs
// every 5 s under make run (MED_DICT_LIST_INTERVAL) and lists up to 10 s
// back (MED_DICT_LIST_GRACE), a devolução's end is read 10 s after it is
// asked, then at growing intervals (saga/med SettleFirst).
const demoMEDWait = 2 * time.Minute

// demoMEDPayerISPB is the payer's participant at make run's DICT simulator
// (its DICT_SIM_PARTICIPANTS): the one that reports the PIX and requests
// the refund.
const demoMEDPayerISPB = "99999010"

// demoMEDEvents is how many events of the MED demo's aggregates the demo
// waits for: its two PIX's credits, the transfer's debit and settlement.
const demoMEDEvents = 4

// demoMEDPlan is the MED demo's money, in centavos: the PIX reported, what
// the account keeps of it when the report comes (the rest moved on at
// once, as a fraud's receiver does), and the later credit that fills the
// hold for the rest.
const (
	demoMEDPIXCents    = 10_000
	demoMEDLeftCents   = 4_000
	demoMEDCreditCents = 7_500
)

// demoMED shows MED (saga/med, docs/med.md) in DICT mode, against make
// run's DICT simulator (dict, its control routes): a PIX Maria receives
// through the PSP is moved on at once but R$ 40,00; the payer's bank
// reports it at the DICT; MED lists the report, holds what the account has
// (R$ 40,00, the hold filling from what comes in) and acknowledges it; the
// operator agrees (pixctl med close); the payer's bank requests the refund
// of the R$ 100,00; R$ 40,00 is returned at once; a later PIX of R$ 75,00
// fills the hold with the R$ 60,00 it lacks, returned as the second part;
// the report ends returned. It answers the aggregates of its events (its
// two PIX, the transfer) and the DICT's report id; a DICT simulator that
// does not answer skips it ("" and no error): MED then runs without the
// DICT (MED_DICT_DISABLED=true), which this part does not show.
func demoMED(ctx context.Context, c, psp, dict *apiClient, bankISPB, run string, within time.Duration,
	say func(string, ...any)) (aggregates []string, reportID string, err error) {
	var health struct{}
	if status, err := dict.call(ctx, http.MethodGet, "/healthz", nil, &health); err != nil || status != http.StatusOK {
		say("\n20. MED: no DICT simulator answers at %s (make run starts one unless MED_DICT_URL or MED_DICT_DISABLED=true): skipped", dict.base)
		return nil, "", nil
	}
	e2e := demoID(run, 10)
	operator := c.asOperator()
	balance := demoBalance(ctx, c, demoRefundAccount, say)

	say("\n20. MED: Maria receives R$ 100,00 through the PSP, and at once sends on all her account has but R$ 40,00 (a fraud's money moves on)")
	received := map[string]any{
		"endToEndId": e2e, "valor": "100.00", "horario": time.Now().UTC().Format(time.RFC3339),
		"chave": demoRefundPixKey, "infoPagador": "pixctl demo: MED",
	}
	if _, err := demoReceiveThroughPSP(ctx, c, psp, e2e, received, within, say); err != nil {
		return nil, "", err
	}
	t, err := demoMEDMoveOn(ctx, c, balance, say)
	if err != nil {
		return nil, "", err
	}

	say("21. The payer's bank reports the PIX as a fraud at the DICT: an infraction report of R$ 100,00")
	if reportID, err = demoMEDOpenReport(ctx, dict, e2e, bankISPB, say); err != nil {
		return nil, "", err
	}
	say("   MED lists the DICT, holds what the account has (the hold filling from what comes in) and acknowledges the report; waiting...")
	r, err := awaitMEDReport(ctx, operator, reportID, within, "acknowledged", func(r medReport) bool { return r.DICTStatus == "ACKNOWLEDGED" })
	if err != nil {
		return nil, reportID, err
	}
	sayMEDReport(say, r)
	if _, err := balance(); err != nil {
		return nil, reportID, err
	}

	say("22. The operator agrees: pixctl med close %s agreed -details '...' (POST /pix/med/reports/{id}/analysis)", reportID)
	if err := demoMEDAgree(ctx, operator, reportID); err != nil {
		return nil, reportID, err
	}
	if r, err = awaitMEDReport(ctx, operator, reportID, within, "closed AGREED at the DICT",
		func(r medReport) bool { return r.Status == "awaiting_refund_request" }); err != nil {
		return nil, reportID, err
	}
	sayMEDReport(say, r)

	say("23. The payer's bank requests the refund of the R$ 100,00: the R$ 40,00 held is returned at once (the first part)")
	refundID, err := demoMEDRequestRefund(ctx, dict, reportID, say)
	if err != nil {
		return nil, reportID, err
	}
	if r, err = awaitMEDReport(ctx, operator, reportID, within, "its first part returning",
		func(r medReport) bool { return r.Status == "returning" || r.ReturnedCents > 0 }); err != nil {
		return nil, reportID, err
	}
	sayMEDReport(say, r)
	say("   a devolução of the R$ 40,00 held is on its way; the hold is kept, filling from what comes in for the R$ 60,00 left")
	if _, err := balance(); err != nil {
		return nil, reportID, err
	}

	say("24. Maria receives R$ 75,00: the hold takes the R$ 60,00 it lacks in the credit's own transaction, returned as the second part")
	credit := demoID(run, 11)
	received = map[string]any{
		"endToEndId": credit, "valor": "75.00", "horario": time.Now().UTC().Format(time.RFC3339),
		"chave": demoRefundPixKey, "infoPagador": "pixctl demo: MED, a later credit",
	}
	if _, err := demoReceiveThroughPSP(ctx, c, psp, credit, received, within, say); err != nil {
		return nil, reportID, err
	}
	if _, err := balance(); err != nil {
		return nil, reportID, err
	}
	if r, err = awaitMEDReport(ctx, operator, reportID, within, "ended",
		func(r medReport) bool { return r.Status == "ended" }); err != nil {
		return nil, reportID, err
	}
	sayMEDReport(say, r)
	if r.EndCause == nil || *r.EndCause != "returned" || r.ReturnedCents != demoMEDPIXCents {
		return nil, reportID, fmt.Errorf("report %s ended %s with %s returned, not returned in full: see %s", reportID,
			deref(r.EndCause), brl(r.ReturnedCents), r.TemporalUIURL)
	}
	if err := demoMEDSayRefund(ctx, dict, refundID, say); err != nil {
		return nil, reportID, err
	}
	if _, err := balance(); err != nil {
		return nil, reportID, err
	}
	return []string{e2e, credit, t.ID}, reportID, nil
}

// demoMEDMoveOn is step 20's second half: Maria sends on all her account
// has but demoMEDLeftCents (a fraud's money moves on), so that the report's
// hold takes less than the PIX and fills from what comes in.
func demoMEDMoveOn(ctx context.Context, c *apiClient, balance func() (account, error), say func(string, ...any)) (transfer, error) {
	before, err := balance()
	if err != nil {
		return transfer{}, err
	}
	if before.AvailableCents <= demoMEDLeftCents {
		return transfer{}, fmt.Errorf("account %s has %s available, not more than the %s the demo leaves it", demoRefundAccount,
			brl(before.AvailableCents), brl(demoMEDLeftCents))
	}
	var t transfer
	status, _, err := c.as(demoRefundAccount).callWith(ctx, http.MethodPost, "/pix", http.Header{"Idempotency-Key": {newKey()}},
		map[string]any{"account_id": demoRefundAccount, "amount_cents": before.AvailableCents - demoMEDLeftCents,
			"pix_key": "joao@example.com", "description": "pixctl demo: MED"}, &t)
	if err == nil && t.Error != nil {
		err = fmt.Errorf("send %s from %s: HTTP %d %s", brl(before.AvailableCents-demoMEDLeftCents), demoRefundAccount, status, t.Error.Code)
	}
	if err != nil {
		return transfer{}, err
	}
	say("   POST /pix -> %d transfer %s %s status=%s", status, t.ID, brl(before.AvailableCents-demoMEDLeftCents), t.Status)
	if _, err := balance(); err != nil {
		return transfer{}, err
	}
	return t, nil
}

// demoMEDOpenReport is step 21's report: the payer's bank opens an
// infraction report at the DICT simulator about the PIX e2e.
func demoMEDOpenReport(ctx context.Context, dict *apiClient, e2e, bankISPB string, say func(string, ...any)) (string, error) {
	var opened struct {
		apiError
		Report struct {
			ID string `json:"ID"`
		} `json:"infraction_report"`
	}
	status, err := dict.call(ctx, http.MethodPost, "/sim/infraction-reports", map[string]any{
		"end_to_end_id": e2e, "amount_cents": demoMEDPIXCents, "debited": demoMEDPayerISPB, "credited": bankISPB,
		"details": "pixctl demo: the payer says it was a scam"}, &opened)
	if err == nil {
		err = check(status, opened.apiError, "open an infraction report at the DICT simulator")
	}
	if err != nil {
		return "", err
	}
	say("   POST %s/sim/infraction-reports -> %d report %s", dict.base, status, opened.Report.ID)
	return opened.Report.ID, nil
}

// demoMEDAgree is step 22's analysis: the operator closes the report
// AGREED through the route pixctl med close uses.
func demoMEDAgree(ctx context.Context, operator *apiClient, reportID string) error {
	var analysed struct {
		apiError
		medReport
	}
	status, _, err := operator.callWith(ctx, http.MethodPost, medReportPath(reportID)+"/analysis", http.Header{"Idempotency-Key": {newKey()}},
		map[string]any{"result": "AGREED", "details": "pixctl demo: the receiver's account shows the scam's pattern"}, &analysed)
	if err == nil {
		err = check(status, analysed.apiError, "close med report "+reportID)
	}
	if err != nil {
		return err
	}
	return nil
}

// demoMEDRequestRefund is step 23's request: the payer's bank requests at
// the DICT simulator the refund of the whole PIX the report is about.
func demoMEDRequestRefund(ctx context.Context, dict *apiClient, reportID string, say func(string, ...any)) (string, error) {
	var refund struct {
		apiError
		Refund struct {
			ID string `json:"ID"`
		} `json:"refund"`
	}
	status, err := dict.call(ctx, http.MethodPost, "/sim/refunds", map[string]any{
		"infraction_report_id": reportID, "amount_cents": demoMEDPIXCents}, &refund)
	if err == nil {
		err = check(status, refund.apiError, "open a refund request at the DICT simulator")
	}
	if err != nil {
		return "", err
	}
	say("   POST %s/sim/refunds -> %d refund request %s", dict.base, status, refund.Refund.ID)
	return refund.Refund.ID, nil
}

// demoMEDSayRefund reads the refund request id back at the DICT simulator
// and prints how it was closed (its result and RefundTransactionId).
func demoMEDSayRefund(ctx context.Context, dict *apiClient, id string, say func(string, ...any)) error {
	var closed struct {
		apiError
		Refund struct {
			Status              string `json:"Status"`
			AnalysisResult      string `json:"AnalysisResult"`
			RefundTransactionID string `json:"RefundTransactionID"`
		} `json:"refund"`
	}
	status, err := dict.call(ctx, http.MethodGet, "/sim/refunds/"+id, nil, &closed)
	if err == nil {
		err = check(status, closed.apiError, "read the refund request at the DICT simulator")
	}
	if err != nil {
		return err
	}
	say("   at the DICT: refund request %s %s %s, RefundTransactionId %s", id, closed.Refund.Status,
		closed.Refund.AnalysisResult, closed.Refund.RefundTransactionID)
	return nil
}

// sayMEDReport prints the state of a report the demo follows.
func sayMEDReport(say func(string, ...any), r medReport) {
	say("   report %s status=%s dict=%s held %s returned %s%s", r.ID, r.Status, r.DICTStatus, brl(r.HeldCents), brl(r.ReturnedCents),
		map[bool]string{true: " (" + deref(r.EndCause) + ")", false: ""}[r.EndCause != nil])
}

// awaitMEDReport waits, for at most within, for the report to exist and
// be as done says (what names it in the error), and answers it.
func awaitMEDReport(ctx context.Context, operator *apiClient, id string, within time.Duration, what string, done func(medReport) bool) (medReport, error) {
	var last medReport
	err := pollUntil(ctx, within, 500*time.Millisecond, "report "+id+" not "+what, func() (int, error) {
		var r struct {
			apiError
			medReport
		}
		status, err := operator.call(ctx, http.MethodGet, medReportPath(id), nil, &r)
		switch {
		case err != nil:
			return 0, err
		case status == http.StatusNotFound:
			return 1, nil // not listed yet
		case status == http.StatusServiceUnavailable:
			return 1, nil // the API says to retry later: the next poll does
		}
		if err := check(status, r.apiError, "show med report "+id); err != nil {
			return 0, err
		}
		last = r.medReport
		if last.DICTProblem != nil {
			return 0, fmt.Errorf("report %s stopped at the DICT (%s): see its run %s", id, *last.DICTProblem, last.TemporalUIURL)
		}
		if done(last) {
			return 0, nil
		}
		return 1, nil
	})
	if err != nil && last.TemporalUIURL != "" && !errors.Is(err, context.Canceled) {
		err = fmt.Errorf("%w: status %s; see its run in the Temporal UI: %s", err, last.Status, last.TemporalUIURL)
	}
	return last, err
}
