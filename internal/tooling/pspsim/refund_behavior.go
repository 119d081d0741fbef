package pspsim

import (
	"encoding/json"
	"time"

	"github.com/pixbank/pix/internal/psp"
)

// RefundMode is what the simulator does with the devoluções of one PIX.
type RefundMode string

// The modes of a RefundBehavior.
const (
	// RefundModeReturn makes the devolução EM_PROCESSAMENTO; it is
	// DEVOLVIDO SettleAfter after it was asked for. A PIX without a refund
	// behaviour behaves so.
	RefundModeReturn RefundMode = "return"
	// RefundModeNotDone makes the devolução EM_PROCESSAMENTO; it is
	// NAO_REALIZADO, with Reason, SettleAfter after it was asked for.
	RefundModeNotDone RefundMode = "not_done"
	// RefundModeReject makes the devolução NAO_REALIZADO at once, with
	// Reason, answered 201 like any devolução made.
	RefundModeReject RefundMode = "reject"
	// RefundModeFail answers the first Times PUTs 503 without creating or
	// looking up anything, then behaves like return.
	RefundModeFail RefundMode = "fail"
	// RefundModeLoseResponse handles the first Times PUTs like return
	// (create or replay) and then cuts the connection without an answer:
	// a devolução made whose answer was lost. Then it behaves like return.
	RefundModeLoseResponse RefundMode = "lose_response"
	// RefundModeUnauthorized answers the first Times PUTs 401 without
	// creating or looking up anything, then behaves like return.
	RefundModeUnauthorized RefundMode = "unauthorized"
	// RefundModeStayProcessing makes the devolução EM_PROCESSAMENTO for
	// ever.
	RefundModeStayProcessing RefundMode = "stay_processing"
	// RefundModeRefuse answers every PUT 400 PixDevolucaoInvalida (the
	// API Pix's refusal of a devolução: past the window, over the value)
	// and makes nothing: a GET of the devolução then answers 404.
	RefundModeRefuse RefundMode = "refuse"
	// RefundModeRefuseRetry makes a devolução like return, but answers a
	// PUT repeating one it holds (the same id and body: a retry after a
	// lost answer) 400 PixDevolucaoInvalida, as a PSP that reads the API
	// Pix's "id already used by another devolução" so; the devolução it
	// holds is unchanged, and GET answers it.
	RefundModeRefuseRetry RefundMode = "refuse_retry"
)

// refundRules are what the modes of a RefundBehavior make of its common
// fields.
var refundRules = modeRules[RefundMode]{
	modes: []RefundMode{RefundModeReturn, RefundModeNotDone, RefundModeReject, RefundModeFail,
		RefundModeLoseResponse, RefundModeUnauthorized, RefundModeStayProcessing, RefundModeRefuse, RefundModeRefuseRetry},
	counted:  []RefundMode{RefundModeFail, RefundModeLoseResponse, RefundModeUnauthorized},
	instant:  []RefundMode{RefundModeReject, RefundModeStayProcessing},
	reasoned: []RefundMode{RefundModeNotDone, RefundModeReject},
}

// DefaultRefundReason is the motivo of not_done and reject when their
// behaviour names none.
const DefaultRefundReason = "conta transacional do pagador encerrada"

// LimitExceededReason is the motivo of a devolução refused because the
// PIX's devoluções would exceed RefundBehavior.LimitCents.
const LimitExceededReason = "valor excede o valor da PIX"

// RefundBehavior says what the simulator does with the devoluções of one
// PIX (by its end_to_end_id). Its JSON form is the body of
// PUT /refund-behaviors/{e2eid}:
// {"mode":"not_done","settle_after":"200ms","reason":"..."}, durations as
// Go duration strings, every field but mode optional.
type RefundBehavior struct {
	Mode RefundMode
	// Times is, for fail, lose_response and unauthorized, how many PUTs
	// to the PIX's devoluções misbehave (counted from when the behaviour
	// was set) before they behave like return; 0 means all of them.
	Times int
	// SettleAfter is how long a devolução stays EM_PROCESSAMENTO before
	// its outcome (return, not_done, and the modes that behave like
	// return); 0 means the simulator's default (Options.DefaultSettleAfter).
	SettleAfter time.Duration
	// Delay is how long every PUT that is not refused (503, 401) waits
	// before it answers, or cuts the connection; a client that gives up
	// first loses the answer, and the devolução exists all the same. At
	// most MaxDelay.
	Delay time.Duration
	// Reason is the motivo of not_done and reject; "" means
	// DefaultRefundReason.
	Reason string
	// LimitCents, when > 0, is what the PIX's devoluções may add up to: a
	// new devolução that would take the sum of those not NAO_REALIZADO
	// beyond it is made NAO_REALIZADO at once, motivo LimitExceededReason
	// (answered 201). 0 means no limit: the simulator does not know the
	// PIX's amount.
	LimitCents int64
}

// refundBehaviorJSON is RefundBehavior on the wire.
type refundBehaviorJSON struct {
	Mode        RefundMode `json:"mode"`
	Times       int        `json:"times,omitempty"`
	SettleAfter string     `json:"settle_after,omitempty"`
	Delay       string     `json:"delay,omitempty"`
	Reason      string     `json:"reason,omitempty"`
	LimitCents  int64      `json:"limit_cents,omitempty"`
}

func (b RefundBehavior) wire() refundBehaviorJSON {
	return refundBehaviorJSON{Mode: b.Mode, Times: b.Times, SettleAfter: durationJSON(b.SettleAfter), Delay: durationJSON(b.Delay),
		Reason: b.Reason, LimitCents: b.LimitCents}
}

func (j refundBehaviorJSON) behavior() (RefundBehavior, error) {
	settleAfter, delay, err := parseDurations(j.SettleAfter, j.Delay)
	return RefundBehavior{Mode: j.Mode, Times: j.Times, SettleAfter: settleAfter, Delay: delay,
		Reason: j.Reason, LimitCents: j.LimitCents}, err
}

// common is b's fields that every kind of behaviour has.
func (b RefundBehavior) common() common[RefundMode] {
	return common[RefundMode]{mode: b.Mode, times: b.Times, settleAfter: b.SettleAfter, delay: b.Delay, reason: b.Reason}
}

// MarshalJSON encodes b as in the body of PUT /refund-behaviors/{e2eid}.
func (b RefundBehavior) MarshalJSON() ([]byte, error) {
	return json.Marshal(b.wire())
}

// UnmarshalJSON decodes the body of PUT /refund-behaviors/{e2eid},
// refusing unknown fields.
func (b *RefundBehavior) UnmarshalJSON(data []byte) error {
	return unmarshalBehavior[refundBehaviorJSON](data, b)
}

// Validate reports what is wrong with b. A field that the mode does not use
// is an error rather than ignored.
func (b RefundBehavior) Validate() error {
	p := refundRules.check(b.common())
	if b.LimitCents < 0 || b.LimitCents > psp.MaxValorCents {
		p.addf("limit_cents must be between 0 (no limit) and %d", psp.MaxValorCents)
	}
	return p.err()
}

// misbehaves reports whether the n-th PUT (from 1) under this behaviour
// misbehaves.
func (b RefundBehavior) misbehaves(n int) bool { return refundRules.misbehaves(b.common(), n) }

func (b RefundBehavior) modeName() string { return string(b.Mode) }
