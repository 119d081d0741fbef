package pspsim

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
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
	// RefundModeRefuse answers every PUT 400 DevolucaoOperacaoInvalida
	// (the BCB's business refusal: past the window, over the value) and
	// makes nothing: a GET of the devolução then answers 404.
	RefundModeRefuse RefundMode = "refuse"
)

// refundModes lists the modes in the order the errors name them.
var refundModes = []RefundMode{RefundModeReturn, RefundModeNotDone, RefundModeReject, RefundModeFail,
	RefundModeLoseResponse, RefundModeUnauthorized, RefundModeStayProcessing, RefundModeRefuse}

// countsTimes reports whether Times applies to the mode.
func (m RefundMode) countsTimes() bool {
	return m == RefundModeFail || m == RefundModeLoseResponse || m == RefundModeUnauthorized
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

// MarshalJSON encodes b as in the body of PUT /refund-behaviors/{e2eid}.
func (b RefundBehavior) MarshalJSON() ([]byte, error) {
	return json.Marshal(b.wire())
}

func (b RefundBehavior) wire() refundBehaviorJSON {
	j := refundBehaviorJSON{Mode: b.Mode, Times: b.Times, Reason: b.Reason, LimitCents: b.LimitCents}
	if b.SettleAfter != 0 {
		j.SettleAfter = b.SettleAfter.String()
	}
	if b.Delay != 0 {
		j.Delay = b.Delay.String()
	}
	return j
}

// UnmarshalJSON decodes the body of PUT /refund-behaviors/{e2eid},
// refusing unknown fields: a misspelt "time" must not silently mean "every
// time".
func (b *RefundBehavior) UnmarshalJSON(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var j refundBehaviorJSON
	if err := dec.Decode(&j); err != nil {
		return err
	}
	nb := RefundBehavior{Mode: j.Mode, Times: j.Times, Reason: j.Reason, LimitCents: j.LimitCents}
	var err error
	if j.SettleAfter != "" {
		if nb.SettleAfter, err = time.ParseDuration(j.SettleAfter); err != nil {
			return fmt.Errorf("settle_after: %w", err)
		}
	}
	if j.Delay != "" {
		if nb.Delay, err = time.ParseDuration(j.Delay); err != nil {
			return fmt.Errorf("delay: %w", err)
		}
	}
	*b = nb
	return nil
}

// Validate reports what is wrong with b. A field that the mode does not use
// is an error rather than ignored.
func (b RefundBehavior) Validate() error {
	var errs []string
	switch {
	case b.Mode == "":
		errs = append(errs, "mode is required")
	case !slices.Contains(refundModes, b.Mode):
		names := make([]string, len(refundModes))
		for i, m := range refundModes {
			names[i] = string(m)
		}
		errs = append(errs, fmt.Sprintf("mode %q is not one of %s", b.Mode, strings.Join(names, ", ")))
	}
	if b.Times < 0 {
		errs = append(errs, "times must not be negative")
	} else if b.Times > 0 && !b.Mode.countsTimes() {
		errs = append(errs, fmt.Sprintf("times applies to fail, lose_response and unauthorized, not %s", b.Mode))
	}
	if b.SettleAfter < 0 {
		errs = append(errs, "settle_after must not be negative")
	} else if b.SettleAfter > 0 && (b.Mode == RefundModeReject || b.Mode == RefundModeStayProcessing) {
		errs = append(errs, fmt.Sprintf("settle_after does not apply to %s", b.Mode))
	}
	if b.Delay < 0 || b.Delay > MaxDelay {
		errs = append(errs, fmt.Sprintf("delay must be between 0 and %s", MaxDelay))
	}
	if b.Reason != "" && b.Mode != RefundModeNotDone && b.Mode != RefundModeReject {
		errs = append(errs, fmt.Sprintf("reason applies to not_done and reject, not %s", b.Mode))
	}
	if b.LimitCents < 0 || b.LimitCents > psp.MaxValorCents {
		errs = append(errs, fmt.Sprintf("limit_cents must be between 0 (no limit) and %d", psp.MaxValorCents))
	}
	if len(errs) > 0 {
		// One line, not errors.Join's lines: it becomes a JSON error message.
		return errors.New(strings.Join(errs, "; "))
	}
	return nil
}

// misbehaves reports whether the n-th PUT (from 1) under this behaviour
// misbehaves.
func (b RefundBehavior) misbehaves(n int) bool {
	return b.Mode.countsTimes() && (b.Times == 0 || n <= b.Times)
}
