package load

import (
	"bytes"
	"context"
	crand "crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/pixbank/pix/internal/webhooksig"
)

// Options shape a load session.
type Options struct {
	APIURL string
	// APIURLs, when set, replaces APIURL: the API replicas the webhooks are
	// spread over, one request (an attempt, a resend or a copy) to the next
	// in turn, as a round-robin load balancer in front of them would.
	APIURLs []string
	// RunID makes this session's end_to_end_ids and accounts its own: 10
	// letters or digits.
	RunID    string
	Accounts int
	// DupRatio is the share of arrivals that redeliver an earlier PIX.
	DupRatio float64
	// BurstRatio is the share of new PIX sent as BurstCopies simultaneous copies.
	BurstRatio  float64
	BurstCopies int
	// MaxInFlight caps the connections to the API; requests over it wait,
	// and their latency counts from their scheduled arrival.
	MaxInFlight int
	// RetryUnacked resends a PIX that got no 2xx, as a PSP does, until
	// RetryFor after the step ends.
	RetryUnacked bool
	RetryFor     time.Duration
	Seed         uint64
	// SigningKey signs every webhook (Standard Webhooks), as the PSP whose
	// secret it is; nil sends them unsigned.
	SigningKey []byte
}

// Sent is one PIX as the load sent it.
type Sent struct {
	EndToEndID  string
	AccountID   string
	AmountCents int64
}

// Step is what one rate step saw from the client side.
type Step struct {
	Arrivals int64
	Requests int64
	Acked    int64 // 2xx answers
	Firsts   int64 // 2xx answers with duplicate=false
	Elapsed  time.Duration
	Errors   map[string]int64 // by HTTP status or transport error, over all attempts
	Unacked  int              // PIX of this step never acknowledged
	// AckMicros: scheduled send → acknowledgement, per 2xx answer.
	AckMicros *hdrhistogram.Histogram
}

// AcceptedPerSecond is the acknowledged webhooks per second of the step.
func (s *Step) AcceptedPerSecond() float64 { return float64(s.Acked) / s.Elapsed.Seconds() }

// NewRunID returns a fresh 10-character run id.
func NewRunID() string {
	const alphabet = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"
	b := make([]byte, 10)
	_, _ = crand.Read(b)
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b)
}

// AccountID is the id of account n of a run.
func AccountID(runID string, n int) string { return fmt.Sprintf("load-%s-%05d", runID, n) }

// endToEndID is PIX n of a run: E + an ISPB + the run + the sequence.
func endToEndID(runID string, n int64) string { return fmt.Sprintf("E60701190%s%013d", runID, n) }

// EndToEndPrefix is the prefix every end_to_end_id of a run starts with.
func EndToEndPrefix(runID string) string { return "E60701190" + runID }

// Session sends the load of one run, in one or more rate steps that share
// its PIX (a later step redelivers earlier steps' PIX).
type Session struct {
	opts   Options
	client *http.Client
	apis   *roundRobin

	mu      sync.Mutex
	rng     *rand.Rand
	seq     int64
	pix     map[string]Sent
	order   []string
	ackedAt map[string]time.Time
}

// NewSession prepares a session; Close releases its connections.
func NewSession(opts Options) (*Session, error) {
	if opts.Accounts <= 0 {
		return nil, fmt.Errorf("load: accounts must be positive")
	}
	if len(opts.RunID) != 10 {
		return nil, fmt.Errorf("load: run id must be 10 characters, got %q", opts.RunID)
	}
	if opts.MaxInFlight <= 0 {
		opts.MaxInFlight = 512
	}
	opts.BurstCopies = max(opts.BurstCopies, 2)
	apis := opts.APIURLs
	if len(apis) == 0 {
		apis = []string{opts.APIURL}
	}
	return &Session{
		opts:    opts,
		client:  newClient(opts.MaxInFlight),
		apis:    newRoundRobin(apis),
		rng:     rand.New(rand.NewPCG(opts.Seed, opts.Seed^0x9e3779b97f4a7c15)),
		pix:     map[string]Sent{},
		ackedAt: map[string]time.Time{},
	}, nil
}

// Close releases the session's connections.
func (s *Session) Close() { s.client.CloseIdleConnections() }

// RunID is the session's run.
func (s *Session) RunID() string { return s.opts.RunID }

// AckedAt returns the first acknowledgement time of every acknowledged PIX.
func (s *Session) AckedAt() map[string]time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.ackedAt)
}

// Progress is how many distinct PIX the session has sent so far, and how
// many of them were acknowledged.
func (s *Session) Progress() (sent, acked int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.pix), len(s.ackedAt)
}

