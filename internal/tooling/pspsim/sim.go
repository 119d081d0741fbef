package pspsim

import (
	"cmp"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/pixbank/pix/internal/psp"
)

// Options configure a Simulator; every field is optional.
type Options struct {
	// Logger gets one line per request; nil discards them.
	Logger *slog.Logger
	// Now is the clock transfers are created and settled by; nil means
	// time.Now. Tests inject one to settle transfers without sleeping.
	// (A timeout behaviour's Delay is waited for in real time.)
	Now func() time.Time
	// DefaultSettleAfter is how long a transfer stays pending, and a
	// devolução EM_PROCESSAMENTO, when its behaviour does not say; 0 means
	// DefaultSettleAfter.
	DefaultSettleAfter time.Duration
	// WebhookURL is the bank's API Pix webhook route (for example
	// "http://127.0.0.1:8080/webhooks/api-pix/pix"): the PIX told to
	// POST /sim/pix, and the outcomes of their devoluções, are delivered
	// there by the loop that Serve runs. "" delivers nothing (the bank
	// polls GET /pix/{e2eid}/devolucao/{id}).
	WebhookURL string
	// WebhookSecret signs the webhooks (Standard Webhooks, as
	// internal/webhooksig verifies them): "whsec_<base64>", or a
	// WEBHOOK_SECRETS value of the bank (see ParseWebhookSecret). "" sends
	// them unsigned. A malformed secret or URL makes Serve fail.
	WebhookSecret string
	// WebhookTLS configures the TLS of the webhook deliveries: the
	// simulator's client certificate (Certificates), for the mutual TLS
	// the API Pix protects its callback with, and the bank's CA (RootCAs).
	// nil: no client certificate, the system's roots.
	WebhookTLS *tls.Config
	// MEDWebhookURL is the bank's base of the PSP's MED notices (for
	// example "http://127.0.0.1:8080/webhooks/med"): the infraction
	// reports and refund requests of POST /sim/med/... are noticed at
	// /infraction-reports and /refunds under it, signed (WebhookSecret)
	// and over TLS (WebhookTLS) as the PIX webhooks (med.go). "" notices
	// nothing.
	MEDWebhookURL string
	// WebhooksTxidOnly notifies only the PIX with a txid, as the API Pix
	// says ("Somente Pix associados a um txid serão notificados"); the
	// others are only in GET /pix.
	WebhooksTxidOnly bool

	// OAuth turns on OAuth 2.0 client credentials (see OAuthOptions); nil:
	// the API takes no credentials (the default, for the tests and tools
	// of before). A malformed one makes Serve fail and Handler answer 500.
	OAuth *OAuthOptions
	// TLS makes Serve serve TLS with this configuration: its Certificates,
	// and for mutual TLS ClientCAs with ClientAuth
	// tls.RequireAndVerifyClientCert. nil: plain HTTP.
	TLS *tls.Config
	// APIBasePath ("/api/v2") serves the API (the API Pix's and the
	// transfer routes, not the token endpoint nor the control routes)
	// under that path too, as a PSP whose PSP_URL has a path.
	APIBasePath string
	// RefundsNeedPix answers a devolução of a PIX the simulator did not
	// receive (POST /sim/pix) 404 NaoEncontrado, as the API Pix does.
	// Off (the default), any PIX may be refunded: the bank's tests refund
	// PIX credited by webhooks the simulator never sent.
	RefundsNeedPix bool
}

