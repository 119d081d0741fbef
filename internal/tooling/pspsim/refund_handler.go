package pspsim

import (
	"encoding/json"
	"log/slog"
	"net/http"

	"github.com/pixbank/pix/internal/psp"
)

// Error codes of the devolução routes.
const (
	// CodeRefundIDReused answers a PUT whose id is already another
	// devolução (another valor, natureza or descricao) of the PIX.
	CodeRefundIDReused = psp.CodeRefundIDReused
	CodeRefundNotFound = "refund_not_found"
	// CodeRefundRefused is the BCB's business refusal of a devolução (past
	// its window, over the PIX's value): nothing was made.
	CodeRefundRefused = psp.CodeRefundRefused
)

// refundRequestJSON is the body of PUT /pix/{e2eid}/devolucao/{id}.
type refundRequestJSON struct {
	Valor     string `json:"valor"`
	Natureza  string `json:"natureza"`
	Descricao string `json:"descricao"`
}

func (s *Simulator) handlePutRefund(w http.ResponseWriter, r *http.Request) {
	in := refundIn{endToEndID: r.PathValue("e2eid"), id: r.PathValue("id")}
	note(r, slog.String("end_to_end_id", in.endToEndID), slog.String("refund_id", in.id))
	var body refundRequestJSON
	if err := decodeBody(w, r, &body); err != nil {
		writeDecodeError(w, err)
		return
	}
	in.nature, in.description = body.Natureza, body.Descricao
	if refuseInvalid(w, r, validateRefund(&in, body.Valor)) {
		return
	}
	dec := s.requestRefund(in)
	note(r, slog.String("mode", string(dec.mode)), slog.String("outcome", dec.outcome.String()))
	switch dec.outcome {
	case refundUnavailable:
		writeError(w, http.StatusServiceUnavailable, CodeUnavailable, "the psp is unavailable (simulated failure); nothing was made")
		return
	case refundRefused:
		writeError(w, http.StatusUnauthorized, CodeUnauthorized, "the psp refused our credentials (simulated); nothing was made")
		return
	case refundInvalid:
		writeError(w, http.StatusBadRequest, CodeRefundRefused, "devolução not allowed for this PIX (simulated refusal); nothing was made")
		return
	case refundConflict:
		writeError(w, http.StatusConflict, CodeRefundIDReused,
			"devolução "+in.id+" of "+in.endToEndID+" is already a devolução with another valor, natureza or descricao; nothing was changed")
		return
	}
	holdAnswer(r, "delay", dec.delay)
	if dec.lose {
		// The devolução exists; the answer never leaves.
		loseAnswer(r)
	}
	v, _ := s.Refund(in.endToEndID, in.id) // devoluções are never deleted
	code := http.StatusOK
	if dec.outcome == refundCreated {
		code = http.StatusCreated
	}
	note(r, slog.String("refund_status", string(v.Status)))
	writeJSON(w, code, v.wire())
}

// refundPathError checks the path of a devolução route, answering 400 when
// it is malformed.
func refundPathError(w http.ResponseWriter, e2e, id string, hasID bool) bool {
	switch {
	case !endToEndIDPattern.MatchString(e2e):
		writeError(w, http.StatusBadRequest, CodeInvalidRequest, "e2eid must be 32 characters: E followed by 31 letters or digits")
		return true
	case hasID && !refundIDPattern.MatchString(id):
		writeError(w, http.StatusBadRequest, CodeInvalidRequest, "id must be 1 to 35 letters or digits")
		return true
	}
	return false
}

func (s *Simulator) handleGetRefund(w http.ResponseWriter, r *http.Request) {
	e2e, id := r.PathValue("e2eid"), r.PathValue("id")
	note(r, slog.String("end_to_end_id", e2e), slog.String("refund_id", id))
	if refundPathError(w, e2e, id, true) {
		return
	}
	v, ok := s.Refund(e2e, id)
	if !ok {
		writeError(w, http.StatusNotFound, CodeRefundNotFound, "no devolução "+id+" of "+e2e)
		return
	}
	note(r, slog.String("refund_status", string(v.Status)))
	writeJSON(w, http.StatusOK, v.wire())
}

func (s *Simulator) handleListRefunds(w http.ResponseWriter, r *http.Request) {
	e2e := r.PathValue("e2eid")
	note(r, slog.String("end_to_end_id", e2e))
	if refundPathError(w, e2e, "", false) {
		return
	}
	list := s.Refunds(e2e)
	out := make([]devolucaoJSON, len(list))
	for i, v := range list {
		out[i] = v.wire()
	}
	writeJSON(w, http.StatusOK, map[string]any{"devolucoes": out})
}

// refundBehaviorRoutes are the routes of the PIX's refund behaviours.
func (s *Simulator) refundBehaviorRoutes() behaviorRoutes[RefundBehavior, refundBehaviorListing] {
	return behaviorRoutes[RefundBehavior, refundBehaviorListing]{reg: &s.refundBehaviors, path: "/refund-behaviors", param: "e2eid", logKey: "end_to_end_id",
		list: "refund_behaviors", listing: func(endToEndID string, e entry[RefundBehavior]) refundBehaviorListing {
			return refundBehaviorListing{EndToEndID: endToEndID, refundBehaviorJSON: e.behavior.wire(), Requests: e.requests}
		}}
}

// refundBehaviorListing is one entry of GET /refund-behaviors.
type refundBehaviorListing struct {
	EndToEndID string `json:"end_to_end_id"`
	refundBehaviorJSON
	Requests int `json:"requests"`
}

// handlePostPix remembers a PIX received (an API Pix PIX object) and, with
// a webhook URL, queues its delivery to the bank.
func (s *Simulator) handlePostPix(w http.ResponseWriter, r *http.Request) {
	var obj map[string]json.RawMessage
	if err := decodeBody(w, r, &obj); err != nil {
		writeDecodeError(w, err)
		return
	}
	if obj == nil {
		writeError(w, http.StatusBadRequest, CodeInvalidRequest, "the body must be one PIX object")
		return
	}
	e2e, msg := validatePix(obj)
	if refuseInvalid(w, r, msg) {
		return
	}
	note(r, slog.String("end_to_end_id", e2e))
	s.receivePix(e2e, obj)
	webhook := "disabled"
	if s.webhookURL != "" {
		webhook = "queued"
	}
	writeJSON(w, http.StatusAccepted, map[string]string{"end_to_end_id": e2e, "webhook": webhook})
}
