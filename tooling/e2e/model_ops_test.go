//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/pixbank/pix/internal/auth"
	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/internal/tooling/pspsim"
)

// opKind is what one operation of a model history does.
type opKind int

const (
	opWebhook         opKind = iota // POST /webhooks/pix (native format)
	opRedrive                       // POST /admin/pix/credits/{id}/retry
	opRedriveAccount                // POST /admin/accounts/{id}/pix/credits/retry
	opTransfer                      // POST /pix under an Idempotency-Key
	opBehavior                      // the PSP simulator's behaviour for a Pix key
	opCrash                         // the worker killed (its activities lost), then started again
	opTemporalStop                  // the Temporal server stopped
	opTemporalStart                 // the Temporal server started again
	opOpenLate                      // a late account is opened (always alone in its group)
	opRefund                        // POST /pix/credits/{id}/refunds under an Idempotency-Key
	opRefundBehavior                // the PSP simulator's refund behaviour for a PIX
	opScheduled                     // POST /pix/scheduled under an Idempotency-Key
	opScheduledGet                  // GET /pix/scheduled/{id}
	opScheduledCancel               // DELETE /pix/scheduled/{id}
)

// wbody is what decides whether two native webhooks are the same PIX.
type wbody struct {
	acct   string
	amount int64
}

// tbody is a POST /pix request, whatever its member order and spacing.
type tbody struct {
	acct   string
	amount int64
	pixKey string
}

// rbody is a refund request: the PIX in the path and the body, whatever
// its member order.
type rbody struct {
	e2e    string
	amount int64
	reason string
}

// op is one operation of a history and, once run, its outcome.
type op struct {
	seq, group int
	kind       opKind
	// intent is what the generator meant (first, redeliver, variant, copy,
	// fresh, replay, reuse, over...); the model judges the answer on the
	// model's state, not on the intent.
	intent string

	pix   string // webhook, redrive, refund behaviour
	wb    wbody  // webhook
	payer bool   // webhook: carries payer details as well (still the same PIX)

	key uuid.UUID // transfer, refund
	tb  tbody     // transfer
	raw []byte    // transfer, refund: the body as sent

	rb rbody // refund
	// stranger: the refund (a scheduled PIX's GET or DELETE) is asked by
	// another customer, whose token grants none of the history's accounts.
	stranger  bool
	rbehavior pspsim.RefundBehavior // refund behaviour
	// made is the refund a 201 made (set by the model as it judges the
	// answer).
	made *mRefund

	sb  sbody  // scheduled PIX
	sid string // a scheduled PIX's GET and DELETE: its id
	// skey: the GET or DELETE is of the scheduled PIX answered under
	// this key (its id is known once the key is answered).
	skey uuid.UUID

	acct     string          // redrive-account, open-late
	opening  int64           // open-late
	pixKey   string          // behaviour
	behavior pspsim.Behavior // behaviour
	// afterHeld: the behaviour is set once the PSP holds the transfer
	// answered under this key (waited for, bounded), so that it meets the
	// transfer's resubmissions rather than its first submission.
	afterHeld uuid.UUID
	pause     time.Duration // crash: how long the worker stays down

	// The outcome.
	status   int
	body     []byte
	replayed bool // X-Idempotent-Replay: true
	err      error
	took     time.Duration
	ran      bool // sent already (a probe), not to be sent by runGroup
}

// control ops touch the harness, whose helpers must run on the test
// goroutine (they call require).
func (k opKind) control() bool {
	return k == opCrash || k == opTemporalStop || k == opTemporalStart || k == opOpenLate
}

// errCode is the code of an error answer, "" for another body.
func (o *op) errCode() string {
	var e struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	if json.Unmarshal(o.body, &e) != nil {
		return ""
	}
	return e.Error.Code
}