// Simulator is an in-memory PSP. It is safe for concurrent use.
type Simulator struct {
	log         *slog.Logger
	now         func() time.Time
	settleAfter time.Duration

	mu        sync.Mutex
	transfers map[string]*transfer
	// received counts the POSTs per end_to_end_id, also those answered
	// 503 before any transfer existed, so it lives beside transfers.
	received  map[string]int
	behaviors registry[Behavior]

	// Devoluções, by the end_to_end_id of the PIX refunded, in the order
	// they were asked for; refundReceived counts the PUTs per devolução,
	// also those answered 503 before it existed.
	refunds         map[string][]*devolucao
	refundReceived  map[refundKey]int
	refundBehaviors registry[RefundBehavior]
	// unnotified are the devoluções with an outcome (due or to come) not
	// yet handed to the webhook loop; pixes the PIX told to POST /sim/pix.
	unnotified []*devolucao
	pixes      map[string]*receivedPix
	// byHorario are the same PIX in GET /pix's order (comparePix), so
	// that a page is found without sorting them all.
	byHorario []*receivedPix
	// listPageMax is the most PIX a page of GET /pix lists (SetListPageSize),
	// 0 when what is asked; listPageAnswers counts the pages answered since
	// it was set.
	listPageMax, listPageAnswers int
	// webhooks are the webhooks registered per key (PUT /webhook/{chave}),
	// and webhookBehaviors what happens to the PIX received to a key.
	webhooks         map[string]webhookRegistration
	webhookBehaviors registry[WebhookBehavior]
	// dropWebhooksUntil ends DropWebhooks's period (Options.Now).
	dropWebhooksUntil time.Time
	// medReports are the MED infraction reports opened through the
	// control routes, by id (med.go).
	medReports map[string]*medReport

	webhookURL       string
	medWebhookURL    string
	webhookKey       []byte
	webhookTLS       *tls.Config
	webhooksTxidOnly bool
	refundsNeedPix   bool
	apiBasePath      string
	serverTLS        *tls.Config
	// oauth is the OAuth state, nil when OAuth is off.
	oauth *oauthState
	// wrapHandler, set by the tests only (testhooks.go), wraps the
	// handler Serve serves: they record its exchanges.
	wrapHandler func(http.Handler) http.Handler
	// configErr is the defect of the Options (the webhook's URL or
	// secret, OAuth), which Serve returns and Handler answers: New has no
	// error result.
	configErr error
}

// transfer is one transfer as the PSP holds it. Its outcome (final, reason)
// is fixed at creation by the behaviour of that moment; it shows from
// resolveAt on.
type transfer struct {
	in        psp.Transfer
	createdAt time.Time
	resolveAt time.Time
	final     psp.Status
	reason    string
}

func (t *transfer) result(now time.Time) psp.Result {
	r := psp.Result{EndToEndID: t.in.EndToEndID, Status: psp.StatusPending}
	if !now.Before(t.resolveAt) {
		r.Status = t.final
		if t.final == psp.StatusRejected {
			r.Reason = t.reason
		}
	}
	return r
}

// TransferView is the PSP's full view of a transfer, the body of
// GET /transfers/{end_to_end_id}.
type TransferView struct {
	EndToEndID  string     `json:"end_to_end_id"`
	Status      psp.Status `json:"status"`
	Reason      string     `json:"reason"`
	AmountCents int64      `json:"amount_cents"`
	PixKey      string     `json:"pix_key"`
	AccountID   string     `json:"account_id"`
	// Received is how many POSTs arrived for this end_to_end_id: duplicates
	// and those answered 503 included.
	Received  int       `json:"received"`
	CreatedAt time.Time `json:"created_at"`
}

// BehaviorView is a Pix key's behaviour as GET /behaviors lists it.
type BehaviorView struct {
	PixKey   string
	Behavior Behavior
	// Submissions is how many submissions to the key arrived since the
	// behaviour was set.
	Submissions int
	// Resubmissions is how many of them were resubmissions of a transfer
	// the simulator held, for duplicate_conflict (0 for the other modes).
	Resubmissions int
}

