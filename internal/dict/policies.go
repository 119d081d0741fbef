package dict

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"time"
)

// policy is a rate-limit policy of the specification's table ("Limitação
// de requisições"): the participant's token bucket an operation draws
// from, its refill rate and its size. Every call but a 500 takes a token;
// an empty bucket answers 429 RateLimited.
type policy struct {
	name            string
	refillPerMinute int
	bucketSize      int
}

// refillInterval is how long the bucket takes to get one token back: the
// wait a 429 without Retry-After implies.
func (p policy) refillInterval() time.Duration {
	return time.Minute / time.Duration(p.refillPerMinute)
}

// The policies of the operations this client calls. The lists draw from
// the WITH_ROLE bucket when they filter by the participant's role
// (IsCredited or IsDebited; a refund list always does, ParticipantRole
// being required), from the WITHOUT_ROLE one otherwise.
var (
	policyReportsRead            = policy{PolicyInfractionReportsRead, 600, 18000}
	policyReportsWrite           = policy{PolicyInfractionReportsWrite, 1200, 36000}
	policyReportsListWithRole    = policy{PolicyInfractionReportsListWithRole, 40, 200}
	policyReportsListWithoutRole = policy{"INFRACTION_REPORTS_LIST_WITHOUT_ROLE", 10, 50}
	policyRefundsRead            = policy{PolicyRefundsRead, 1200, 36000}
	policyRefundsWrite           = policy{PolicyRefundsWrite, 2400, 72000}
	policyRefundListWithRole     = policy{PolicyRefundListWithRole, 40, 200}
	policyRefundListWithoutRole  = policy{"REFUND_LIST_WITHOUT_ROLE", 10, 50}
	policyPoliciesRead           = policy{"POLICIES_READ", 60, 200}
	policyPoliciesList           = policy{"POLICIES_LIST", 6, 20}
)

// allPolicies are the policies above, for the test that holds them to the
// facts document.
var allPolicies = []policy{
	policyReportsRead, policyReportsWrite, policyReportsListWithRole, policyReportsListWithoutRole,
	policyRefundsRead, policyRefundsWrite, policyRefundListWithRole, policyRefundListWithoutRole,
	policyPoliciesRead, policyPoliciesList,
}

// RefillInterval is how long the bucket of the named policy takes to get
// one token back by the specification's table (1.5 s for a list by role);
// 0 for a policy the table of this client does not hold.
func RefillInterval(name string) time.Duration {
	for _, p := range allPolicies {
		if p.name == name {
			return p.refillInterval()
		}
	}
	return 0
}

// The policies whose buckets the MED calls draw from: what a caller reads
// with Bucket before a burst (a catch-up after an outage) to pace itself.
const (
	PolicyInfractionReportsRead         = "INFRACTION_REPORTS_READ"
	PolicyInfractionReportsWrite        = "INFRACTION_REPORTS_WRITE"
	PolicyInfractionReportsListWithRole = "INFRACTION_REPORTS_LIST_WITH_ROLE"
	PolicyRefundsRead                   = "REFUNDS_READ"
	PolicyRefundsWrite                  = "REFUNDS_WRITE"
	PolicyRefundListWithRole            = "REFUND_LIST_WITH_ROLE"
)

type listPoliciesResponse struct {
	Category string   `xml:"Category"`
	Policies []Bucket `xml:"Policies>Policy"`
}

type getPolicyResponse struct {
	Category string  `xml:"Category"`
	Policy   *Bucket `xml:"Policy"`
}

// Buckets reads the state of every bucket of the bank (GET /policies/,
// bucketStates, on the policies' base) and its category.
func (c *HTTPClient) Buckets(ctx context.Context) (Buckets, error) {
	var a listPoliciesResponse
	err := c.do(ctx, exchange{
		op: "bucketStates", policy: policyPoliciesList, base: c.policiesBase,
		method: http.MethodGet, path: "/policies/", requester: true,
		answer: "ListPoliciesResponse", timeOptional: true,
	}, &a)
	if err != nil {
		return Buckets{}, err
	}
	return Buckets{Category: a.Category, Buckets: a.Policies}, nil
}

// Bucket reads the state of the bank's bucket of one policy (GET
// /policies/{policy}, getPolicy, on the policies' base).
func (c *HTTPClient) Bucket(ctx context.Context, name string) (Bucket, error) {
	if name == "" {
		return Bucket{}, fmt.Errorf("dict getPolicy: %w: no policy name", ErrNotSent)
	}
	var a getPolicyResponse
	err := c.do(ctx, exchange{
		op: "getPolicy", policy: policyPoliciesRead, base: c.policiesBase,
		method: http.MethodGet, path: "/policies/" + url.PathEscape(name), requester: true,
		answer: "GetPolicyResponse", timeOptional: true,
	}, &a)
	if err != nil {
		return Bucket{}, err
	}
	if a.Policy == nil || a.Policy.Name != name {
		return Bucket{}, fmt.Errorf("dict getPolicy %s: %w: the answer is about another policy", name, ErrUnknownOutcome)
	}
	return *a.Policy, nil
}