// answer decodes the body into a map (nil if it is not a JSON object).
func (o *op) answer() map[string]any {
	var m map[string]any
	if json.Unmarshal(o.body, &m) != nil {
		return nil
	}
	return m
}

// touches reports whether the op is about one of the entities (an
// end_to_end_id, an idempotency key, an account, a Pix key), for the
// relevant part of a history.
func (o *op) touches(ents map[string]bool) bool {
	switch o.kind {
	case opWebhook:
		return ents[o.pix] || ents[o.wb.acct]
	case opRedrive:
		return ents[o.pix]
	case opRedriveAccount, opOpenLate:
		return ents[o.acct]
	case opTransfer:
		if ents[o.key.String()] || ents[o.tb.acct] || ents[o.tb.pixKey] {
			return true
		}
		m := o.answer()
		if m == nil {
			return false
		}
		id, _ := m["id"].(string)
		e2e, _ := m["end_to_end_id"].(string)
		return ents[id] || ents[e2e]
	case opBehavior:
		return ents[o.pixKey]
	case opRefund:
		if ents[o.key.String()] || ents[o.rb.e2e] {
			return true
		}
		m := o.answer()
		id, _ := m["id"].(string)
		acct, _ := m["account_id"].(string)
		return ents[id] || ents[acct]
	case opRefundBehavior:
		return ents[o.pix]
	case opScheduled:
		id, _ := o.answer()["id"].(string)
		return ents[o.key.String()] || ents[o.sb.acct] || ents[id]
	case opScheduledGet, opScheduledCancel:
		return ents[o.sid]
	}
	return true // crashes and Temporal outages are part of every story
}

func behaviorString(b pspsim.Behavior) string {
	s := string(b.Mode)
	if b.Times > 0 {
		s += fmt.Sprintf(" times=%d", b.Times)
	}
	if b.SettleAfter > 0 {
		s += " settle_after=" + b.SettleAfter.String()
	}
	if b.Delay > 0 {
		s += " delay=" + b.Delay.String()
	}
	return s
}

func refundBehaviorString(b pspsim.RefundBehavior) string {
	s := string(b.Mode)
	if b.Times > 0 {
		s += fmt.Sprintf(" times=%d", b.Times)
	}
	if b.SettleAfter > 0 {
		s += " settle_after=" + b.SettleAfter.String()
	}
	return s
}

