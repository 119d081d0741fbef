package pspsim

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/pixbank/pix/internal/psp"
	"github.com/pixbank/pix/internal/webhooksig"
)

// The webhook loop's pace. The tick bounds how late an outcome is
// delivered; the backoff, doubling from webhookRetryMin to webhookRetryMax,
// bounds how hard a bank that is down is called; after webhookMaxAttempts
// failed attempts a message is dropped (logged): a simulator keeps no
// message for ever.
const (
	webhookTick        = 50 * time.Millisecond
	webhookRetryMin    = 100 * time.Millisecond
	webhookRetryMax    = 5 * time.Second
	webhookMaxAttempts = 30
	webhookTimeout     = 5 * time.Second
)

// maxPixKeyLength is the API Pix's maxLength of chave.
const maxPixKeyLength = 77

// txidPattern is the API Pix's txid of a received PIX.
var txidPattern = regexp.MustCompile(`^[a-zA-Z0-9]{1,35}$`)

// ParseWebhookSecret reads the key the simulator signs its webhooks with:
// a Standard Webhooks secret as webhooksig reads them, "whsec_<base64>" or
// plain base64, or a WEBHOOK_SECRETS value of the bank ("psp=whsec_..."),
// whose first key it takes. "" is no key: webhooks go unsigned. Its errors
// never contain key material.
func ParseWebhookSecret(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	// A bare secret is a WEBHOOK_SECRETS entry without its psp= prefix.
	if secrets, err := webhooksig.ParseSecrets("pspsim=" + s); err == nil && len(secrets) > 0 {
		return secrets[0].Key, nil
	}
	if strings.HasPrefix(s, "whsec_") || !strings.Contains(s, "=") {
		// Meant as a bare secret: the WEBHOOK_SECRETS form's error would
		// only confuse.
		return nil, errors.New("webhook secret: want whsec_<standard base64>, or a WEBHOOK_SECRETS value psp=whsec_<standard base64>")
	}
	key, err := webhooksig.ClientKey(s)
	if err != nil {
		return nil, fmt.Errorf("webhook secret: %w", err)
	}
	if len(key) == 0 {
		return nil, errors.New("webhook secret: want whsec_<base64> or psp=whsec_<base64>")
	}
	return key, nil
}

// checkWebhookURL reports what is wrong with Options.WebhookURL.
func checkWebhookURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("webhook url: %w", err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("webhook url %q: want http(s)://host[:port]/path", raw)
	}
	return nil
}

// receivedPix is a PIX the simulator was told it received (POST /sim/pix),
// and the delivery of its webhook. Every event to deliver (the PIX itself,
// a devolução's outcome) bumps gen; the loop delivers the newest state,
// one message at a time, so the bank never gets an older state after a
// newer one.
type receivedPix struct {
	obj map[string]json.RawMessage // as posted (horario added), devolucoes aside
	pixFacts
	// silent: never notified (a webhook behaviour never, or no txid with
	// Options.WebhooksTxidOnly): the PIX is only in GET /pix.
	silent bool
	gen    int // events so far
	// done is the gen of the last message delivered or given up.
	done int
	// The message being delivered: its gen, webhook-id, target and body,
	// fixed for its retries, as Standard Webhooks wants (same id, same
	// body).
	msgGen      int
	msgID       string
	msgURL      string
	msgBody     []byte
	attempts    int
	nextAttempt time.Time // real time
}

// pixFacts are what the simulator reads of a PIX received: what GET /pix
// filters and orders by, and what a devolução is checked against.
type pixFacts struct {
	endToEndID  string
	amountCents int64
	horario     time.Time // zero when the PIX did not say: the simulator's now
	chave       string
	txid        string
}

