package pspsim

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/pixbank/pix/internal/psp"
)

// refundRequestJSON is the body of PUT /pix/{e2eid}/devolucao/{id}.
type refundRequestJSON struct {
	Valor     string `json:"valor"`
	Natureza  string `json:"natureza"`
	Descricao string `json:"descricao"`
}

// handlePutRefund is PUT /pix/{e2eid}/devolucao/{id}. Its refusals are
// the API Pix's problems: PixDevolucaoInvalida (400), NaoEncontrado (404,
// with Options.RefundsNeedPix), ServicoIndisponivel (503).
func (s *Simulator) handlePutRefund(w http.ResponseWriter, r *http.Request) {
	in := refundIn{endToEndID: r.PathValue("e2eid"), id: r.PathValue("id")}
	note(r, slog.String("end_to_end_id", in.endToEndID), slog.String("refund_id", in.id))
	var body refundRequestJSON
	if err := decodeBody(w, r, &body); err != nil {
		refuseRefund(w, r, "the body is not a DevolucaoSolicitada: "+decodeProblem(err))
		return
	}
	in.nature, in.description = body.Natureza, body.Descricao
	if msg := validateRefund(&in, body.Valor); msg != "" {
		refuseRefund(w, r, msg)
		return
	}
	dec := s.requestRefund(in)
	note(r, slog.String("mode", string(dec.mode)), slog.String("outcome", dec.outcome.String()))
	switch dec.outcome {
	case refundUnavailable:
		writeUnavailable(w, "the psp is unavailable (simulated failure); nothing was made")
		return
	case refundRefused:
		writeInvalidToken(w, r, "credentials refused (simulated); nothing was made")
		return
	case refundInvalid:
		writeProblem(w, http.StatusBadRequest, ProblemPixDevolucaoInvalida, "devolução not allowed for this PIX (simulated refusal); nothing was made")
		return
	case refundIDReused:
		writeProblem(w, http.StatusBadRequest, ProblemPixDevolucaoInvalida,
			"the id is already used by another devolução of this PIX; nothing was changed",
			violacaoJSON{Razao: "id já utilizado por outra devolução", Propriedade: "id", Valor: in.id})
		return
	case refundRetryRefused:
		writeProblem(w, http.StatusBadRequest, ProblemPixDevolucaoInvalida,
			"the id is already used by a devolução of this PIX (a repeated request, refused: simulated refuse_retry); nothing was changed",
			violacaoJSON{Razao: "id já utilizado", Propriedade: "id", Valor: in.id})
		return
	case refundOverValue:
		writeProblem(w, http.StatusBadRequest, ProblemPixDevolucaoInvalida,
			"with the earlier devoluções, this one would exceed the PIX's valor; nothing was made",
			violacaoJSON{Razao: "excede o valor do pix", Propriedade: "valor", Valor: psp.FormatValor(in.amountCents)})
		return
	case refundPastWindow:
		writeProblem(w, http.StatusBadRequest, ProblemPixDevolucaoInvalida,
			"past the window of a devolução (90 days from the PIX); nothing was made",
			violacaoJSON{Razao: "fora da janela de devolução", Propriedade: "e2eid", Valor: in.endToEndID})
		return
	case refundUnknownPix:
		writeProblem(w, http.StatusNotFound, ProblemNaoEncontrado, "no PIX received with this e2eid")
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

// refuseRefund answers 400 PixDevolucaoInvalida for a PUT that does not
// meet the schema: msg says what is wrong.
func refuseRefund(w http.ResponseWriter, r *http.Request, msg string) {
	note(r, slog.String("outcome", "invalid"))
	writeProblem(w, http.StatusBadRequest, ProblemPixDevolucaoInvalida, msg)
}

// decodeProblem says what decodeBody's err found wrong with a body.
func decodeProblem(err error) string {
	if errors.Is(err, errBodyTooLarge) {
		return fmt.Sprintf("larger than %d bytes", maxBodyBytes)
	}
	return err.Error()
}

// validPathIDs reports whether e2e, and id when hasID, are well formed: a
// GET of a malformed one answers 404, there being no such thing.
func validPathIDs(e2e, id string, hasID bool) bool {
	return endToEndIDPattern.MatchString(e2e) && (!hasID || refundIDPattern.MatchString(id))
}

func (s *Simulator) handleGetRefund(w http.ResponseWriter, r *http.Request) {
	e2e, id := r.PathValue("e2eid"), r.PathValue("id")
	note(r, slog.String("end_to_end_id", e2e), slog.String("refund_id", id))
	v, ok := RefundView{}, false
	if validPathIDs(e2e, id, true) {
		v, ok = s.Refund(e2e, id)
	}
	if !ok {
		writeProblem(w, http.StatusNotFound, ProblemNaoEncontrado, "no devolução "+id+" of "+e2e)
		return
	}
	note(r, slog.String("refund_status", string(v.Status)))
	writeJSON(w, http.StatusOK, v.wire())
}

// handleListRefunds is the simulator's own GET /pix/{e2eid}/devolucao (not
// the API Pix's): every devolução of a PIX.
func (s *Simulator) handleListRefunds(w http.ResponseWriter, r *http.Request) {
	e2e := r.PathValue("e2eid")
	note(r, slog.String("end_to_end_id", e2e))
	if !validPathIDs(e2e, "", false) {
		writeError(w, http.StatusBadRequest, CodeInvalidRequest, "e2eid must be 32 characters: E followed by 31 letters or digits")
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

// handlePostPix remembers a PIX received (an API Pix PIX object; without
// horario, the simulator's now) and queues its webhook: to the webhook
// registered for its key, else Options.WebhookURL. It is in GET /pix
// whether or not a webhook is sent.
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
	facts, msg := validatePix(obj)
	if refuseInvalid(w, r, msg) {
		return
	}
	note(r, slog.String("end_to_end_id", facts.endToEndID))
	webhook := s.receivePix(facts, obj)
	note(r, slog.String("webhook", webhook))
	writeJSON(w, http.StatusAccepted, map[string]string{"end_to_end_id": facts.endToEndID, "webhook": webhook})
}
