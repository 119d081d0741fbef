package dict

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// InfractionReportStatus is where an infraction report stands in the DICT.
type InfractionReportStatus string

// The statuses of an infraction report (InfractionReportStatus).
const (
	ReportOpen         InfractionReportStatus = "OPEN"         // created, not yet acknowledged by the other party
	ReportAcknowledged InfractionReportStatus = "ACKNOWLEDGED" // received by the other party; may be closed
	ReportClosed       InfractionReportStatus = "CLOSED"       // analysed: AnalysisResult says how
	ReportCancelled    InfractionReportStatus = "CANCELLED"    // cancelled by its creator (even after its close)
)

// AnalysisResult is the outcome of an infraction report's analysis.
type AnalysisResult string

// The results of an infraction report's analysis (AnalysisResult).
const (
	Agreed    AnalysisResult = "AGREED"
	Disagreed AnalysisResult = "DISAGREED"
)

// Valid reports whether r is one of the specification's results.
func (r AnalysisResult) Valid() bool { return r == Agreed || r == Disagreed }

// InfractionType is the kind of infraction reported (InfractionType).
type InfractionType string

// The infraction types of the specification.
const (
	InfractionFraud           InfractionType = "FRAUD"
	InfractionRefundRequest   InfractionType = "REFUND_REQUEST"
	InfractionRefundCancelled InfractionType = "REFUND_CANCELLED"
)

// ReportedBy says which party of the transaction created the report.
type ReportedBy string

// The parties that report (ReportedBy).
const (
	ReportedByDebited  ReportedBy = "DEBITED_PARTICIPANT"
	ReportedByCredited ReportedBy = "CREDITED_PARTICIPANT"
)

// InfractionReport is the DICT's infraction report (the specification's
// ExtendedInfractionReport; InfractionData, the transaction's details, is
// not read). Enumerations are kept as sent: the specification may add
// values, and a caller that meets one it does not know must not guess.
type InfractionReport struct {
	ID                  string                 `xml:"Id"`
	TransactionID       string                 `xml:"TransactionId"` // the PIX's EndToEndId
	TransactionType     string                 `xml:"TransactionType"`
	TransactionResult   string                 `xml:"TransactionResult"`
	InfractionType      InfractionType         `xml:"InfractionType"`
	ReportedBy          ReportedBy             `xml:"ReportedBy"`
	ReportDetails       string                 `xml:"ReportDetails"`
	Status              InfractionReportStatus `xml:"Status"`
	DebitedParticipant  string                 `xml:"DebitedParticipant"`
	CreditedParticipant string                 `xml:"CreditedParticipant"`
	CreationTime        time.Time              `xml:"CreationTime"`
	LastModified        time.Time              `xml:"LastModified"`
	AnalysisResult      AnalysisResult         `xml:"AnalysisResult"`
	AnalysisDetails     string                 `xml:"AnalysisDetails"`
}

// RefundStatus is where a refund request stands in the DICT.
type RefundStatus string

// The statuses of a refund request (RefundStatus).
const (
	RefundOpen      RefundStatus = "OPEN"      // requested by the payer's participant; to be closed by us
	RefundClosed    RefundStatus = "CLOSED"    // analysed: AnalysisResult says how
	RefundCancelled RefundStatus = "CANCELLED" // cancelled by the requester before its close
)

// RefundAnalysisResult is the outcome of a refund request's analysis by
// the contested participant.
type RefundAnalysisResult string

// The results of a refund request's analysis (RefundAnalysisResult).
const (
	TotallyAccepted   RefundAnalysisResult = "TOTALLY_ACCEPTED"
	PartiallyAccepted RefundAnalysisResult = "PARTIALLY_ACCEPTED"
	Rejected          RefundAnalysisResult = "REJECTED"
)

// Valid reports whether r is one of the specification's results.
func (r RefundAnalysisResult) Valid() bool {
	return r == TotallyAccepted || r == PartiallyAccepted || r == Rejected
}

// RefundReason is why the refund was requested (RefundReason).
type RefundReason string

// The refund reasons of the specification.
const (
	RefundFraud           RefundReason = "FRAUD"
	RefundOperationalFlaw RefundReason = "OPERATIONAL_FLAW"
	RefundReasonCancelled RefundReason = "REFUND_CANCELLED"
)