// New returns an empty simulator in which every key accepts and every
// devolução is made.
func New(opts Options) *Simulator {
	s := &Simulator{
		log:         opts.Logger,
		now:         opts.Now,
		settleAfter: opts.DefaultSettleAfter,
		transfers:   make(map[string]*transfer),
		received:    make(map[string]int),

		refunds:        make(map[string][]*devolucao),
		refundReceived: make(map[refundKey]int),
		pixes:          make(map[string]*receivedPix),
		webhooks:       make(map[string]webhookRegistration),
		medReports:     make(map[string]*medReport),

		webhookURL:       opts.WebhookURL,
		medWebhookURL:    opts.MEDWebhookURL,
		webhookTLS:       opts.WebhookTLS,
		webhooksTxidOnly: opts.WebhooksTxidOnly,
		refundsNeedPix:   opts.RefundsNeedPix,
		apiBasePath:      strings.TrimRight(opts.APIBasePath, "/"),
		serverTLS:        opts.TLS,
	}
	s.behaviors = newRegistry(&s.mu, Behavior{Mode: ModeAccept}, checkPixKey)
	s.refundBehaviors = newRegistry(&s.mu, RefundBehavior{Mode: RefundModeReturn}, checkEndToEndID)
	s.webhookBehaviors = newRegistry(&s.mu, WebhookBehavior{Mode: WebhookModeDeliver}, checkChave)
	if s.webhookURL != "" {
		s.configErr = checkWebhookURL(s.webhookURL)
	}
	if s.medWebhookURL != "" {
		s.configErr = errors.Join(s.configErr, checkWebhookURL(s.medWebhookURL))
	}
	if key, err := ParseWebhookSecret(opts.WebhookSecret); err != nil {
		s.configErr = errors.Join(s.configErr, err)
	} else {
		s.webhookKey = key
	}
	if opts.OAuth != nil {
		st, err := newOAuthState(opts.OAuth)
		s.oauth = st
		s.configErr = errors.Join(s.configErr, err)
	}
	if s.apiBasePath != "" && !strings.HasPrefix(s.apiBasePath, "/") {
		s.configErr = errors.Join(s.configErr, fmt.Errorf("api base path %q: want /path", opts.APIBasePath))
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.settleAfter <= 0 {
		s.settleAfter = DefaultSettleAfter
	}
	return s
}

// SetBehavior makes pixKey behave as b from now on, restarting the count of
// its submissions. Transfers that exist keep the outcome they were created
// with.
func (s *Simulator) SetBehavior(pixKey string, b Behavior) error {
	return s.behaviors.set(pixKey, b)
}

// checkPixKey refuses an empty Pix key.
func checkPixKey(pixKey string) error {
	if pixKey == "" {
		return errors.New("pix key is empty")
	}
	return nil
}

// DeleteBehavior makes pixKey accept again.
func (s *Simulator) DeleteBehavior(pixKey string) {
	s.behaviors.remove(pixKey)
}

// Behaviors lists the keys that have a behaviour, by key.
func (s *Simulator) Behaviors() []BehaviorView {
	return entries(&s.behaviors, func(pixKey string, e entry[Behavior]) BehaviorView {
		return BehaviorView{PixKey: pixKey, Behavior: e.behavior, Submissions: e.requests, Resubmissions: e.resubmissions}
	})
}

// Transfer returns the PSP's view of a transfer, as of now.
func (s *Simulator) Transfer(endToEndID string) (TransferView, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.transfers[endToEndID]
	if !ok {
		return TransferView{}, false
	}
	return s.view(t), true
}

// Transfers returns the PSP's view of every transfer it holds, as of now,
// by end_to_end_id.
func (s *Simulator) Transfers() []TransferView {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]TransferView, 0, len(s.transfers))
	for _, t := range s.transfers {
		out = append(out, s.view(t))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].EndToEndID < out[j].EndToEndID })
	return out
}

// query is a status query through the API: the transfer's view, unless the
// behaviour of its key refuses the query (refused is then the answer's
// status, 401 or 403).
func (s *Simulator) query(endToEndID string) (v TransferView, ok bool, refused int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.transfers[endToEndID]
	if !ok {
		return TransferView{}, false, 0
	}
	if e, has := s.behaviors.byKey[t.in.PixKey]; has && e.behavior.Mode == ModeUnauthorized && e.behavior.StatusQueries &&
		e.behavior.misbehaves(e.requests+1) {
		// The key's next submission would be refused: its credentials
		// are still bad, for queries as well.
		return TransferView{}, true, e.behavior.refusal()
	}
	return s.view(t), true, 0
}

// view is t as the PSP shows it now. The caller holds s.mu.
func (s *Simulator) view(t *transfer) TransferView {
	r := t.result(s.now())
	return TransferView{
		EndToEndID:  t.in.EndToEndID,
		Status:      r.Status,
		Reason:      r.Reason,
		AmountCents: t.in.AmountCents,
		PixKey:      t.in.PixKey,
		AccountID:   t.in.AccountID,
		Received:    s.received[t.in.EndToEndID],
		CreatedAt:   t.createdAt,
	}
}

// result returns where a transfer stands now.
func (s *Simulator) result(endToEndID string) (psp.Result, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.transfers[endToEndID]
	if !ok {
		return psp.Result{}, false
	}
	return t.result(s.now()), true
}

// endToEndIDPattern is the shape of a PIX end_to_end_id: "E", the ISPB and
// timestamp and sequence, 32 characters in all.
var endToEndIDPattern = regexp.MustCompile(`^E[A-Za-z0-9]{31}$`)

