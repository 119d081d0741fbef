package pspsim

import (
	"cmp"
	"crypto/rand"
	"errors"
	"fmt"
	"regexp"
	"time"
	"unicode/utf8"

	"github.com/pixbank/pix/internal/psp"
)

// refundIDPattern is the API Pix's id of a devolução.
var refundIDPattern = regexp.MustCompile(`^[a-zA-Z0-9]{1,35}$`)

// Natures of a devolução the simulator accepts.
const (
	natureOriginal = psp.NatureOriginal
	natureRetirada = "RETIRADA" // of the withdrawal or change of a Pix Saque/Troco
)

// simISPB is the ISPB in the rtrIds the simulator makes.
const simISPB = "99999999"

// devolucao is one devolução as the PSP holds it. Its outcome (final,
// reason) is fixed when it is made, by the behaviour of that moment; it
// shows from resolveAt on. A final of "" never shows: stay_processing.
type devolucao struct {
	endToEndID  string
	id          string
	rtrID       string
	amountCents int64
	// nature is the natureza asked (ORIGINAL or RETIRADA, what a request
	// may carry), answered the natureza the answers show: the one asked,
	// or a MED return's (medNature) when the devolução answers a MED
	// refund request open on its PIX.
	nature, answered string
	description      string
	requestedAt      time.Time
	resolveAt        time.Time
	final            psp.RefundStatus
	reason           string
}

// status is where d stands at now, and when it was settled (DEVOLVIDO).
func (d *devolucao) status(now time.Time) (psp.RefundStatus, time.Time) {
	if d.final == "" || now.Before(d.resolveAt) {
		return psp.RefundInProcessing, time.Time{}
	}
	if d.final == psp.RefundReturned {
		return d.final, d.resolveAt
	}
	return d.final, time.Time{}
}

// accepted reports whether d counts against the PIX's limit: everything
// but a devolução that is, or will be, NAO_REALIZADO.
func (d *devolucao) accepted() bool { return d.final != psp.RefundNotDone }

// refundKey names one devolução.
type refundKey struct{ endToEndID, id string }

// RefundView is the PSP's view of one devolução.
type RefundView struct {
	EndToEndID  string
	ID          string
	RtrID       string
	AmountCents int64
	Nature      string
	Description string
	Status      psp.RefundStatus
	Reason      string    // motivo, when NAO_REALIZADO
	RequestedAt time.Time // horario.solicitacao
	SettledAt   time.Time // horario.liquidacao, zero unless DEVOLVIDO
	// Received is how many valid PUTs arrived for this id: replays and
	// those answered 503, 401 or 409 included.
	Received int
}

// RefundBehaviorView is a PIX's refund behaviour as GET /refund-behaviors
// lists it.
type RefundBehaviorView struct {
	EndToEndID string
	Behavior   RefundBehavior
	// Requests is how many valid PUTs to the PIX's devoluções arrived since
	// the behaviour was set.
	Requests int
}

// SetRefundBehavior makes the devoluções of the PIX endToEndID behave as b
// from now on, restarting the count of its PUTs. Devoluções that exist keep
// the outcome they were made with.
func (s *Simulator) SetRefundBehavior(endToEndID string, b RefundBehavior) error {
	return s.refundBehaviors.set(endToEndID, b)
}

// checkEndToEndID refuses a malformed end_to_end_id.
func checkEndToEndID(endToEndID string) error {
	if !endToEndIDPattern.MatchString(endToEndID) {
		return errors.New("end_to_end_id must be 32 characters: E followed by 31 letters or digits")
	}
	return nil
}

// DeleteRefundBehavior makes the devoluções of the PIX return again.
func (s *Simulator) DeleteRefundBehavior(endToEndID string) {
	s.refundBehaviors.remove(endToEndID)
}

// RefundBehaviors lists the PIX that have a refund behaviour, by
// end_to_end_id.
func (s *Simulator) RefundBehaviors() []RefundBehaviorView {
	return entries(&s.refundBehaviors, func(endToEndID string, e entry[RefundBehavior]) RefundBehaviorView {
		return RefundBehaviorView{EndToEndID: endToEndID, Behavior: e.behavior, Requests: e.requests}
	})
}

// Refund returns the PSP's view of one devolução, as of now.
func (s *Simulator) Refund(endToEndID, id string) (RefundView, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.findRefund(endToEndID, id)
	if d == nil {
		return RefundView{}, false
	}
	return s.refundView(d), true
}