// validatePix checks a PIX object of POST /sim/pix as the bank would (its
// endToEndId, valor, horario when given, and chave or txid), msg "" if all
// is well.
func validatePix(obj map[string]json.RawMessage) (f pixFacts, msg string) {
	str := func(name string) (string, bool, string) {
		raw, ok := obj[name]
		if !ok || string(raw) == "null" {
			return "", false, ""
		}
		var v string
		if err := json.Unmarshal(raw, &v); err != nil {
			return "", true, name + " must be a string"
		}
		return v, true, ""
	}
	e2e, has, msg := str("endToEndId")
	switch {
	case msg != "":
		return f, msg
	case !has || !endToEndIDPattern.MatchString(e2e):
		return f, "endToEndId must be 32 characters: E followed by 31 letters or digits"
	}
	f.endToEndID = e2e
	valor, _, msg := str("valor")
	if msg != "" {
		return f, msg
	}
	amount, err := psp.ParseValor(valor)
	if err != nil {
		return f, err.Error()
	}
	f.amountCents = amount
	horario, hasHorario, msg := str("horario")
	if msg != "" {
		return f, msg
	}
	if hasHorario {
		t, err := time.Parse(time.RFC3339, horario)
		if err != nil {
			return f, "horario must be an RFC 3339 time"
		}
		f.horario = t
	}
	chave, hasChave, msg := str("chave")
	if msg != "" {
		return f, msg
	}
	if hasChave {
		if err := checkChave(chave); err != nil {
			return f, err.Error()
		}
	}
	txid, hasTxid, msg := str("txid")
	if msg != "" {
		return f, msg
	}
	if hasTxid && !txidPattern.MatchString(txid) {
		return f, "txid must be 1 to 35 letters or digits"
	}
	if !hasChave && !hasTxid {
		return f, "the PIX must carry chave or txid"
	}
	if _, ok := obj["devolucoes"]; ok {
		return f, "devolucoes are the simulator's to add, from the devoluções it makes"
	}
	f.chave, f.txid = chave, txid
	return f, ""
}

// What receivePix says of a PIX's webhook.
const (
	webhookQueued   = "queued"   // to be delivered
	webhookDisabled = "disabled" // nowhere to deliver it: no Options.WebhookURL, no webhook registered for its key
	webhookNever    = "never"    // never notified: a webhook behaviour, or no txid with WebhooksTxidOnly
)

// receivePix remembers a PIX received, replacing one of the same
// end_to_end_id, and makes its delivery due. A PIX without horario gets
// the simulator's now. It returns what becomes of its webhook.
func (s *Simulator) receivePix(f pixFacts, obj map[string]json.RawMessage) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if f.horario.IsZero() {
		f.horario = s.now().UTC()
		// Marshalling a time cannot fail.
		obj["horario"], _ = json.Marshal(f.horario)
	}
	p, ok := s.pixes[f.endToEndID]
	if !ok {
		p = &receivedPix{}
		s.pixes[f.endToEndID] = p
	}
	p.obj = obj
	s.placePix(p, f)
	p.silent = s.webhooksTxidOnly && f.txid == ""
	if f.chave != "" {
		if b, misbehave, _ := s.webhookBehaviors.request(f.chave); b.Mode == WebhookModeNever && misbehave {
			p.silent = true
		}
	}
	p.gen++
	switch {
	case p.silent:
		p.done = p.gen
		return webhookNever
	case s.webhookTarget(p) == "":
		return webhookDisabled
	}
	return webhookQueued
}

// webhookTarget is where p's webhook goes: {webhookUrl}/pix of the webhook
// registered for its key, else Options.WebhookURL (as is); "" when
// neither. The caller holds s.mu.
func (s *Simulator) webhookTarget(p *receivedPix) string {
	if reg, ok := s.webhooks[p.chave]; ok && p.chave != "" {
		return strings.TrimRight(reg.url, "/") + "/pix"
	}
	return s.webhookURL
}