// validate reports what is wrong with a submitted transfer, "" if nothing.
func validate(t psp.Transfer) string {
	switch {
	case !endToEndIDPattern.MatchString(t.EndToEndID):
		return "end_to_end_id must be 32 characters: E followed by 31 letters or digits"
	case t.AmountCents <= 0:
		return "amount_cents must be positive"
	case t.PixKey == "":
		return "pix_key is required"
	}
	return ""
}

// outcome is how the simulator answers a submission.
type outcome int

const (
	outcomeCreated           outcome = iota // 201 (422 if rejected)
	outcomeDuplicate                        // 200 (422 if rejected)
	outcomeConflict                         // 409: the end_to_end_id is another transfer's
	outcomeUnavailable                      // 503: fail mode
	outcomeDuplicateConflict                // 409: duplicate_conflict mode
	outcomeRefused                          // 401 or 403: unauthorized mode
)

func (o outcome) String() string {
	switch o {
	case outcomeCreated:
		return "created"
	case outcomeDuplicate:
		return "duplicate"
	case outcomeConflict:
		return "end_to_end_id_reused"
	case outcomeUnavailable:
		return "injected_failure"
	case outcomeDuplicateConflict:
		return "duplicate_conflict"
	case outcomeRefused:
		return "unauthorized"
	}
	return "unknown"
}

// submission is the decision on one valid POST /transfers.
type submission struct {
	outcome outcome
	mode    Mode
	// hang, when > 0, is how long to wait (or until the request ends)
	// before answering: timeout mode.
	hang time.Duration
	// lose: cut the connection instead of answering (lose_response mode).
	lose bool
	// refusedStatus answers outcomeRefused: 401 or 403.
	refusedStatus int
}

// submit decides, under the lock and at once, everything about a
// submission; only the hang of timeout mode and the cut of lose_response
// happen outside, after the transfer exists, as when a PSP processed a
// request whose answer is lost.
func (s *Simulator) submit(in psp.Transfer) submission {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.received[in.EndToEndID]++
	b, misbehave, kb := s.behaviors.request(in.PixKey)
	// duplicate_conflict counts resubmissions, below.
	misbehave = misbehave && b.Mode != ModeDuplicateConflict
	sub := submission{mode: b.Mode}
	switch {
	case b.Mode == ModeFail && misbehave:
		// An unavailable PSP creates nothing and looks nothing up, even
		// for a transfer it already has.
		sub.outcome = outcomeUnavailable
		return sub
	case b.Mode == ModeUnauthorized && misbehave:
		// Neither does one that refuses our credentials.
		sub.outcome = outcomeRefused
		sub.refusedStatus = b.refusal()
		return sub
	}
	if t, ok := s.transfers[in.EndToEndID]; ok {
		if t.in.AmountCents != in.AmountCents || t.in.PixKey != in.PixKey || t.in.AccountID != in.AccountID {
			sub.outcome = outcomeConflict
			return sub
		}
		sub.outcome = outcomeDuplicate
		if b.Mode == ModeDuplicateConflict {
			kb.resubmissions++
			if b.misbehaves(kb.resubmissions) {
				sub.outcome = outcomeDuplicateConflict
				return sub
			}
		}
	} else {
		s.transfers[in.EndToEndID] = s.newTransfer(in, b)
		sub.outcome = outcomeCreated
	}
	switch {
	case b.Mode == ModeTimeout && misbehave:
		sub.hang = b.Delay
		if sub.hang == 0 {
			sub.hang = DefaultDelay
		}
	case b.Mode == ModeLoseResponse && misbehave:
		sub.lose = true
	}
	return sub
}

// newTransfer creates in's transfer under behaviour b.
func (s *Simulator) newTransfer(in psp.Transfer, b Behavior) *transfer {
	now := s.now()
	reason := cmp.Or(b.Reason, DefaultReason)
	t := &transfer{in: in, createdAt: now, resolveAt: now.Add(cmp.Or(b.SettleAfter, s.settleAfter)), final: psp.StatusSettled}
	switch b.Mode {
	case ModeReject:
		t.resolveAt, t.final, t.reason = now, psp.StatusRejected, reason
	case ModeRejectLater:
		t.final, t.reason = psp.StatusRejected, reason
	}
	return t
}
