package load

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Credited is a PIX the webhook load got credited: what a refund returns
// (part of).
type Credited struct {
	EndToEndID  string
	AccountID   string
	AmountCents int64
}

// CreditedOf lists the run's PIX credited so far, from the books: the
// refund load's Credited source.
func CreditedOf(pool *pgxpool.Pool, runID string) func(context.Context) ([]Credited, error) {
	return func(ctx context.Context) ([]Credited, error) {
		rows, err := pool.Query(ctx, `SELECT end_to_end_id, account_id, amount_cents FROM pix_credits WHERE starts_with(end_to_end_id, $1)
			ORDER BY end_to_end_id`, EndToEndPrefix(runID))
		if err != nil {
			return nil, fmt.Errorf("read credits: %w", err)
		}
		out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[Credited])
		if err != nil {
			return nil, fmt.Errorf("read credits: %w", err)
		}
		return out, nil
	}
}

// EndToEndID is PIX n (from 1, in the order the session made them) of a
// run: a case can set what the PSP does with a PIX's devoluções before the
// PIX arrives.
func EndToEndID(runID string, n int64) string { return endToEndID(runID, n) }

// EndToEndSeq is n for EndToEndID(runID, n), or 0 for an id of another run
// or form.
func EndToEndSeq(runID, endToEndID string) int64 {
	prefix := EndToEndPrefix(runID)
	if len(endToEndID) != len(prefix)+13 || endToEndID[:len(prefix)] != prefix {
		return 0
	}
	n, err := strconv.ParseInt(endToEndID[len(prefix):], 10, 64)
	if err != nil {
		return 0
	}
	return n
}

// RefundOptions shape a load of refunds (devoluções) of the PIX the
// webhook load credited: POST /pix/credits/{end_to_end_id}/refunds.
type RefundOptions struct {
	APIURL string
	// Credited lists the PIX that may be refunded (CreditedOf); it is read
	// again every RefreshEvery (0 means 500 ms) while the arrivals last. An
	// arrival while none is credited yet is skipped (counted).
	Credited     func(context.Context) ([]Credited, error)
	RefreshEvery time.Duration
	// RepeatRatio is the share of arrivals that refund a PIX already
	// refunded by the load, for an amount around what its credit has left
	// (sometimes beyond: refund_exceeds_credit is then a right answer), so
	// that some PIX carry several refunds. The others take a PIX at
	// random and return a random part of it, at most half.
	RepeatRatio float64
	// RetryFor is how long after the step a request without a final answer
	// (no answer, 5xx, 409 request_in_progress) is still resent, with the
	// same Idempotency-Key and body, as an app does.
	RetryFor time.Duration
	// ReplayRatio is the share of created refunds whose request is sent
	// once more after the 201: the answer must be the same refund, marked
	// X-Idempotent-Replay.
	ReplayRatio float64
	Seed        uint64
	// Bearer returns the token of each request: a customer's that may act
	// for the run's accounts with scope pix:write, one subject for the
	// whole load (Idempotency-Keys are scoped by it). nil sends none.
	Bearer func() (string, error)
	// Reason is the body's reason; "" sends none.
	Reason string
}

// SentRefund is one refund as the load asked for it, and the final answer
// it got.
type SentRefund struct {
	IdempotencyKey string
	EndToEndID     string
	AccountID      string
	AmountCents    int64
	// Status is the final answer's HTTP status (201, or a 4xx refusal); 0
	// when no final answer came.
	Status int
	// Code is a refusal's error code.
	Code string
	// RefundID is the 201's refund; RefundStatus the status it answered.
	RefundID     string
	RefundStatus string
	// CreatedAt is when the 201 arrived.
	CreatedAt time.Time
}

// RefundStep is what one rate step of refunds saw from the client.
type RefundStep struct {
	Arrivals int64
	// Skipped: arrivals while no PIX of the run was credited yet.
	Skipped  int64
	Requests int64
	Created  int64 // first 201s
	// Refused counts the final refusals by "status code".
	Refused map[string]int64
	// Errors are the answers that were not final, by HTTP status or
	// transport error, over all attempts.
	Errors map[string]int64
	// Resent: requests sent again with the same key after an answer that
	// was not final (lost, 5xx, request_in_progress).
	Resent int64
	// Unanswered: requests that never got a final answer.
	Unanswered int
	// Replays: 201 replays asked for; ReplayMismatches: those that did not
	// answer the same refund marked as a replay.
	Replays, ReplayMismatches int64
}

// Refunds sends refunds of credited PIX to a running API.
type Refunds struct {
	opts   RefundOptions
	client *http.Client

	mu       sync.Mutex
	rng      *rand.Rand
	credited []Credited
	sent     map[string]*SentRefund // by idempotency key
	// asked is, per PIX, the amounts of its refunds answered 201.
	asked map[string]int64
	// refunded lists the PIX with a refund answered 201 (RepeatRatio).
	refunded []string
}

// NewRefunds prepares a refund load; Close releases its connections.
func NewRefunds(opts RefundOptions) (*Refunds, error) {
	if opts.Credited == nil {
		return nil, fmt.Errorf("load: refunds need a source of credited PIX")
	}
	if opts.RefreshEvery <= 0 {
		opts.RefreshEvery = 500 * time.Millisecond
	}
	return &Refunds{
		opts:   opts,
		client: newClient(64),
		rng:    rand.New(rand.NewPCG(opts.Seed, opts.Seed^0x2545f4914f6cdd1d)),
		sent:   map[string]*SentRefund{},
		asked:  map[string]int64{},
	}, nil
}

// Close releases the load's connections.
func (l *Refunds) Close() { l.client.CloseIdleConnections() }

