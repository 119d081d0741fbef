package pspsim

import (
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// WebhookMode is what the simulator does with the webhook of the PIX
// received to one key (chave).
type WebhookMode string

// The modes of a WebhookBehavior.
const (
	// WebhookModeDeliver notifies the PIX (and its devoluções' outcomes)
	// to the key's webhook. A key without a webhook behaviour behaves so.
	WebhookModeDeliver WebhookMode = "deliver"
	// WebhookModeNever never notifies the first Times PIX received to
	// the key (0: all of them), nor their devoluções' outcomes: they are
	// only in GET /pix, as a PIX without a txid, or one whose PSP gave up.
	WebhookModeNever WebhookMode = "never"
)

// webhookRules are what the modes of a WebhookBehavior make of the common
// fields: only never counts Times; none settles, delays or gives reasons.
var webhookRules = modeRules[WebhookMode]{
	modes:      []WebhookMode{WebhookModeDeliver, WebhookModeNever},
	counted:    []WebhookMode{WebhookModeNever},
	instant:    []WebhookMode{WebhookModeDeliver, WebhookModeNever},
	instantWhy: " (a webhook behaviour settles nothing)",
	delayed:    []WebhookMode{},
}

// WebhookBehavior says what the simulator does with the webhooks of the
// PIX received to one key. Its JSON form is the body of
// PUT /webhook-behaviors/{chave}: {"mode":"never","times":3}.
type WebhookBehavior struct {
	Mode WebhookMode
	// Times is, for never, how many PIX received to the key (counted from
	// when the behaviour was set) are never notified before the key
	// behaves like deliver; 0 means all of them.
	Times int
}

// webhookBehaviorJSON is WebhookBehavior on the wire.
type webhookBehaviorJSON struct {
	Mode  WebhookMode `json:"mode"`
	Times int         `json:"times,omitempty"`
}

func (b WebhookBehavior) wire() webhookBehaviorJSON {
	return webhookBehaviorJSON(b)
}

func (j webhookBehaviorJSON) behavior() (WebhookBehavior, error) {
	return WebhookBehavior(j), nil
}

func (b WebhookBehavior) common() common[WebhookMode] {
	return common[WebhookMode]{mode: b.Mode, times: b.Times}
}

// MarshalJSON encodes b as in the body of PUT /webhook-behaviors/{chave}.
func (b WebhookBehavior) MarshalJSON() ([]byte, error) {
	return json.Marshal(b.wire())
}

// UnmarshalJSON decodes the body of PUT /webhook-behaviors/{chave},
// refusing unknown fields.
func (b *WebhookBehavior) UnmarshalJSON(data []byte) error {
	return unmarshalBehavior[webhookBehaviorJSON](data, b)
}

// Validate reports what is wrong with b.
func (b WebhookBehavior) Validate() error { return webhookRules.check(b.common()).err() }

func (b WebhookBehavior) misbehaves(n int) bool { return webhookRules.misbehaves(b.common(), n) }

func (b WebhookBehavior) modeName() string { return string(b.Mode) }

// checkChave refuses a key the API Pix could not carry: empty, or longer
// than its maxLength.
func checkChave(chave string) error {
	if n := utf8.RuneCountInString(chave); n < 1 || n > maxPixKeyLength {
		return fmt.Errorf("chave must be 1 to %d characters", maxPixKeyLength)
	}
	return nil
}

// SetWebhookBehavior makes the webhooks of the PIX received to chave
// behave as b from now on, restarting its count.
func (s *Simulator) SetWebhookBehavior(chave string, b WebhookBehavior) error {
	return s.webhookBehaviors.set(chave, b)
}

// DeleteWebhookBehavior makes the PIX received to chave notified again.
func (s *Simulator) DeleteWebhookBehavior(chave string) { s.webhookBehaviors.remove(chave) }

// WebhookBehaviorView is a key's webhook behaviour as GET
// /webhook-behaviors lists it.
type WebhookBehaviorView struct {
	Chave    string
	Behavior WebhookBehavior
	// Received is how many PIX to the key arrived since it was set.
	Received int
}

// WebhookBehaviors lists the keys that have a webhook behaviour, by key.
func (s *Simulator) WebhookBehaviors() []WebhookBehaviorView {
	return entries(&s.webhookBehaviors, func(chave string, e entry[WebhookBehavior]) WebhookBehaviorView {
		return WebhookBehaviorView{Chave: chave, Behavior: e.behavior, Received: e.requests}
	})
}

// webhookBehaviorListing is one entry of GET /webhook-behaviors.
type webhookBehaviorListing struct {
	Chave string `json:"chave"`
	webhookBehaviorJSON
	Received int `json:"received"`
}

// webhookBehaviorRoutes are the routes of the keys' webhook behaviours.
func (s *Simulator) webhookBehaviorRoutes() behaviorRoutes[WebhookBehavior, webhookBehaviorListing] {
	return behaviorRoutes[WebhookBehavior, webhookBehaviorListing]{reg: &s.webhookBehaviors, path: "/webhook-behaviors", param: "chave",
		logKey: "chave", list: "webhook_behaviors", listing: func(chave string, e entry[WebhookBehavior]) webhookBehaviorListing {
			return webhookBehaviorListing{Chave: chave, webhookBehaviorJSON: e.behavior.wire(), Received: e.requests}
		}}
}