// devolucaoJSON is a devolução in the API Pix's words: the body of
// GET /pix/{e2eid}/devolucao/{id}, and an item of a PIX's devolucoes.
type devolucaoJSON struct {
	ID        string           `json:"id"`
	RtrID     string           `json:"rtrId"`
	Valor     string           `json:"valor"`
	Natureza  string           `json:"natureza"`
	Descricao string           `json:"descricao,omitempty"`
	Horario   horarioJSON      `json:"horario"`
	Status    psp.RefundStatus `json:"status"`
	Motivo    string           `json:"motivo,omitempty"`
}

type horarioJSON struct {
	Solicitacao time.Time  `json:"solicitacao"`
	Liquidacao  *time.Time `json:"liquidacao,omitempty"`
}

func (v RefundView) wire() devolucaoJSON {
	j := devolucaoJSON{
		ID:        v.ID,
		RtrID:     v.RtrID,
		Valor:     psp.FormatValor(v.AmountCents),
		Natureza:  v.Nature,
		Descricao: v.Description,
		Horario:   horarioJSON{Solicitacao: v.RequestedAt.UTC()},
		Status:    v.Status,
		Motivo:    v.Reason,
	}
	if !v.SettledAt.IsZero() {
		t := v.SettledAt.UTC()
		j.Horario.Liquidacao = &t
	}
	return j
}

// webhookMessage is one delivery attempt the loop makes, taken under the
// lock and sent without it.
type webhookMessage struct {
	e2e  string
	gen  int
	id   string
	url  string
	body []byte
}

// deliverWebhooks is the loop that notifies the bank (at the webhook
// registered for the PIX's key, else Options.WebhookURL), over mutual TLS
// with Options.WebhookTLS:
// every webhookTick it marks the devoluções whose outcome is due (by
// Options.Now) and delivers the PIX that have news. It returns when ctx
// ends; Serve runs it and waits for it. It holds s.mu only to read and
// update state, never during a delivery, so requests are never held up by
// a slow bank.
func (s *Simulator) deliverWebhooks(ctx context.Context) {
	hc := s.webhookClient()
	defer hc.CloseIdleConnections()
	tick := time.NewTicker(webhookTick)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		for _, m := range s.dueWebhooks() {
			if ctx.Err() != nil {
				return
			}
			err := s.sendWebhook(ctx, hc, m)
			if ctx.Err() != nil {
				// Cut short by the shutdown: neither a success nor a
				// failure of the bank's.
				return
			}
			s.webhookDone(m, err)
		}
	}
}

// webhookClient is the client of the deliveries to the bank (the PIX
// webhooks, the MED notices): over Options.WebhookTLS, never redirected.
func (s *Simulator) webhookClient() *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if s.webhookTLS != nil {
		tr.TLSClientConfig = s.webhookTLS.Clone()
	}
	return &http.Client{
		Transport: tr,
		Timeout:   webhookTimeout,
		// The bank's webhook route does not redirect; following one would
		// send the notification to an address nobody configured.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// dueWebhooks marks the outcomes that are due and returns the messages to
// send now, by end_to_end_id. A message due while the webhooks are dropped
// (DropWebhooks), or that has nowhere to go, is given up unsent.
func (s *Simulator) dueWebhooks() []webhookMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	kept := s.unnotified[:0]
	for _, d := range s.unnotified {
		if st, _ := d.status(now); !st.Final() {
			kept = append(kept, d)
			continue
		}
		s.pixes[d.endToEndID].gen++ // remembered: see requestRefund
	}
	clear(s.unnotified[len(kept):]) // let the notified ones go
	s.unnotified = kept

	dropped := s.webhooksDropped(now)
	realNow := time.Now()
	var out []webhookMessage
	for e2e, p := range s.pixes {
		if p.done >= p.gen || realNow.Before(p.nextAttempt) {
			continue
		}
		if p.msgGen != p.gen {
			// News since the message being retried: deliver the newest
			// state instead, as a new message.
			p.msgGen, p.msgID, p.msgURL, p.msgBody, p.attempts = p.gen, newWebhookID(), s.webhookTarget(p), s.pixBody(p), 0
		}
		switch {
		case p.msgURL == "":
			p.done = p.gen
			continue
		case dropped:
			s.log.Warn("psp simulator webhook dropped (simulated)", "end_to_end_id", e2e, "webhook_id", p.msgID)
			p.done, p.attempts, p.nextAttempt = p.gen, 0, time.Time{}
			continue
		}
		out = append(out, webhookMessage{e2e: e2e, gen: p.msgGen, id: p.msgID, url: p.msgURL, body: p.msgBody})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].e2e < out[j].e2e })
	return out
}

