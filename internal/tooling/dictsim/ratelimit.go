package dictsim

import (
	"maps"
	"math"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/beevik/etree"

	"github.com/pixbank/pix/internal/dict"
)

// The rate limits ("Limitação de requisições"): one token bucket per
// participant and policy, which refills continuously at its policy's rate
// by the simulated clock and holds at most its size; each request takes a
// token, and one that finds the bucket empty is 429 RateLimited, not
// processed. (The specification spares a 500 its token; the simulator
// answers 500 only when it is told to, SetOutage, and takes none then.)

type bucketKey struct{ participant, policy string }

type bucket struct {
	tokens float64
	// at is when tokens was counted; the bucket refills from then on (a
	// storm sets it to the storm's end).
	at time.Time
}

// policyOf is the policy x draws from: a list by role (IsCredited or
// IsDebited; a refunds' list always is, ParticipantRole being required)
// from the WITH_ROLE bucket, one without from the WITHOUT_ROLE one; the
// other operations from their one policy.
func policyOf(x *Exchange) string {
	switch x.Op {
	case "listInfractionReport":
		q := x.Request.URL.Query()
		if q.Get("IsCredited") == "true" || q.Get("IsDebited") == "true" {
			return dict.PolicyInfractionReportsListWithRole
		}
		return "INFRACTION_REPORTS_LIST_WITHOUT_ROLE"
	case "listRefund":
		return dict.PolicyRefundListWithRole
	}
	return x.op.Policies[0]
}

// bucketOf is participant's bucket of policy, refilled up to now. The
// caller holds s.mu.
func (s *Simulator) bucketOf(participant, policy string, now time.Time) (*bucket, Limit) {
	l := s.limits[policy]
	k := bucketKey{participant, policy}
	b, ok := s.buckets[k]
	if !ok {
		b = &bucket{tokens: float64(l.BucketSize), at: now}
		if now.Before(s.faults.stormUntil) {
			b.tokens, b.at = 0, s.faults.stormUntil
		}
		s.buckets[k] = b
	}
	if now.After(b.at) {
		refill := now.Sub(b.at).Minutes() * float64(l.RefillPerMinute)
		b.tokens, b.at = math.Min(float64(l.BucketSize), b.tokens+refill), now
	}
	return b, l
}

// take takes a token of x's bucket; limited: the bucket is empty, and a
// is the 429.
func (s *Simulator) take(x *Exchange, now time.Time) (a Answer, limited bool) {
	b, _ := s.bucketOf(x.Participant, policyOf(x), now)
	if b.tokens < 1 {
		return problem(http.StatusTooManyRequests, dict.ErrRateLimited, "the bucket of "+policyOf(x)+" is empty"), true
	}
	b.tokens--
	return Answer{}, false
}

// policyElement writes participant's bucket of policy as a Policy.
func (s *Simulator) policyElement(parent *etree.Element, participant, policy string, now time.Time) {
	b, l := s.bucketOf(participant, policy, now)
	e := parent.CreateElement("Policy")
	e.CreateElement("AvailableTokens").SetText(strconv.Itoa(int(b.tokens)))
	e.CreateElement("Capacity").SetText(strconv.Itoa(l.BucketSize))
	e.CreateElement("RefillTokens").SetText(strconv.Itoa(l.RefillPerMinute))
	e.CreateElement("RefillPeriodSec").SetText("60")
	e.CreateElement("Name").SetText(policy)
}

func (s *Simulator) listBuckets(x *Exchange, now time.Time) Answer {
	root := answerRoot("ListPoliciesResponse")
	root.CreateElement("Category").SetText(s.category)
	wrap := root.CreateElement("Policies")
	for _, name := range slices.Sorted(maps.Keys(s.limits)) {
		s.policyElement(wrap, x.Participant, name, now)
	}
	return Answer{Status: http.StatusOK, Body: root}
}

func (s *Simulator) getBucket(x *Exchange, now time.Time) Answer {
	name := x.params["policy"]
	if _, ok := s.limits[name]; !ok {
		a := problem(http.StatusNotFound, dict.ErrNotFound, "no policy "+name)
		// The document gives getPolicy no 404; a name that is no policy is
		// answered as the rest of the API answers what it does not hold.
		a.Unchecked = true
		return a
	}
	root := answerRoot("GetPolicyResponse")
	root.CreateElement("Category").SetText(s.category)
	s.policyElement(root, x.Participant, name, now)
	return Answer{Status: http.StatusOK, Body: root}
}
