package dictsim

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/pixbank/pix/internal/dict"
)

// The faults the tests of a DICT client need: the answers of the next
// writes lost, a storm that empties every bucket for a while, the DICT
// down for a while. Each is set by a method here or a control route
// (ControlHandler); their durations are on the simulated clock, so
// Advance ends them.

type faults struct {
	// lose is how many of the next writes lose their answer, and how.
	lose    int
	loseHow Loss
	// stormUntil ends RateLimitStorm's storm.
	stormUntil time.Time
	// outageUntil ends SetOutage's outage (zero: none), answered with
	// outageStatus.
	outageUntil  time.Time
	outageStatus int
}

// LoseAnswers loses the answers of the next n writes (acknowledge,
// close, closeRefund) the simulator processes (not those an outage or an
// empty bucket turns away, nor those an answer hook answers without the
// model): each is done as asked (or refused, as it would be), and its
// answer never reaches the client, how says in which way (LossCut,
// LossGatewayTimeout). A client reads back before it sends again (dict's
// doc.go, "Lost answers"). 0 stops losing them.
func (s *Simulator) LoseAnswers(n int, how Loss) error {
	if n < 0 || n > 0 && !how.valid() {
		return fmt.Errorf("%w: lose %d answers %q: want a count and %s or %s", ErrInvalid, n, how, LossCut, LossGatewayTimeout)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults.lose, s.faults.loseHow = n, how
	return nil
}

// RateLimitStorm empties every bucket of every participant for d from now
// (by the simulated clock): every request is 429 RateLimited until then,
// and the buckets refill from empty afterwards, at their policies' rates.
func (s *Simulator) RateLimitStorm(d time.Duration) error {
	if d <= 0 {
		return fmt.Errorf("%w: a storm's duration must be positive", ErrInvalid)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults.stormUntil = s.now().Add(d)
	for _, b := range s.buckets {
		b.tokens, b.at = 0, s.faults.stormUntil
	}
	return nil
}

// EndRateLimitStorm ends a storm now: the buckets refill from now on.
func (s *Simulator) EndRateLimitStorm() {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	for _, b := range s.buckets {
		if b.at.After(now) {
			b.at = now
		}
	}
	s.faults.stormUntil = time.Time{}
}

// Outage is the DICT down.
type Outage struct {
	// For is how long, from now by the simulated clock.
	For time.Duration
	// Status is what every request is answered: 503 ServiceUnavailable,
	// with Retry-After, the seconds left (0 is 503); or 500
	// InternalServerError.
	Status int
}

// SetOutage takes the DICT down as o says: every admitted request is
// answered o.Status, and nothing is done.
func (s *Simulator) SetOutage(o Outage) error {
	if o.Status == 0 {
		o.Status = http.StatusServiceUnavailable
	}
	switch {
	case o.For <= 0:
		return fmt.Errorf("%w: an outage's duration must be positive", ErrInvalid)
	case o.Status != http.StatusServiceUnavailable && o.Status != http.StatusInternalServerError:
		return fmt.Errorf("%w: an outage answers 503 or 500, not %d", ErrInvalid, o.Status)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults.outageUntil, s.faults.outageStatus = s.now().Add(o.For), o.Status
	return nil
}

// EndOutage brings the DICT back now.
func (s *Simulator) EndOutage() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults.outageUntil = time.Time{}
}

// outage is the answer of the DICT down at now; down false: it is up. The
// caller holds s.mu.
func (s *Simulator) outage(now time.Time) (Answer, bool) {
	if !now.Before(s.faults.outageUntil) {
		return Answer{}, false
	}
	if s.faults.outageStatus == http.StatusInternalServerError {
		return problem(http.StatusInternalServerError, dict.ErrInternalServerError, "the DICT is down (simulated)"), true
	}
	a := problem(http.StatusServiceUnavailable, dict.ErrServiceUnavailable, "the DICT is down (simulated)")
	left := max(int(s.faults.outageUntil.Sub(now).Round(time.Second)/time.Second), 1)
	a.Header = http.Header{"Retry-After": {strconv.Itoa(left)}}
	return a, true
}

// FaultsView is the faults in force (GET /sim/faults).
type FaultsView struct {
	// LoseAnswers is how many of the next writes lose their answer, and
	// how.
	LoseAnswers int  `json:"lose_answers"`
	LoseHow     Loss `json:"lose_how,omitempty"`
	// RateLimitStormUntil ends the storm in force; nil: none.
	RateLimitStormUntil *time.Time `json:"rate_limit_storm_until"`
	// OutageUntil ends the outage in force, answered OutageStatus; nil:
	// none.
	OutageUntil  *time.Time `json:"outage_until"`
	OutageStatus int        `json:"outage_status,omitempty"`
}

// Faults are the faults in force now.
func (s *Simulator) Faults() FaultsView {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	v := FaultsView{LoseAnswers: s.faults.lose}
	if v.LoseAnswers > 0 {
		v.LoseHow = s.faults.loseHow
	}
	if until := s.faults.stormUntil; now.Before(until) {
		v.RateLimitStormUntil = &until
	}
	if until := s.faults.outageUntil; now.Before(until) {
		v.OutageUntil, v.OutageStatus = &until, s.faults.outageStatus
	}
	return v
}