// RefundRejectionReason is why a refund request was rejected
// (RefundRejectionReason).
type RefundRejectionReason string

// The rejection reasons of the specification.
const (
	RejectionNoBalance      RefundRejectionReason = "NO_BALANCE"
	RejectionAccountClosure RefundRejectionReason = "ACCOUNT_CLOSURE"
	RejectionCannotRefund   RefundRejectionReason = "CANNOT_REFUND"
	RejectionOther          RefundRejectionReason = "OTHER"
)

// Valid reports whether r is one of the specification's reasons.
func (r RefundRejectionReason) Valid() bool {
	switch r {
	case RejectionNoBalance, RejectionAccountClosure, RejectionCannotRefund, RejectionOther:
		return true
	}
	return false
}

// RefundRequestRole is the participant's role in a refund request
// (RefundRequestRole): the list's ParticipantRole.
type RefundRequestRole string

// The roles of a refund request.
const (
	RoleRequesting RefundRequestRole = "REQUESTING" // the payer's participant
	RoleContested  RefundRequestRole = "CONTESTED"  // the credited participant: the bank in MED
)

// Refund is the DICT's refund request (the specification's ExtendedRefund).
// AnalysisResult and AnalysisDetails are the answer's names of what the
// close request calls RefundAnalysisResult and RefundAnalysisDetails.
type Refund struct {
	ID                    string                `xml:"Id"`
	TransactionID         string                `xml:"TransactionId"` // the PIX's EndToEndId
	RefundReason          RefundReason          `xml:"RefundReason"`
	RefundAmount          Amount                `xml:"RefundAmount"`
	RefundDetails         string                `xml:"RefundDetails"`
	Status                RefundStatus          `xml:"Status"`
	RequestingParticipant string                `xml:"RequestingParticipant"`
	ContestedParticipant  string                `xml:"ContestedParticipant"`
	CreationTime          time.Time             `xml:"CreationTime"`
	LastModified          time.Time             `xml:"LastModified"`
	InfractionReportID    string                `xml:"InfractionReportId"`
	AnalysisResult        RefundAnalysisResult  `xml:"AnalysisResult"`
	AnalysisDetails       string                `xml:"AnalysisDetails"`
	RefundRejectionReason RefundRejectionReason `xml:"RefundRejectionReason"`
	// RefundTransactionID is the devolução's EndToEndId (D...).
	RefundTransactionID string `xml:"RefundTransactionId"`
}

// Amount is a value in centavos: the specification's RefundAmount, a
// decimal number of reais ("200.00"), read exactly, never through a float.
type Amount int64

// UnmarshalText reads a decimal of reais with at most two decimals.
func (a *Amount) UnmarshalText(b []byte) error {
	s := strings.TrimSpace(string(b))
	whole, frac, _ := strings.Cut(s, ".")
	if whole == "" || len(frac) > 2 || strings.HasPrefix(whole, "-") || strings.HasPrefix(whole, "+") {
		return fmt.Errorf("amount %q: want reais with at most two decimals", s)
	}
	frac += strings.Repeat("0", 2-len(frac))
	r, err1 := strconv.ParseInt(whole, 10, 64)
	c, err2 := strconv.ParseUint(frac, 10, 8)
	if err := errors.Join(err1, err2); err != nil || r > (1<<62)/100 {
		return fmt.Errorf("amount %q: want reais with at most two decimals", s)
	}
	*a = Amount(r*100 + int64(c))
	return nil
}

// MarshalText writes reais with two decimals.
func (a Amount) MarshalText() ([]byte, error) {
	if a < 0 {
		return nil, fmt.Errorf("amount %d: negative", int64(a))
	}
	return fmt.Appendf(nil, "%d.%02d", a/100, a%100), nil
}

// Bucket is the state of the participant's token bucket of one rate-limit
// policy (the specification's Policy).
type Bucket struct {
	Name            string `xml:"Name"`
	AvailableTokens int64  `xml:"AvailableTokens"`
	Capacity        int64  `xml:"Capacity"`
	RefillTokens    int64  `xml:"RefillTokens"`
	RefillPeriodSec int64  `xml:"RefillPeriodSec"`
}

// Buckets are the participant's buckets and its category (A to F, the
// specification's PolicyCategory).
type Buckets struct {
	Category string
	Buckets  []Bucket
}
