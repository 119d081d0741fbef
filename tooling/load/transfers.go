package load

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"

	"github.com/google/uuid"
)

// TransferOptions shape a load of outgoing PIX (POST /pix).
type TransferOptions struct {
	APIURL string
	// RunID and Accounts name the accounts the transfers debit (AccountID),
	// the same as the webhook load's.
	RunID    string
	Accounts int
	// Keys are the receivers' Pix keys, taken in turn, so that each key
	// gets a known share of the transfers whatever the rate: a fault case
	// sets what the PSP does with some of them.
	Keys []string
	// MaxAmountCents bounds a transfer's amount (from 1); 0 means 2,000,
	// small enough for the opening balances to cover a whole run.
	MaxAmountCents int64
	// RetryFor is how long after the step a request without a final answer
	// (no answer, 5xx, 409 request_in_progress) is still resent, with the
	// same Idempotency-Key and body, as an app does.
	RetryFor time.Duration
	// ReplayRatio is the share of created transfers whose request is sent
	// once more after the 201: the answer must be the same transfer,
	// marked X-Idempotent-Replay.
	ReplayRatio float64
	Seed        uint64
	// Bearer returns the token of each request: a customer's that may
	// act for the run's accounts with scope pix:write. One subject for
	// the whole load, since the API scopes Idempotency-Keys by it (a
	// retry under another subject would not replay). nil sends none.
	Bearer func() (string, error)
}

// SentTransfer is one outgoing PIX as the load asked for it, and the final
// answer it got.
type SentTransfer struct {
	IdempotencyKey string
	AccountID      string
	PixKey         string
	AmountCents    int64
	// Status is the final answer's HTTP status (201, or a 422 refusal); 0
	// when no final answer came.
	Status int
	// Code is a refusal's error code.
	Code string
	// TransferID and EndToEndID are the 201's transfer.
	TransferID string
	EndToEndID string
	// CreatedAt is when the 201 arrived.
	CreatedAt time.Time
}

// TransferStep is what one rate step of outgoing PIX saw from the client.
type TransferStep struct {
	Arrivals int64
	Requests int64
	Created  int64 // first 201s
	Refused  map[string]int64
	// Errors are the answers that were not final, by HTTP status or
	// transport error, over all attempts.
	Errors map[string]int64
	// Unanswered: requests that never got a final answer.
	Unanswered int
	// Replays: 201 replays asked for; ReplayMismatches: those that did not
	// answer the same transfer marked as a replay.
	Replays, ReplayMismatches int64
}

// Transfers sends outgoing PIX to a running API.
type Transfers struct {
	opts   TransferOptions
	client *http.Client

	mu   sync.Mutex
	rng  *rand.Rand
	next int
	sent map[string]*SentTransfer // by idempotency key
}

// NewTransfers prepares a transfer load; Close releases its connections.
func NewTransfers(opts TransferOptions) (*Transfers, error) {
	if opts.Accounts <= 0 || len(opts.Keys) == 0 {
		return nil, fmt.Errorf("load: transfers need accounts and pix keys")
	}
	if opts.MaxAmountCents <= 0 {
		opts.MaxAmountCents = 2000
	}
	return &Transfers{
		opts:   opts,
		client: newClient(64),
		rng:    rand.New(rand.NewPCG(opts.Seed, opts.Seed^0x5851f42d4c957f2d)),
		sent:   map[string]*SentTransfer{},
	}, nil
}

// Close releases the load's connections.
func (t *Transfers) Close() { t.client.CloseIdleConnections() }

// Sent returns every transfer asked for, by Idempotency-Key.
func (t *Transfers) Sent() map[string]SentTransfer {
	t.mu.Lock()
	defer t.mu.Unlock()
	return copySent(t.sent)
}

// Run sends rate transfers per second for d (open model), then waits for
// every request, retry and replay.
func (t *Transfers) Run(ctx context.Context, rate float64, d time.Duration) (*TransferStep, error) {
	if rate <= 0 || d <= 0 {
		return nil, fmt.Errorf("load: rate and duration must be positive")
	}
	start := time.Now()
	st := newKeyedStep(start.Add(d + t.opts.RetryFor))
	var wg sync.WaitGroup
	arrivals := openModel(ctx, start, rate, d, func(time.Time) {
		p, replay := t.arrival(st, nil)
		wg.Go(func() { t.deliver(ctx, st, p, replay) })
	})
	wg.Wait()
	return t.step(st, arrivals), ctx.Err()
}

