package dict

import (
	"context"
	"encoding/xml"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"time"
	"unicode/utf8"
)

// RefundQuery is a list of refund requests' filters (GET /refunds/): the
// bank's ISPB is always its Participant.
type RefundQuery struct {
	// Role is the bank's role (ParticipantRole, required by the
	// specification): "" is RoleContested, the bank's in MED.
	Role RefundRequestRole
	// Status keeps only the requests of these statuses; none: all.
	Status []RefundStatus
	// ModifiedAfter, ModifiedBefore, Limit, IncludeDetails and
	// IncludeIndirectParticipants are as in ReportQuery.
	ModifiedAfter, ModifiedBefore time.Time
	Limit                         int
	IncludeDetails                bool
	IncludeIndirectParticipants   bool
	// Malformed is as in ReportQuery: each refund request of a verified
	// page that is not the specification's, in its place in the list;
	// Paging is as in ReportQuery: asked before each page of a walk.
	Malformed func(MalformedItem) error
	Paging    func() error
}

// RefundPage is one page of a list of refund requests, by LastModified
// ascending.
type RefundPage struct {
	Refunds []Refund
	// Malformed are the page's refund requests that are not the
	// specification's, the others read (Refunds).
	Malformed       []MalformedItem
	HasMoreElements bool
	ResponseTime    time.Time
}

type refundAnswer struct {
	ResponseTime  time.Time `xml:"ResponseTime"`
	CorrelationID string    `xml:"CorrelationId"`
	Refund        *rawItem  `xml:"Refund"`
}

type refundList struct {
	ResponseTime    time.Time `xml:"ResponseTime"`
	HasMoreElements *bool     `xml:"HasMoreElements"`
	Refunds         []rawItem `xml:"Refunds>Refund"`
}

// ListRefunds reads one page of the refund requests the bank is party to
// in q.Role (GET /refunds/, listRefund). The lists lag the writes by up to
// 5 seconds. A request of the page that is not the specification's is in
// Malformed, the others read.
func (c *HTTPClient) ListRefunds(ctx context.Context, q RefundQuery) (RefundPage, error) {
	items, p, err := c.listRefunds(ctx, q)
	p.Refunds, p.Malformed = split(items)
	return p, err
}

// listRefunds reads one page, its requests each decoded on its own, in the
// page's order.
func (c *HTTPClient) listRefunds(ctx context.Context, q RefundQuery) ([]listed[Refund], RefundPage, error) {
	if q.Role == "" {
		q.Role = RoleContested
	}
	if q.Role != RoleContested && q.Role != RoleRequesting {
		return nil, RefundPage{}, fmt.Errorf("dict listRefund: %w: ParticipantRole %q", ErrNotSent, q.Role)
	}
	v := url.Values{"Participant": {c.participant}, "ParticipantRole": {string(q.Role)}}
	for _, s := range q.Status {
		if !slices.Contains([]RefundStatus{RefundOpen, RefundClosed, RefundCancelled}, s) {
			return nil, RefundPage{}, fmt.Errorf("dict listRefund: %w: status %q", ErrNotSent, s)
		}
		v.Add("Status", string(s))
	}
	if err := listCommon(v, q.ModifiedAfter, q.ModifiedBefore, q.Limit, q.IncludeDetails, q.IncludeIndirectParticipants); err != nil {
		return nil, RefundPage{}, fmt.Errorf("dict listRefund: %w", err)
	}
	var a refundList
	err := c.do(ctx, exchange{
		op: "listRefund", policy: policyRefundListWithRole, base: c.base,
		method: http.MethodGet, path: "/refunds/", query: v,
		answer: "ListRefundsResponse",
	}, &a)
	if err != nil {
		return nil, RefundPage{}, err
	}
	if a.HasMoreElements == nil {
		return nil, RefundPage{}, fmt.Errorf("dict listRefund: %w: no HasMoreElements", ErrUnknownOutcome)
	}
	items := decodeItems[Refund]("listRefund", refundSpec, a.Refunds, q.ModifiedAfter)
	return items, RefundPage{HasMoreElements: *a.HasMoreElements, ResponseTime: a.ResponseTime}, nil
}

// WalkRefunds is WalkInfractionReports for refund requests.
func (c *HTTPClient) WalkRefunds(ctx context.Context, q RefundQuery, fn func(Refund) error) (time.Time, error) {
	if q.Limit == 0 {
		q.Limit = MaxLimit
	}
	statuses := q.Status
	if len(statuses) == 0 {
		statuses = []RefundStatus{RefundOpen, RefundClosed, RefundCancelled}
	}
	return walk(q.ModifiedAfter, listing[Refund]{
		page: func(after time.Time) ([]listed[Refund], bool, error) {
			if err := paging(q.Paging); err != nil {
				return nil, false, err
			}
			q.ModifiedAfter = after
			items, p, err := c.listRefunds(ctx, q)
			return items, p.HasMoreElements, err
		},
		instant: func(at time.Time, status string) ([]listed[Refund], bool, error) {
			if err := paging(q.Paging); err != nil {
				return nil, false, err
			}
			one := q
			one.ModifiedAfter, one.ModifiedBefore, one.Status, one.Limit = at, at, []RefundStatus{RefundStatus(status)}, MaxLimit
			items, p, err := c.listRefunds(ctx, one)
			return items, p.HasMoreElements, err
		},
		statuses:  names(statuses),
		before:    q.ModifiedBefore,
		key:       func(r Refund) (string, time.Time) { return r.ID, r.LastModified },
		malformed: q.Malformed,
	}, fn)
}