// pixItem is p as the API Pix shows it now: as posted, with all its
// devoluções when it has any. The caller holds s.mu.
func (s *Simulator) pixItem(p *receivedPix) map[string]json.RawMessage {
	obj := make(map[string]json.RawMessage, len(p.obj)+1)
	for k, v := range p.obj {
		obj[k] = v
	}
	if list := s.refunds[p.endToEndID]; len(list) > 0 {
		devs := make([]devolucaoJSON, len(list))
		for i, d := range list {
			devs[i] = s.refundView(d).wire()
		}
		// Marshalling plain structs of strings and times cannot fail.
		obj["devolucoes"], _ = json.Marshal(devs)
	}
	return obj
}

// pixBody is the API Pix webhook body {"pix":[...]} of p as of now. The
// caller holds s.mu.
func (s *Simulator) pixBody(p *receivedPix) []byte {
	body, _ := json.Marshal(map[string]any{"pix": []any{s.pixItem(p)}})
	return body
}

// sendWebhook POSTs one message to the bank, signed when a secret is
// configured (the API Pix's own webhooks are not: mutual TLS protects
// them). Only a 2xx answer is a delivery.
func (s *Simulator) sendWebhook(ctx context.Context, hc *http.Client, m webhookMessage) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, m.url, bytes.NewReader(m.body))
	if err != nil {
		return fmt.Errorf("build webhook request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	if s.webhookKey != nil {
		// The timestamp is the real time, not Options.Now: the bank checks
		// it against its own clock.
		webhooksig.SetHeaders(req.Header, m.id, time.Now(), m.body, s.webhookKey)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("post webhook: %w", err)
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("webhook answered http %d: %s", resp.StatusCode, strings.TrimSpace(string(answer)))
	}
	return nil
}

// webhookDone records the result of sending m.
func (s *Simulator) webhookDone(m webhookMessage, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.pixes[m.e2e]
	if p == nil || p.msgGen != m.gen {
		return
	}
	if err == nil {
		s.log.Info("psp simulator webhook delivered", "end_to_end_id", m.e2e, "webhook_id", m.id, "attempt", p.attempts+1)
		p.done, p.attempts, p.nextAttempt = m.gen, 0, time.Time{}
		return
	}
	p.attempts++
	if p.attempts >= webhookMaxAttempts {
		s.log.Error("psp simulator webhook dropped", "end_to_end_id", m.e2e, "webhook_id", m.id, "attempts", p.attempts, "error", err)
		p.done, p.attempts, p.nextAttempt = m.gen, 0, time.Time{}
		return
	}
	backoff := webhookRetryMin << min(p.attempts-1, 10)
	backoff = min(backoff, webhookRetryMax)
	s.log.Warn("psp simulator webhook failed", "end_to_end_id", m.e2e, "webhook_id", m.id, "attempt", p.attempts,
		"retry_in", backoff.String(), "error", err)
	p.nextAttempt = time.Now().Add(backoff)
}

// newWebhookID returns a fresh webhook-id.
func newWebhookID() string {
	b := make([]byte, 12)
	// crypto/rand.Read never returns an error.
	_, _ = rand.Read(b)
	return "msg_" + hex.EncodeToString(b)
}