// Sent returns every refund asked for, by Idempotency-Key.
func (l *Refunds) Sent() map[string]SentRefund {
	l.mu.Lock()
	defer l.mu.Unlock()
	return copySent(l.sent)
}

// CreatedRefunds returns the refunds that were created (201), by refund id.
func (l *Refunds) CreatedRefunds() map[string]SentRefund {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[string]SentRefund{}
	for _, s := range l.sent {
		if s.Status == http.StatusCreated {
			out[s.RefundID] = *s
		}
	}
	return out
}

// Run sends rate refunds per second for d (open model), then waits for
// every request, retry and replay.
func (l *Refunds) Run(ctx context.Context, rate float64, d time.Duration) (*RefundStep, error) {
	if rate <= 0 || d <= 0 {
		return nil, fmt.Errorf("load: rate and duration must be positive")
	}
	start := time.Now()
	st := newKeyedStep(start.Add(d + l.opts.RetryFor))
	// The credited PIX are read beside the arrivals, never in their way.
	l.refresh(ctx)
	rctx, stopRefresh := context.WithCancel(ctx)
	refreshed := make(chan struct{})
	go func() {
		defer close(refreshed)
		t := time.NewTicker(l.opts.RefreshEvery)
		defer t.Stop()
		for {
			select {
			case <-rctx.Done():
				return
			case <-t.C:
				l.refresh(rctx)
			}
		}
	}()
	var wg sync.WaitGroup
	arrivals := openModel(ctx, start, rate, d, func(time.Time) {
		p, replay := l.arrival(st)
		if p == nil {
			st.skipped.Add(1)
			return
		}
		wg.Go(func() { l.deliver(ctx, st, p, replay) })
	})
	stopRefresh()
	<-refreshed
	wg.Wait()

	unanswered, refused, errors := st.tally(&l.mu, func(k string) int { return l.sent[k].Status })
	return &RefundStep{
		Arrivals: arrivals, Skipped: st.skipped.Load(), Requests: st.requests.Load(), Created: st.created.Load(),
		Refused: refused, Errors: errors, Resent: st.resent.Load(), Unanswered: unanswered,
		Replays: st.replays.Load(), ReplayMismatches: st.mismatches.Load(),
	}, ctx.Err()
}

// refresh reads the credited PIX again. A failed read keeps the last list.
func (l *Refunds) refresh(ctx context.Context) {
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	list, err := l.opts.Credited(rctx)
	if err != nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.credited = list
}

// arrival decides the next refund: nil while nothing is credited.
func (l *Refunds) arrival(st *keyedStep) (*SentRefund, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.credited) == 0 {
		return nil, false
	}
	var c Credited
	var amount int64
	if len(l.refunded) > 0 && l.rng.Float64() < l.opts.RepeatRatio {
		e2e := l.refunded[l.rng.IntN(len(l.refunded))]
		for _, x := range l.credited {
			if x.EndToEndID == e2e {
				c = x
				break
			}
		}
	}
	if c.EndToEndID != "" {
		// Around what is left of the credit, up to a quarter beyond it.
		left := max(c.AmountCents-l.asked[c.EndToEndID], 0)
		amount = 1 + l.rng.Int64N(max(left+left/4, c.AmountCents/4, 1))
	} else {
		c = l.credited[l.rng.IntN(len(l.credited))]
		amount = 1 + l.rng.Int64N(max(c.AmountCents/2, 1))
	}
	p := &SentRefund{IdempotencyKey: uuid.NewString(), EndToEndID: c.EndToEndID, AccountID: c.AccountID, AmountCents: amount}
	l.sent[p.IdempotencyKey] = p
	st.add(p.IdempotencyKey)
	return p, l.rng.Float64() < l.opts.ReplayRatio
}

type refundBody struct {
	AmountCents int64  `json:"amount_cents"`
	Reason      string `json:"reason,omitempty"`
}

// refundAnswer is what the load reads of an answer of POST
// /pix/credits/{end_to_end_id}/refunds.
type refundAnswer struct {
	ID          string `json:"id"`
	EndToEndID  string `json:"end_to_end_id"`
	AccountID   string `json:"account_id"`
	AmountCents int64  `json:"amount_cents"`
	Status      string `json:"status"`
	Error       struct {
		Code string `json:"code"`
	} `json:"error"`
}

func (a refundAnswer) answerID() string  { return a.ID }
func (a refundAnswer) errorCode() string { return a.Error.Code }

// deliver sends p as deliverKeyed does, and records its final answer in p.
func (l *Refunds) deliver(ctx context.Context, st *keyedStep, p *SentRefund, replay bool) {
	body, _ := json.Marshal(refundBody{p.AmountCents, l.opts.Reason})
	u := l.opts.APIURL + "/pix/credits/" + url.PathEscape(p.EndToEndID) + "/refunds"
	post := func(ctx context.Context, body []byte) (int, refundAnswer, bool, error) {
		return postKeyed[refundAnswer](ctx, l.client, u, p.IdempotencyKey, l.opts.Bearer, body)
	}
	deliverKeyed(ctx, st, body, replay, post, func(status int, answer refundAnswer) {
		l.mu.Lock()
		defer l.mu.Unlock()
		p.Status, p.Code = status, answer.Error.Code
		if status == http.StatusCreated {
			// What was asked stays as asked: the check compares it with
			// the books.
			p.RefundID, p.RefundStatus, p.CreatedAt = answer.ID, answer.Status, time.Now()
			if l.asked[p.EndToEndID] == 0 {
				l.refunded = append(l.refunded, p.EndToEndID)
			}
			l.asked[p.EndToEndID] += p.AmountCents
		}
	})
}