func (o *op) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "#%d g%d ", o.seq, o.group)
	switch o.kind {
	case opWebhook:
		fmt.Fprintf(&b, "webhook %s %s %d", o.pix, o.wb.acct, o.wb.amount)
		if o.payer {
			b.WriteString(" +payer")
		}
	case opRedrive:
		fmt.Fprintf(&b, "redrive %s", o.pix)
	case opRedriveAccount:
		fmt.Fprintf(&b, "redrive-account %s", o.acct)
	case opTransfer:
		fmt.Fprintf(&b, "POST /pix key=%s %s %d -> %s  body=%s", o.key, o.tb.acct, o.tb.amount, o.tb.pixKey, o.raw)
	case opBehavior:
		fmt.Fprintf(&b, "psp %s := %s", o.pixKey, behaviorString(o.behavior))
		if o.afterHeld != uuid.Nil {
			fmt.Fprintf(&b, " once the PSP holds the transfer of key %s", o.afterHeld)
		}
	case opCrash:
		fmt.Fprintf(&b, "worker crash, down %s", o.pause)
	case opTemporalStop:
		b.WriteString("temporal stop")
	case opTemporalStart:
		b.WriteString("temporal start")
	case opOpenLate:
		fmt.Fprintf(&b, "open account %s opening=%d", o.acct, o.opening)
	case opRefund:
		fmt.Fprintf(&b, "POST /pix/credits/%s/refunds key=%s %d", o.rb.e2e, o.key, o.rb.amount)
		if o.stranger {
			b.WriteString(" as a stranger")
		}
		fmt.Fprintf(&b, "  body=%s", o.raw)
	case opRefundBehavior:
		fmt.Fprintf(&b, "psp refunds of %s := %s", o.pix, refundBehaviorString(o.rbehavior))
	case opScheduled:
		fmt.Fprintf(&b, "POST /pix/scheduled key=%s %s %d -> %s on %s  body=%s", o.key, o.sb.acct, o.sb.amount, o.sb.pixKey, o.sb.date, o.raw)
	case opScheduledGet, opScheduledCancel:
		fmt.Fprintf(&b, "%s /pix/scheduled/%s", map[opKind]string{opScheduledGet: "GET", opScheduledCancel: "DELETE"}[o.kind], o.sid)
		if o.stranger {
			b.WriteString(" as a stranger")
		}
	}
	if o.intent != "" {
		fmt.Fprintf(&b, " [%s]", o.intent)
	}
	if o.took > time.Second {
		fmt.Fprintf(&b, " (took %s)", o.took.Round(time.Millisecond))
	}
	switch {
	case o.err != nil:
		fmt.Fprintf(&b, " => error: %v", o.err)
	case o.kind == opWebhook || o.kind == opRedrive || o.kind == opRedriveAccount || o.kind == opTransfer || o.kind == opRefund ||
		o.kind == opScheduled || o.kind == opScheduledGet || o.kind == opScheduledCancel:
		fmt.Fprintf(&b, " => %d", o.status)
		if o.replayed {
			b.WriteString(" (replay)")
		}
		body := o.body
		if len(body) > 400 {
			body = append(body[:400:400], "..."...)
		}
		fmt.Fprintf(&b, " %s", bytes.TrimSpace(body))
	}
	return b.String()
}

// modelHTTP sends the model's requests: its own client, so that its
// connections are its own and closed at the end, and no require (requests
// run on goroutines of their own).
type modelHTTP struct {
	base string
	hc   *http.Client
}

func newModelHTTP(base string) *modelHTTP {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 16
	return &modelHTTP{base: base, hc: &http.Client{Transport: tr, Timeout: 30 * time.Second}}
}

func (h *modelHTTP) close() { h.hc.CloseIdleConnections() }

// send sends one request: webhooks signed as the stack's PSP, admin
// requests with the admin token.
func (h *modelHTTP) send(method, path string, header http.Header, raw []byte) (status int, body []byte, resHeader http.Header, err error) {
	return h.sendAs(method, path, header, raw, false)
}

// modelStranger is the customer whose token grants none of the history's
// accounts.
const modelStranger = "model-stranger"

