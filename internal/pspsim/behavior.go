package pspsim

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
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
	// unauthorized (or StatusCode 403 forbidden) without creating,
	// changing or looking up anything: credentials expired or revoked at
	// the PSP. With StatusQueries, GET /transfers/{id} of the key's
	// transfers is refused alike while submissions are. Then it behaves
	// like accept.
	ModeUnauthorized Mode = "unauthorized"
)

// modes lists the modes in the order the errors name them.
var modes = []Mode{ModeAccept, ModeReject, ModeRejectLater, ModeFail, ModeTimeout, ModeLoseResponse, ModeDuplicateConflict, ModeUnauthorized}

// countsTimes reports whether Times applies to the mode.
func (m Mode) countsTimes() bool {
	switch m {
	case ModeFail, ModeTimeout, ModeLoseResponse, ModeDuplicateConflict, ModeUnauthorized:
		return true
	}
	return false
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

// MarshalJSON encodes b as in the body of PUT /behaviors/{pix_key}.
func (b Behavior) MarshalJSON() ([]byte, error) {
	return json.Marshal(b.wire())
}

func (b Behavior) wire() behaviorJSON {
	j := behaviorJSON{Mode: b.Mode, Times: b.Times, Reason: b.Reason, StatusCode: b.StatusCode, StatusQueries: b.StatusQueries}
	if b.SettleAfter != 0 {
		j.SettleAfter = b.SettleAfter.String()
	}
	if b.Delay != 0 {
		j.Delay = b.Delay.String()
	}
	return j
}

// UnmarshalJSON decodes the body of PUT /behaviors/{pix_key}. It refuses
// unknown fields: a misspelt "time" must not silently mean "every time".
func (b *Behavior) UnmarshalJSON(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var j behaviorJSON
	if err := dec.Decode(&j); err != nil {
		return err
	}
	nb := Behavior{Mode: j.Mode, Times: j.Times, Reason: j.Reason, StatusCode: j.StatusCode, StatusQueries: j.StatusQueries}
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
// is an error rather than ignored, so that a request like
// {"mode":"accept","delay":"5s"} is not mistaken for a slow PSP.
func (b Behavior) Validate() error {
	var errs []string
	switch {
	case b.Mode == "":
		errs = append(errs, "mode is required")
	case !slices.Contains(modes, b.Mode):
		names := make([]string, len(modes))
		for i, m := range modes {
			names[i] = string(m)
		}
		errs = append(errs, fmt.Sprintf("mode %q is not one of %s", b.Mode, strings.Join(names, ", ")))
	}
	if b.Times < 0 {
		errs = append(errs, "times must not be negative")
	} else if b.Times > 0 && !b.Mode.countsTimes() {
		errs = append(errs, fmt.Sprintf("times applies to fail, timeout, lose_response, duplicate_conflict and unauthorized, not %s", b.Mode))
	}
	if b.SettleAfter < 0 {
		errs = append(errs, "settle_after must not be negative")
	} else if b.SettleAfter > 0 && b.Mode == ModeReject {
		errs = append(errs, "settle_after does not apply to reject (it rejects at once)")
	}
	if b.Delay < 0 || b.Delay > MaxDelay {
		errs = append(errs, fmt.Sprintf("delay must be between 0 and %s", MaxDelay))
	} else if b.Delay > 0 && b.Mode != ModeTimeout {
		errs = append(errs, fmt.Sprintf("delay applies to timeout, not %s", b.Mode))
	}
	if b.Reason != "" && b.Mode != ModeReject && b.Mode != ModeRejectLater {
		errs = append(errs, fmt.Sprintf("reason applies to reject and reject_later, not %s", b.Mode))
	}
	switch {
	case b.StatusCode != 0 && b.Mode != ModeUnauthorized:
		errs = append(errs, fmt.Sprintf("status_code applies to unauthorized, not %s", b.Mode))
	case b.StatusCode != 0 && b.StatusCode != http.StatusUnauthorized && b.StatusCode != http.StatusForbidden:
		errs = append(errs, fmt.Sprintf("status_code must be 401 or 403, not %d", b.StatusCode))
	}
	if b.StatusQueries && b.Mode != ModeUnauthorized {
		errs = append(errs, fmt.Sprintf("status_queries applies to unauthorized, not %s", b.Mode))
	}
	if len(errs) > 0 {
		// One line, not errors.Join's lines: it becomes a JSON error message.
		return errors.New(strings.Join(errs, "; "))
	}
	return nil
}

// misbehaves reports whether the n-th submission (from 1; for
// duplicate_conflict the n-th resubmission) to a key with this behaviour
// misbehaves.
func (b Behavior) misbehaves(n int) bool {
	if !b.Mode.countsTimes() {
		return false
	}
	return b.Times == 0 || n <= b.Times
}

// refusal is the status and error code an unauthorized behaviour answers.
func (b Behavior) refusal() (int, string) {
	if b.StatusCode == http.StatusForbidden {
		return http.StatusForbidden, CodeForbidden
	}
	return http.StatusUnauthorized, CodeUnauthorized
}