// Sent returns every PIX sent, by end_to_end_id.
func (s *Session) Sent() map[string]Sent {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.pix)
}

// stepState is the bookkeeping of one step.
type stepState struct {
	mu         sync.Mutex
	errors     map[string]int64
	hist       *hdrhistogram.Histogram
	created    []string
	retryUntil time.Time

	requests, acked, firsts atomic.Int64
}

// newStepState starts the bookkeeping of a step whose unacknowledged PIX are
// resent until retryUntil.
func newStepState(retryUntil time.Time) *stepState {
	return &stepState{errors: map[string]int64{}, hist: hdrhistogram.New(1, 60_000_000, 3), retryUntil: retryUntil}
}

// Run sends rate arrivals per second for d (open model: arrivals keep their
// schedule whatever the answers), then waits for every request and retry.
func (s *Session) Run(ctx context.Context, rate float64, d time.Duration) (*Step, error) {
	if rate <= 0 || d <= 0 {
		return nil, fmt.Errorf("load: rate and duration must be positive")
	}
	return s.run(ctx, rate, d, 0)
}

// RunN sends n arrivals at rate per second (open model, as Run), then waits
// for every request and retry: a load sized by its webhooks, not its time.
func (s *Session) RunN(ctx context.Context, rate float64, n int64) (*Step, error) {
	if rate <= 0 || n <= 0 {
		return nil, fmt.Errorf("load: rate and arrivals must be positive")
	}
	d := time.Duration(float64(n) / rate * float64(time.Second))
	return s.run(ctx, rate, d+time.Second, n)
}

// run sends rate arrivals per second for d, or until limit arrivals when
// limit > 0.
func (s *Session) run(ctx context.Context, rate float64, d time.Duration, limit int64) (*Step, error) {
	start := time.Now()
	st := newStepState(start.Add(d + s.opts.RetryFor))
	var wg sync.WaitGroup
	arrivals := openModelN(ctx, start, rate, d, limit, func(at time.Time) {
		for _, p := range s.arrival(st) {
			wg.Go(func() { s.deliver(ctx, st, p, at) })
		}
	})
	sent := time.Since(start)
	wg.Wait()

	s.mu.Lock()
	unacked := 0
	for _, id := range st.created {
		if _, ok := s.ackedAt[id]; !ok {
			unacked++
		}
	}
	s.mu.Unlock()
	return &Step{
		Arrivals: arrivals, Requests: st.requests.Load(), Acked: st.acked.Load(), Firsts: st.firsts.Load(),
		Elapsed: sent, Errors: st.errors, Unacked: unacked, AckMicros: st.hist,
	}, ctx.Err()
}

// openModel calls arrive at rate per second from start until d has passed
// or ctx ends, on schedule whatever arrive's work takes (the open model:
// arrive starts work, it does not wait for it), and returns how many
// arrivals it made. at is each arrival's scheduled time.
func openModel(ctx context.Context, start time.Time, rate float64, d time.Duration, arrive func(at time.Time)) int64 {
	return openModelN(ctx, start, rate, d, 0, arrive)
}

// openModelN is openModel that also stops after limit arrivals (limit > 0).
func openModelN(ctx context.Context, start time.Time, rate float64, d time.Duration, limit int64, arrive func(at time.Time)) int64 {
	interval := time.Duration(float64(time.Second) / rate)
	var arrivals int64
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		at := start.Add(time.Duration(arrivals) * interval)
		if at.Sub(start) >= d || (limit > 0 && arrivals >= limit) {
			return arrivals
		}
		if wait := time.Until(at); wait > 0 {
			timer.Reset(wait)
			select {
			case <-ctx.Done():
				return arrivals
			case <-timer.C:
			}
		}
		arrivals++
		arrive(at)
	}
}

// arrival decides what one arrival sends.
func (s *Session) arrival(st *stepState) []Sent {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.order) > 0 && s.rng.Float64() < s.opts.DupRatio {
		return []Sent{s.pix[s.order[s.rng.IntN(len(s.order))]]}
	}
	s.seq++
	p := Sent{
		EndToEndID:  endToEndID(s.opts.RunID, s.seq),
		AccountID:   AccountID(s.opts.RunID, s.rng.IntN(s.opts.Accounts)),
		AmountCents: 1 + s.rng.Int64N(100_000),
	}
	s.pix[p.EndToEndID] = p
	s.order = append(s.order, p.EndToEndID)
	st.created = append(st.created, p.EndToEndID)
	n := 1
	if s.rng.Float64() < s.opts.BurstRatio {
		n = s.opts.BurstCopies
	}
	out := make([]Sent, n)
	for i := range out {
		out[i] = p
	}
	return out
}