// GetRefund reads one refund request (GET /refunds/{RefundId},
// getRefund): what a caller reads back after a lost answer.
func (c *HTTPClient) GetRefund(ctx context.Context, id string) (Refund, error) {
	return c.refundCall(ctx, "getRefund", policyRefundsRead, id, http.MethodGet, "", nil, "GetRefundResponse")
}

// RefundClosing is the analysis that closes a refund request.
type RefundClosing struct {
	// Result is RefundAnalysisResult.
	Result RefundAnalysisResult
	// Details is RefundAnalysisDetails, at most 2,000 characters; sent as
	// NormalizeDetails(Details).
	Details string
	// RejectionReason is RefundRejectionReason, for REJECTED only.
	RejectionReason RefundRejectionReason
	// RefundTransactionID is the devolução's EndToEndId (32 characters):
	// required by this client with TOTALLY_ACCEPTED and PARTIALLY_ACCEPTED
	// (the money is returned before the request is closed), refused with
	// REJECTED.
	RefundTransactionID string
}

var transactionIDPattern = regexp.MustCompile(`^\w{32}$`)

func (r RefundClosing) check() error {
	switch {
	case !r.Result.Valid():
		return fmt.Errorf("RefundAnalysisResult %q", r.Result)
	case utf8.RuneCountInString(r.Details) > maxDetails:
		return fmt.Errorf("RefundAnalysisDetails longer than %d characters", maxDetails)
	case r.Result == Rejected && r.RefundTransactionID != "":
		return fmt.Errorf("a RefundTransactionId with %s", Rejected)
	case r.Result != Rejected && !transactionIDPattern.MatchString(r.RefundTransactionID):
		return fmt.Errorf("RefundTransactionId %q: want the devolução's 32-character EndToEndId", r.RefundTransactionID)
	case r.RejectionReason != "" && (r.Result != Rejected || !r.RejectionReason.Valid()):
		return fmt.Errorf("RefundRejectionReason %q with %s", r.RejectionReason, r.Result)
	}
	return nil
}

type closeRefundRequest struct {
	XMLName               xml.Name              `xml:"CloseRefundRequest"`
	RefundID              string                `xml:"RefundId"`
	Participant           string                `xml:"Participant"`
	RefundAnalysisResult  RefundAnalysisResult  `xml:"RefundAnalysisResult"`
	RefundAnalysisDetails string                `xml:"RefundAnalysisDetails,omitempty"`
	RefundRejectionReason RefundRejectionReason `xml:"RefundRejectionReason,omitempty"`
	RefundTransactionID   string                `xml:"RefundTransactionId,omitempty"`
}

// CloseRefund closes an open refund request with the bank's analysis
// (POST /refunds/{RefundId}/close, closeRefund), signed. Sent again with
// the same closing, the DICT answers as the first time; otherwise
// RefundOperationInvalid: read the request back.
func (c *HTTPClient) CloseRefund(ctx context.Context, id string, r RefundClosing) (Refund, error) {
	r.Details = NormalizeDetails(r.Details)
	if err := r.check(); err != nil {
		return Refund{}, fmt.Errorf("dict closeRefund %s: %w: %w", id, ErrNotSent, err)
	}
	return c.refundCall(ctx, "closeRefund", policyRefundsWrite, id, http.MethodPost, "/close", closeRefundRequest{
		RefundID: id, Participant: c.participant,
		RefundAnalysisResult: r.Result, RefundAnalysisDetails: r.Details,
		RefundRejectionReason: r.RejectionReason, RefundTransactionID: r.RefundTransactionID,
	}, "CloseRefundResponse")
}

// refundCall is a call about one refund request, whose answer must be
// about it.
func (c *HTTPClient) refundCall(ctx context.Context, op string, pol policy, id, method, suffix string, body any, answer string) (Refund, error) {
	if err := checkID(id); err != nil {
		return Refund{}, fmt.Errorf("dict %s: %w", op, err)
	}
	var a refundAnswer
	err := c.do(ctx, exchange{
		op: op, policy: pol, base: c.base, method: method,
		path: "/refunds/" + id + suffix, requester: body == nil,
		body: body, answer: answer,
	}, &a)
	if err != nil {
		return Refund{}, err
	}
	if a.Refund == nil {
		return Refund{}, fmt.Errorf("dict %s %s: %w: the answer has no refund request", op, id, ErrUnknownOutcome)
	}
	ref, err := decodeAnswer[Refund](op, refundSpec, *a.Refund)
	if err != nil {
		return Refund{}, err
	}
	if !SameID(ref.ID, id) {
		return Refund{}, fmt.Errorf("dict %s %s: %w: the answer is about another refund request", op, id, ErrUnknownOutcome)
	}
	return ref, nil
}