// Send sends one transfer to pixKey now and waits for its final answer
// (retrying as Run does, for RetryFor).
func (t *Transfers) Send(ctx context.Context, pixKey string) SentTransfer {
	return t.sendNow(ctx, func(p *SentTransfer) { p.PixKey = pixKey })
}

// SendFrom sends one transfer of amountCents from accountID to pixKey now
// and waits for its final answer, as Send does: money taken out of an
// account a case chose (one whose PIX is reported, say), of an amount it
// chose (more than its available balance, say).
func (t *Transfers) SendFrom(ctx context.Context, accountID, pixKey string, amountCents int64) SentTransfer {
	return t.sendNow(ctx, func(p *SentTransfer) { p.AccountID, p.PixKey, p.AmountCents = accountID, pixKey, amountCents })
}

// sendNow sends one transfer, as set makes it, and waits for its final
// answer.
func (t *Transfers) sendNow(ctx context.Context, set func(*SentTransfer)) SentTransfer {
	st := newKeyedStep(time.Now().Add(t.opts.RetryFor))
	p, _ := t.arrival(st, set)
	t.deliver(ctx, st, p, false)
	t.mu.Lock()
	defer t.mu.Unlock()
	return *p
}

func (t *Transfers) step(st *keyedStep, arrivals int64) *TransferStep {
	unanswered, refused, errors := st.tally(&t.mu, func(k string) int { return t.sent[k].Status })
	return &TransferStep{
		Arrivals: arrivals, Requests: st.requests.Load(), Created: st.created.Load(),
		Refused: refused, Errors: errors, Unanswered: unanswered,
		Replays: st.replays.Load(), ReplayMismatches: st.mismatches.Load(),
	}
}

// arrival decides the next transfer: from an account at random, of an
// amount at random, to the next key in turn; or as set makes it (nil: as
// drawn).
func (t *Transfers) arrival(st *keyedStep, set func(*SentTransfer)) (*SentTransfer, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	p := &SentTransfer{
		IdempotencyKey: uuid.NewString(),
		AccountID:      AccountID(t.opts.RunID, t.rng.IntN(t.opts.Accounts)),
		AmountCents:    1 + t.rng.Int64N(t.opts.MaxAmountCents),
	}
	if set != nil {
		set(p)
	} else {
		p.PixKey = t.opts.Keys[t.next%len(t.opts.Keys)]
		t.next++
	}
	t.sent[p.IdempotencyKey] = p
	st.add(p.IdempotencyKey)
	return p, t.rng.Float64() < t.opts.ReplayRatio
}

type transferBody struct {
	AccountID   string `json:"account_id"`
	AmountCents int64  `json:"amount_cents"`
	PixKey      string `json:"pix_key"`
}

// transferAnswer is what the load reads of an answer of POST /pix.
type transferAnswer struct {
	ID         string `json:"id"`
	EndToEndID string `json:"end_to_end_id"`
	Error      struct {
		Code string `json:"code"`
	} `json:"error"`
}

func (a transferAnswer) answerID() string  { return a.ID }
func (a transferAnswer) errorCode() string { return a.Error.Code }

// deliver sends p as deliverKeyed does, and records its final answer in p.
func (t *Transfers) deliver(ctx context.Context, st *keyedStep, p *SentTransfer, replay bool) {
	body, _ := json.Marshal(transferBody{p.AccountID, p.AmountCents, p.PixKey})
	post := func(ctx context.Context, body []byte) (int, transferAnswer, bool, error) {
		return postKeyed[transferAnswer](ctx, t.client, t.opts.APIURL+"/pix", p.IdempotencyKey, t.opts.Bearer, body)
	}
	deliverKeyed(ctx, st, body, replay, post, func(status int, answer transferAnswer) {
		t.mu.Lock()
		defer t.mu.Unlock()
		p.Status, p.Code = status, answer.Error.Code
		if status == http.StatusCreated {
			p.TransferID, p.EndToEndID, p.CreatedAt = answer.ID, answer.EndToEndID, time.Now()
		}
	})
}

// CreatedTransfers returns the transfers that were created (201), by
// transfer id.
func (t *Transfers) CreatedTransfers() map[string]SentTransfer {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := map[string]SentTransfer{}
	for _, s := range t.sent {
		if s.Status == http.StatusCreated {
			out[s.TransferID] = *s
		}
	}
	return out
}
