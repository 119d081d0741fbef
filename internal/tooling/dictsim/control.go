package dictsim

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/pixbank/pix/internal/dict"
)

// maxControlBytes bounds a control request's body.
const maxControlBytes = 64 << 10

// ControlHandler is the simulator's control routes, JSON, on a handler of
// their own (the DICT's API is behind mutual TLS; the tools that drive
// the simulator need no certificate):
//
//	POST   /sim/infraction-reports             open a report against a PIX (a ReportRequest), 201 {"infraction_report":...}
//	GET    /sim/infraction-reports             {"infraction_reports":[...]}
//	GET    /sim/infraction-reports/{id}        {"infraction_report":...}
//	POST   /sim/infraction-reports/{id}/cancel its creator cancels it, 200 {"infraction_report":...}
//	POST   /sim/refunds                        open a refund request of an AGREED report (a RefundRequest), 201 {"refund":...}
//	GET    /sim/refunds                        {"refunds":[...]}
//	GET    /sim/refunds/{id}                   {"refund":...}
//	POST   /sim/refunds/{id}/cancel            its requester cancels it, 200 {"refund":...}
//	PUT    /sim/lost-answers                   {"count":1,"how":"cut"|"gateway_timeout"}: LoseAnswers, 204
//	DELETE /sim/lost-answers                   stop losing them, 204
//	PUT    /sim/rate-limit-storm               {"for":"30s"}: RateLimitStorm, 204
//	DELETE /sim/rate-limit-storm               EndRateLimitStorm, 204
//	PUT    /sim/outage                         {"for":"1m","status":503}: SetOutage, 204
//	DELETE /sim/outage                         EndOutage, 204
//	GET    /sim/faults                         a FaultsView
//	GET    /sim/clock                          {"now":...}
//	POST   /sim/clock/advance                  {"by":"72h"}: Advance, 200 {"now":...}
//	GET    /sim/calls                          {"calls":{"getInfractionReport":3,...}}
//	GET    /healthz                            200
//
// Errors are {"error":{"code","message"}}: 400 invalid_request, 404
// not_found, and 409 with the DICT's problem's name for what the DICT's
// rules refuse (InfractionReportAlreadyBeingProcessedForTransaction, ...).
// The reports and refund requests are shown as the client reads them
// (dict.InfractionReport, dict.Refund: their fields by their Go names).
func (s *Simulator) ControlHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /sim/infraction-reports", s.handleOpenReport)
	mux.HandleFunc("GET /sim/infraction-reports", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"infraction_reports": s.Reports()})
	})
	mux.HandleFunc("GET /sim/infraction-reports/{id}", func(w http.ResponseWriter, r *http.Request) {
		rep, ok := s.Report(r.PathValue("id"))
		answerControl(w, http.StatusOK, "infraction_report", rep, errOfFound(ok))
	})
	mux.HandleFunc("POST /sim/infraction-reports/{id}/cancel", func(w http.ResponseWriter, r *http.Request) {
		rep, err := s.CancelReport(r.PathValue("id"))
		answerControl(w, http.StatusOK, "infraction_report", rep, err)
	})
	mux.HandleFunc("POST /sim/refunds", s.handleOpenRefund)
	mux.HandleFunc("GET /sim/refunds", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"refunds": s.Refunds()})
	})
	mux.HandleFunc("GET /sim/refunds/{id}", func(w http.ResponseWriter, r *http.Request) {
		f, ok := s.Refund(r.PathValue("id"))
		answerControl(w, http.StatusOK, "refund", f, errOfFound(ok))
	})
	mux.HandleFunc("POST /sim/refunds/{id}/cancel", func(w http.ResponseWriter, r *http.Request) {
		f, err := s.CancelRefund(r.PathValue("id"))
		answerControl(w, http.StatusOK, "refund", f, err)
	})
	s.faultRoutes(mux)
	mux.HandleFunc("GET /sim/clock", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]time.Time{"now": s.Now()})
	})
	mux.HandleFunc("POST /sim/clock/advance", func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			By string `json:"by"`
		}
		d, err := decodeDuration(r, &body, &body.By)
		var now time.Time
		if err == nil {
			now, err = s.Advance(d)
		}
		answerControl(w, http.StatusOK, "now", now, err)
	})
	mux.HandleFunc("GET /sim/calls", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"calls": s.Calls()})
	})
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	return mux
}

// ReportRequest is the body of POST /sim/infraction-reports: a NewReport.
type ReportRequest struct {
	EndToEndID     string `json:"end_to_end_id"`
	AmountCents    int64  `json:"amount_cents"`
	Debited        string `json:"debited"`
	Credited       string `json:"credited"`
	ReportedBy     string `json:"reported_by,omitempty"`
	InfractionType string `json:"infraction_type,omitempty"`
	Details        string `json:"details,omitempty"`
}