type webhookBody struct {
	EndToEndID  string `json:"end_to_end_id"`
	AccountID   string `json:"account_id"`
	AmountCents int64  `json:"amount_cents"`
	OccurredAt  string `json:"occurred_at"`
}

// deliver posts p until it is acknowledged (or retrying is off or over).
func (s *Session) deliver(ctx context.Context, st *stepState, p Sent, scheduled time.Time) {
	body, _ := json.Marshal(webhookBody{p.EndToEndID, p.AccountID, p.AmountCents, scheduled.UTC().Format(time.RFC3339)})
	backoff := 100 * time.Millisecond
	sentAt := scheduled
	for {
		status, first, err := s.post(ctx, p.EndToEndID, body)
		st.requests.Add(1)
		now := time.Now()
		if err == nil && status/100 == 2 {
			st.acked.Add(1)
			if first {
				st.firsts.Add(1)
			}
			st.mu.Lock()
			_ = st.hist.RecordValue(max(now.Sub(sentAt).Microseconds(), 1))
			st.mu.Unlock()
			s.mu.Lock()
			if _, ok := s.ackedAt[p.EndToEndID]; !ok {
				s.ackedAt[p.EndToEndID] = now
			}
			s.mu.Unlock()
			return
		}
		st.mu.Lock()
		st.errors[failureKey(status, err)]++
		st.mu.Unlock()
		// A 4xx is our request's fault: resending it can't help.
		if !s.opts.RetryUnacked || status/100 == 4 || ctx.Err() != nil || now.After(st.retryUntil) || !backoffWait(ctx, &backoff) {
			return
		}
		sentAt = time.Now()
	}
}

func (s *Session) post(ctx context.Context, endToEndID string, body []byte) (status int, first bool, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.apis.next()+"/webhooks/pix", bytes.NewReader(body))
	if err != nil {
		return 0, false, err
	}
	req.Header.Set("Content-Type", "application/json")
	if s.opts.SigningKey != nil {
		// A PSP keeps the message id across redeliveries and signs each
		// anew, with the time of sending.
		webhooksig.SetHeaders(req.Header, "msg_"+endToEndID, time.Now(), body, s.opts.SigningKey)
	}
	res, err := s.client.Do(req)
	if err != nil {
		return 0, false, err
	}
	defer res.Body.Close()
	var answer struct {
		Duplicate bool `json:"duplicate"`
	}
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		return res.StatusCode, false, err
	}
	if res.StatusCode/100 == 2 {
		if err := json.Unmarshal(raw, &answer); err != nil {
			return res.StatusCode, false, fmt.Errorf("decode answer: %w", err)
		}
	}
	return res.StatusCode, !answer.Duplicate, nil
}

// errorClass shortens a transport error for counting.
func errorClass(err error) string {
	s := err.Error()
	for _, known := range []string{"connection refused", "connection reset", "timeout", "EOF", "broken pipe"} {
		if strings.Contains(s, known) {
			return known
		}
	}
	if len(s) > 60 {
		s = s[:60]
	}
	return s
}

// Burst is what Send saw.
type Burst struct {
	EndToEndID string
	Requests   int64
	Acked      int64
	Firsts     int64
	Errors     map[string]int64
}

// Send sends one new PIX to account n of the run, as copies simultaneous
// requests (released together), each resent until acknowledged when the
// session retries.
func (s *Session) Send(ctx context.Context, account, copies int) Burst {
	s.mu.Lock()
	s.seq++
	p := Sent{EndToEndID: endToEndID(s.opts.RunID, s.seq), AccountID: AccountID(s.opts.RunID, account), AmountCents: 1 + s.rng.Int64N(100_000)}
	s.pix[p.EndToEndID] = p
	s.order = append(s.order, p.EndToEndID)
	s.mu.Unlock()

	st := newStepState(time.Now().Add(s.opts.RetryFor))
	release := make(chan struct{})
	var wg sync.WaitGroup
	for range copies {
		wg.Go(func() {
			<-release
			s.deliver(ctx, st, p, time.Now())
		})
	}
	close(release)
	wg.Wait()
	return Burst{EndToEndID: p.EndToEndID, Requests: st.requests.Load(), Acked: st.acked.Load(), Firsts: st.firsts.Load(), Errors: st.errors}
}

// roundRobin hands out its URLs in turn, safe for concurrent use.
type roundRobin struct {
	urls []string
	n    atomic.Uint64
}

func newRoundRobin(urls []string) *roundRobin { return &roundRobin{urls: urls} }

// next is the URL whose turn it is.
func (r *roundRobin) next() string {
	return r.urls[(r.n.Add(1)-1)%uint64(len(r.urls))]
}
