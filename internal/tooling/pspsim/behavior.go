package pspsim

import (
	"encoding/json"
	"net/http"
	"time"
)

// Mode is what the simulator does with the transfers to a Pix key.
type Mode string

// The modes of a Behavior.
const (
	// ModeAccept creates the transfer pending; it is settled SettleAfter
	// after its creation.
	ModeAccept Mode = "accept"
	// ModeReject creates the transfer rejected, with Reason, answered 422.
	ModeReject Mode = "reject"
	// ModeRejectLater creates the transfer pending; it is rejected, with
	// Reason, SettleAfter after its creation.
	ModeRejectLater Mode = "reject_later"
	// ModeFail answers the first Times submissions 503 without creating
	// or changing anything, then behaves like accept.
	ModeFail Mode = "fail"
	// ModeTimeout handles the first Times submissions like accept (create
	// or deduplicate) and then hangs for Delay, or until the request ends,
	// before it answers; then it behaves like accept.
	ModeTimeout Mode = "timeout"
	// ModeLoseResponse handles the first Times submissions like accept
	// (create or deduplicate) and then cuts the connection without any
	// answer, at once: a PSP that processed the request and whose answer
	// was lost on the way back. Then it behaves like accept.
	ModeLoseResponse Mode = "lose_response"
	// ModeDuplicateConflict creates a first submission like accept (201)
	// but answers the first Times resubmissions of an end_to_end_id it
	// already holds (same payload) 409 duplicate_transfer instead of 200
	// with the transfer, as PSPs do that treat a resubmission as an error
	// rather than as an idempotent replay; then it answers them 200.
	ModeDuplicateConflict Mode = "duplicate_conflict"
	// ModeUnauthorized answers the first Times submissions 401
	// invalid_token (or StatusCode 403 AcessoNegado), as the OAuth layer
	// refuses credentials, without creating,
	// changing or looking up anything: credentials expired or revoked at
	// the PSP. With StatusQueries, GET /transfers/{id} of the key's
	// transfers is refused alike while submissions are. Then it behaves
	// like accept.
	ModeUnauthorized Mode = "unauthorized"
)

// transferRules are what the modes of a Behavior make of its common fields.
var transferRules = modeRules[Mode]{
	modes:      []Mode{ModeAccept, ModeReject, ModeRejectLater, ModeFail, ModeTimeout, ModeLoseResponse, ModeDuplicateConflict, ModeUnauthorized},
	counted:    []Mode{ModeFail, ModeTimeout, ModeLoseResponse, ModeDuplicateConflict, ModeUnauthorized},
	instant:    []Mode{ModeReject},
	instantWhy: " (it rejects at once)",
	delayed:    []Mode{ModeTimeout},
	reasoned:   []Mode{ModeReject, ModeRejectLater},
}

// Defaults of a Behavior's zero fields.
const (
	DefaultSettleAfter = 100 * time.Millisecond
	DefaultDelay       = 30 * time.Second
	DefaultReason      = "receiver account closed"
)

// MaxDelay bounds Behavior.Delay, so that a hanging request always ends
// before the server's write timeout (see Serve) cuts it.
const MaxDelay = 90 * time.Second

// Behavior says what the simulator does with the transfers to one Pix key.
// Its JSON form is the body of PUT /behaviors/{pix_key}:
// {"mode":"timeout","times":2,"delay":"5s"}, durations as Go duration
// strings, every field but mode optional.
type Behavior struct {
	Mode Mode
	// Times is, for fail, timeout, lose_response and unauthorized, how many
	// submissions to the key misbehave, and for duplicate_conflict how many
	// resubmissions do (counted from when the behaviour was set), before
	// the key behaves like accept; 0 means all of them.
	Times int
	// SettleAfter is how long after its creation a transfer stays pending
	// (accept, reject_later, and the other modes once they create it); 0
	// means the simulator's default (Options.DefaultSettleAfter).
	SettleAfter time.Duration
	// Delay is how long a timeout submission hangs; 0 means DefaultDelay.
	Delay time.Duration
	// Reason is why reject and reject_later reject; "" means DefaultReason.
	Reason string
	// StatusCode is, for unauthorized, the refusal's status: 401 (0 means
	// 401) or 403.
	StatusCode int
	// StatusQueries makes unauthorized refuse the status queries of the
	// key's transfers too, while it refuses submissions.
	StatusQueries bool
}

// behaviorJSON is Behavior on the wire.
type behaviorJSON struct {
	Mode          Mode   `json:"mode"`
	Times         int    `json:"times,omitempty"`
	SettleAfter   string `json:"settle_after,omitempty"`
	Delay         string `json:"delay,omitempty"`
	Reason        string `json:"reason,omitempty"`
	StatusCode    int    `json:"status_code,omitempty"`
	StatusQueries bool   `json:"status_queries,omitempty"`
}

func (b Behavior) wire() behaviorJSON {
	return behaviorJSON{Mode: b.Mode, Times: b.Times, SettleAfter: durationJSON(b.SettleAfter), Delay: durationJSON(b.Delay),
		Reason: b.Reason, StatusCode: b.StatusCode, StatusQueries: b.StatusQueries}
}

func (j behaviorJSON) behavior() (Behavior, error) {
	settleAfter, delay, err := parseDurations(j.SettleAfter, j.Delay)
	return Behavior{Mode: j.Mode, Times: j.Times, SettleAfter: settleAfter, Delay: delay,
		Reason: j.Reason, StatusCode: j.StatusCode, StatusQueries: j.StatusQueries}, err
}

// common is b's fields that every kind of behaviour has.
func (b Behavior) common() common[Mode] {
	return common[Mode]{mode: b.Mode, times: b.Times, settleAfter: b.SettleAfter, delay: b.Delay, reason: b.Reason}
}

// MarshalJSON encodes b as in the body of PUT /behaviors/{pix_key}.
func (b Behavior) MarshalJSON() ([]byte, error) {
	return json.Marshal(b.wire())
}

// UnmarshalJSON decodes the body of PUT /behaviors/{pix_key}, refusing
// unknown fields.
func (b *Behavior) UnmarshalJSON(data []byte) error {
	return unmarshalBehavior[behaviorJSON](data, b)
}

// Validate reports what is wrong with b. A field that the mode does not use
// is an error rather than ignored, so that a request like
// {"mode":"accept","delay":"5s"} is not mistaken for a slow PSP.
func (b Behavior) Validate() error {
	p := transferRules.check(b.common())
	if b.StatusCode != 0 && onlyFor(&p, "status_code", b.Mode, ModeUnauthorized) &&
		b.StatusCode != http.StatusUnauthorized && b.StatusCode != http.StatusForbidden {
		p.addf("status_code must be 401 or 403, not %d", b.StatusCode)
	}
	if b.StatusQueries {
		onlyFor(&p, "status_queries", b.Mode, ModeUnauthorized)
	}
	return p.err()
}

// misbehaves reports whether the n-th submission (from 1; for
// duplicate_conflict the n-th resubmission) to a key with this behaviour
// misbehaves.
func (b Behavior) misbehaves(n int) bool { return transferRules.misbehaves(b.common(), n) }

func (b Behavior) modeName() string { return string(b.Mode) }

// refusal is the status an unauthorized behaviour answers, as the OAuth
// layer would: 401 invalid_token, or 403 AcessoNegado.
func (b Behavior) refusal() int {
	if b.StatusCode == http.StatusForbidden {
		return http.StatusForbidden
	}
	return http.StatusUnauthorized
}