// sendAs sends one request as send does, or, with stranger, as another
// customer (modelStranger).
func (h *modelHTTP) sendAs(method, path string, header http.Header, raw []byte, stranger bool) (status int, body []byte, resHeader http.Header, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, h.base+path, bytes.NewReader(raw))
	if err != nil {
		return 0, nil, nil, err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	asCaller(req, path, raw)
	if stranger {
		token, err := e2eIssuer.Mint(auth.TokenSpec{Subject: modelStranger, Scopes: []string{auth.ScopeRead, auth.ScopeWrite},
			Accounts: []string{"acc-" + modelStranger}, TTL: 5 * time.Minute}, time.Now())
		if err != nil {
			return 0, nil, nil, err
		}
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := h.hc.Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer res.Body.Close()
	body, err = io.ReadAll(io.LimitReader(res.Body, 1<<20))
	return res.StatusCode, body, res.Header, err
}

// webhookJSON is a native webhook's body.
func webhookJSON(id string, w wbody, payer bool) []byte {
	m := map[string]any{"end_to_end_id": id, "account_id": w.acct, "amount_cents": w.amount}
	if payer {
		m["payer"] = map[string]any{"name": "Maria Model", "document": "12345678901", "ispb": "12345678"}
		m["occurred_at"] = "2026-11-29T12:00:00Z"
	}
	b, _ := json.Marshal(m) // a map of strings and numbers always encodes
	return b
}

// transferJSON is a POST /pix body in one of a few member orders and
// spacings: all the same request to the Idempotency-Key layer.
func transferJSON(t tbody, style int) []byte {
	acct, _ := json.Marshal(t.acct)
	key, _ := json.Marshal(t.pixKey)
	switch style % 3 {
	case 1:
		return fmt.Appendf(nil, `{"pix_key":%s,"amount_cents":%d,"account_id":%s}`, key, t.amount, acct)
	case 2:
		return fmt.Appendf(nil, "{ \"amount_cents\" : %d ,\n  \"account_id\": %s, \"pix_key\": %s }", t.amount, acct, key)
	}
	return fmt.Appendf(nil, `{"account_id":%s,"amount_cents":%d,"pix_key":%s}`, acct, t.amount, key)
}

// refundJSON is a refund's body in one of two member orders: the same
// request to the Idempotency-Key layer.
func refundJSON(r rbody, style int) []byte {
	if r.reason == "" {
		return fmt.Appendf(nil, `{"amount_cents":%d}`, r.amount)
	}
	reason, _ := json.Marshal(r.reason)
	if style%2 == 1 {
		return fmt.Appendf(nil, "{ \"reason\": %s,\n  \"amount_cents\" : %d }", reason, r.amount)
	}
	return fmt.Appendf(nil, `{"amount_cents":%d,"reason":%s}`, r.amount, reason)
}

// run sends an HTTP op, or changes the PSP's behaviour; control ops are run
// by the test goroutine (see modelRun.control). m is read only: the model
// changes only between groups.
func (h *modelHTTP) run(o *op, sim *pspsim.Simulator, m *model) {
	began := time.Now()
	defer func() { o.took = time.Since(began) }()
	switch o.kind {
	case opWebhook:
		o.status, o.body, _, o.err = h.send(http.MethodPost, "/webhooks/pix", nil, webhookJSON(o.pix, o.wb, o.payer))
	case opRedrive:
		o.status, o.body, _, o.err = h.send(http.MethodPost, "/admin/pix/credits/"+o.pix+"/retry", nil, nil)
	case opRedriveAccount:
		o.status, o.body, _, o.err = h.send(http.MethodPost, "/admin/accounts/"+o.acct+"/pix/credits/retry", nil, nil)
	case opTransfer:
		var header http.Header
		o.status, o.body, header, o.err = h.send(http.MethodPost, "/pix", http.Header{"Idempotency-Key": {o.key.String()}}, o.raw)
		o.replayed = header.Get("X-Idempotent-Replay") == "true"
	case opRefund:
		var header http.Header
		o.status, o.body, header, o.err = h.sendAs(http.MethodPost, "/pix/credits/"+o.rb.e2e+"/refunds",
			http.Header{"Idempotency-Key": {o.key.String()}}, o.raw, o.stranger)
		o.replayed = header.Get("X-Idempotent-Replay") == "true"
	case opScheduled, opScheduledGet, opScheduledCancel:
		h.runScheduled(o, m)
	case opRefundBehavior:
		o.err = sim.SetRefundBehavior(o.pix, o.rbehavior)
	case opBehavior:
		if o.afterHeld != uuid.Nil {
			waitHeld(sim, m.keys[o.afterHeld])
		}
		o.err = sim.SetBehavior(o.pixKey, o.behavior)
	}
}

// waitHeld waits, 5 s at most, until the PSP holds the transfer answered
// under k (at once if the key's answer was no transfer).
func waitHeld(sim *pspsim.Simulator, k *mKey) {
	var t pix.Transfer // a 201 of POST /pix
	if k == nil || !k.answered || k.status != http.StatusCreated || json.Unmarshal(k.body, &t) != nil {
		return
	}
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
		if _, ok := sim.Transfer(t.EndToEndID); ok {
			return
		}
	}
}