// Refunds returns the PSP's view of the devoluções of one PIX, as of now,
// in the order they were asked for.
func (s *Simulator) Refunds(endToEndID string) []RefundView {
	s.mu.Lock()
	defer s.mu.Unlock()
	list := s.refunds[endToEndID]
	out := make([]RefundView, 0, len(list))
	for _, d := range list {
		out = append(out, s.refundView(d))
	}
	return out
}

// findRefund returns the devolução id of the PIX, nil if none. The caller
// holds s.mu.
func (s *Simulator) findRefund(endToEndID, id string) *devolucao {
	for _, d := range s.refunds[endToEndID] {
		if d.id == id {
			return d
		}
	}
	return nil
}

// refundView is d as the PSP shows it now. The caller holds s.mu.
func (s *Simulator) refundView(d *devolucao) RefundView {
	st, settled := d.status(s.now())
	v := RefundView{
		EndToEndID:  d.endToEndID,
		ID:          d.id,
		RtrID:       d.rtrID,
		AmountCents: d.amountCents,
		Nature:      d.answered,
		Description: d.description,
		Status:      st,
		RequestedAt: d.requestedAt,
		SettledAt:   settled,
		Received:    s.refundReceived[refundKey{d.endToEndID, d.id}],
	}
	if st == psp.RefundNotDone {
		v.Reason = d.reason
	}
	return v
}

// refundIn is a valid PUT /pix/{e2eid}/devolucao/{id}.
type refundIn struct {
	endToEndID  string
	id          string
	amountCents int64
	nature      string // "" is ORIGINAL
	description string
}

// validateRefund reports what is wrong with a PUT's path and body, ""
// if nothing; in.amountCents is read from valor.
func validateRefund(in *refundIn, valor string) string {
	switch {
	case !endToEndIDPattern.MatchString(in.endToEndID):
		return "e2eid must be 32 characters: E followed by 31 letters or digits"
	case !refundIDPattern.MatchString(in.id):
		return "id must be 1 to 35 letters or digits"
	case valor == "":
		return "valor is required"
	}
	amount, err := psp.ParseValor(valor)
	if err != nil {
		return err.Error()
	}
	in.amountCents = amount
	if in.nature == "" {
		in.nature = natureOriginal
	}
	switch {
	case in.nature != natureOriginal && in.nature != natureRetirada:
		return fmt.Sprintf("natureza must be %s or %s", natureOriginal, natureRetirada)
	case !utf8.ValidString(in.description) || utf8.RuneCountInString(in.description) > psp.MaxRefundDescription:
		return fmt.Sprintf("descricao must be at most %d characters", psp.MaxRefundDescription)
	}
	return ""
}

// RefundWindow is how long after a PIX a devolução of it may be asked
// for: the API Pix's 90 days from the PIX's settlement (its horario).
const RefundWindow = 90 * 24 * time.Hour

// refundOutcome is how the simulator answers a PUT.
type refundOutcome int

const (
	refundCreated      refundOutcome = iota // 201
	refundReplayed                          // 200: the same id and body again
	refundIDReused                          // 400 PixDevolucaoInvalida: the id is another devolução's
	refundUnavailable                       // 503 ServicoIndisponivel: fail mode
	refundRefused                           // 401: unauthorized mode
	refundInvalid                           // 400 PixDevolucaoInvalida: refuse mode
	refundRetryRefused                      // 400 PixDevolucaoInvalida: refuse_retry mode, the same id and body again
	refundOverValue                         // 400 PixDevolucaoInvalida: beyond the PIX's valor
	refundPastWindow                        // 400 PixDevolucaoInvalida: past RefundWindow
	refundUnknownPix                        // 404 NaoEncontrado: Options.RefundsNeedPix
)

func (o refundOutcome) String() string {
	switch o {
	case refundCreated:
		return "created"
	case refundReplayed:
		return "replayed"
	case refundIDReused:
		return "id_reused"
	case refundUnavailable:
		return "injected_failure"
	case refundRefused:
		return "unauthorized"
	case refundInvalid:
		return "refused"
	case refundRetryRefused:
		return "retry_refused"
	case refundOverValue:
		return "over_value"
	case refundPastWindow:
		return "past_window"
	case refundUnknownPix:
		return "pix_not_found"
	}
	return "unknown"
}

// refundDecision is the decision on one valid PUT.
type refundDecision struct {
	outcome refundOutcome
	mode    RefundMode
	// delay, when > 0, is how long to wait (or until the request ends)
	// before answering.
	delay time.Duration
	// lose: cut the connection instead of answering (lose_response).
	lose bool
}