func (s *Simulator) handleOpenReport(w http.ResponseWriter, r *http.Request) {
	var in ReportRequest
	if err := decode(r, &in); err != nil {
		answerControl(w, 0, "", nil, err)
		return
	}
	rep, err := s.OpenReport(NewReport{
		EndToEndID: in.EndToEndID, Amount: dict.Amount(in.AmountCents), Debited: in.Debited, Credited: in.Credited,
		ReportedBy: dict.ReportedBy(in.ReportedBy), InfractionType: dict.InfractionType(in.InfractionType), Details: in.Details,
	})
	answerControl(w, http.StatusCreated, "infraction_report", rep, err)
}

// RefundRequest is the body of POST /sim/refunds: a NewRefund.
type RefundRequest struct {
	InfractionReportID string `json:"infraction_report_id"`
	AmountCents        int64  `json:"amount_cents,omitempty"`
	Reason             string `json:"reason,omitempty"`
	Details            string `json:"details,omitempty"`
}

func (s *Simulator) handleOpenRefund(w http.ResponseWriter, r *http.Request) {
	var in RefundRequest
	if err := decode(r, &in); err != nil {
		answerControl(w, 0, "", nil, err)
		return
	}
	f, err := s.OpenRefund(NewRefund{
		InfractionReportID: in.InfractionReportID, Amount: dict.Amount(in.AmountCents),
		Reason: dict.RefundReason(in.Reason), Details: in.Details,
	})
	answerControl(w, http.StatusCreated, "refund", f, err)
}

// faultRoutes are the control routes of the faults (faults.go).
func (s *Simulator) faultRoutes(mux *http.ServeMux) {
	mux.HandleFunc("PUT /sim/lost-answers", func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Count int  `json:"count"`
			How   Loss `json:"how"`
		}
		err := decode(r, &body)
		if err == nil {
			err = s.LoseAnswers(body.Count, body.How)
		}
		answerControl(w, http.StatusNoContent, "", nil, err)
	})
	mux.HandleFunc("DELETE /sim/lost-answers", func(w http.ResponseWriter, _ *http.Request) {
		_ = s.LoseAnswers(0, LossNone) // 0 is always valid
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("PUT /sim/rate-limit-storm", func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			For string `json:"for"`
		}
		d, err := decodeDuration(r, &body, &body.For)
		if err == nil {
			err = s.RateLimitStorm(d)
		}
		answerControl(w, http.StatusNoContent, "", nil, err)
	})
	mux.HandleFunc("DELETE /sim/rate-limit-storm", func(w http.ResponseWriter, _ *http.Request) {
		s.EndRateLimitStorm()
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("PUT /sim/outage", func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			For    string `json:"for"`
			Status int    `json:"status"`
		}
		d, err := decodeDuration(r, &body, &body.For)
		if err == nil {
			err = s.SetOutage(Outage{For: d, Status: body.Status})
		}
		answerControl(w, http.StatusNoContent, "", nil, err)
	})
	mux.HandleFunc("DELETE /sim/outage", func(w http.ResponseWriter, _ *http.Request) {
		s.EndOutage()
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("GET /sim/faults", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, s.Faults())
	})
}

// decode reads r's JSON body into v: one object, no field v does not
// have (a misspelt "for" must not mean no duration).
func decode(r *http.Request, v any) error {
	b, err := io.ReadAll(io.LimitReader(r.Body, maxControlBytes+1))
	if err != nil || len(b) > maxControlBytes {
		return fmt.Errorf("%w: body unreadable or larger than %d bytes", ErrInvalid, maxControlBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%w: malformed JSON body: %w", ErrInvalid, err)
	}
	if dec.More() {
		return fmt.Errorf("%w: more than one JSON value", ErrInvalid)
	}
	return nil
}

// decodeDuration decodes r's body into v, then the Go duration ("30s") at
// field.
func decodeDuration(r *http.Request, v any, field *string) (time.Duration, error) {
	if err := decode(r, v); err != nil {
		return 0, err
	}
	d, err := time.ParseDuration(*field)
	if err != nil {
		return 0, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return d, nil
}

func errOfFound(ok bool) error {
	if ok {
		return nil
	}
	return ErrNoSuch
}

// answerControl answers a control call: {name: v} with status, or, with
// no name, status alone; err's answer instead when there is one.
func answerControl(w http.ResponseWriter, status int, name string, v any, err error) {
	var p *dict.Problem
	switch {
	case errors.Is(err, ErrNoSuch):
		writeError(w, http.StatusNotFound, "not_found", err.Error())
	case errors.As(err, &p):
		writeError(w, http.StatusConflict, p.Name(), err.Error())
	case err != nil:
		writeError(w, http.StatusBadRequest, "invalid_request", err.Error())
	case name == "":
		w.WriteHeader(status)
	default:
		writeJSON(w, status, map[string]any{name: v})
	}
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, map[string]any{"error": map[string]string{"code": code, "message": msg}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v) // the status is sent; a write error is a client gone
}