// requestRefund decides, under the lock and at once, everything about a
// PUT; only the delay and the cut happen outside, after the devolução
// exists, as when a PSP made it and its answer is lost.
func (s *Simulator) requestRefund(in refundIn) refundDecision {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refundReceived[refundKey{in.endToEndID, in.id}]++
	b, misbehave, _ := s.refundBehaviors.request(in.endToEndID)
	dec := refundDecision{mode: b.Mode}
	switch {
	case b.Mode == RefundModeFail && misbehave:
		// An unavailable PSP makes nothing and looks nothing up.
		dec.outcome = refundUnavailable
		return dec
	case b.Mode == RefundModeUnauthorized && misbehave:
		dec.outcome = refundRefused
		return dec
	case b.Mode == RefundModeRefuse:
		dec.outcome = refundInvalid
		return dec
	}
	pix, known := s.pixes[in.endToEndID]
	if d := s.findRefund(in.endToEndID, in.id); d != nil {
		switch {
		case d.amountCents != in.amountCents || d.nature != in.nature || d.description != in.description:
			dec.outcome = refundIDReused
			return dec
		case b.Mode == RefundModeRefuseRetry:
			dec.outcome = refundRetryRefused
			return dec
		}
		dec.outcome = refundReplayed
	} else {
		switch {
		case !known && s.refundsNeedPix:
			dec.outcome = refundUnknownPix
			return dec
		case known && s.now().After(pix.horario.Add(RefundWindow)):
			dec.outcome = refundPastWindow
			return dec
		case known && s.refundedCents(in.endToEndID)+in.amountCents > pix.amountCents:
			dec.outcome = refundOverValue
			return dec
		}
		d := s.newRefund(in, b)
		s.refunds[in.endToEndID] = append(s.refunds[in.endToEndID], d)
		// Only a PIX told to POST /sim/pix, and notified, is notified of
		// its outcome (one remembered later carries it in its first
		// delivery): nothing else is kept for the webhook loop.
		if d.final != "" && known && !pix.silent {
			s.unnotified = append(s.unnotified, d)
		}
		dec.outcome = refundCreated
	}
	dec.delay = b.Delay
	dec.lose = b.Mode == RefundModeLoseResponse && misbehave
	return dec
}

// refundedCents is what the devoluções of the PIX that are not, and will
// not be, NAO_REALIZADO add up to. Each is at most psp.MaxValorCents: no
// overflow. The caller holds s.mu.
func (s *Simulator) refundedCents(endToEndID string) int64 {
	var sum int64
	for _, d := range s.refunds[endToEndID] {
		if d.accepted() {
			sum += d.amountCents
		}
	}
	return sum
}

// newRefund makes in's devolução under behaviour b. The caller holds s.mu.
func (s *Simulator) newRefund(in refundIn, b RefundBehavior) *devolucao {
	now := s.now()
	reason := cmp.Or(b.Reason, DefaultRefundReason)
	d := &devolucao{
		endToEndID:  in.endToEndID,
		id:          in.id,
		rtrID:       newRtrID(now),
		amountCents: in.amountCents,
		nature:      in.nature,
		answered:    s.medNature(in.endToEndID, in.nature),
		description: in.description,
		requestedAt: now,
		resolveAt:   now.Add(cmp.Or(b.SettleAfter, s.settleAfter)),
		final:       psp.RefundReturned,
	}
	if b.LimitCents > 0 {
		if s.refundedCents(in.endToEndID)+in.amountCents > b.LimitCents {
			d.resolveAt, d.final, d.reason = now, psp.RefundNotDone, LimitExceededReason
			return d
		}
	}
	switch b.Mode {
	case RefundModeNotDone:
		d.final, d.reason = psp.RefundNotDone, reason
	case RefundModeReject:
		d.resolveAt, d.final, d.reason = now, psp.RefundNotDone, reason
	case RefundModeStayProcessing:
		d.final = ""
	}
	return d
}

// newRtrID returns a fresh end-to-end id of a devolução: "D", the ISPB, the
// minute (UTC), and 11 random letters or digits, 32 characters in all.
// Random rather than a counter, so that a restarted simulator does not
// reuse the ids it gave before.
func newRtrID(now time.Time) string {
	const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	tail := make([]byte, 11)
	// crypto/rand.Read never returns an error.
	_, _ = rand.Read(tail)
	for i, b := range tail {
		// 256 % 62 makes a slight bias, which an id does not mind.
		tail[i] = alphabet[int(b)%len(alphabet)]
	}
	return "D" + simISPB + now.UTC().Format("200601021504") + string(tail)
}
