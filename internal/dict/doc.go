// Package dict owns the bank's side of the Central Bank's DICT API
// (bacen/pix-dict-api, 1.8.0) as the credited participant of MED, the
// special return mechanism: the infraction reports and refund requests as
// the DICT keeps them (InfractionReport, Refund, their statuses and
// results), the HTTP client that lists, reads, acknowledges and closes
// them and reads the rate-limit buckets (HTTPClient, built by New from one
// Config), and the one table that classifies the DICT's answers (Classify).
// The facts it keeps to are written down in dictspec/dict-api.yaml, which
// its tests check every request and answer against, served by the DICT
// simulator (internal/tooling/dictsim). The MED saga and the lister's
// Schedule are not here.
//
// # Calls
//
//	ListInfractionReports, WalkInfractionReports  GET  /infraction-reports/           listInfractionReport
//	GetInfractionReport                           GET  /infraction-reports/{id}       getInfractionReport
//	AcknowledgeInfractionReport                   POST /infraction-reports/{id}/acknowledge  (signed)
//	CloseInfractionReport (AGREED|DISAGREED)      POST /infraction-reports/{id}/close        (signed)
//	ListRefunds, WalkRefunds                      GET  /refunds/                      listRefund
//	GetRefund                                     GET  /refunds/{id}                  getRefund
//	CloseRefund (TOTALLY_ACCEPTED|PARTIALLY_ACCEPTED|REJECTED, RefundTransactionId)
//	                                              POST /refunds/{id}/close            (signed)
//	Buckets, Bucket                               GET  /policies/, /policies/{policy} (the policies' own base)
//
// The lists have no offset: a page is at most Limit items (200 at most)
// ordered by LastModified, HasMoreElements says whether more follow, and
// the next page is asked with ModifiedAfter, which includes its instant.
// The walks do that and hand each item once; they return the last item's
// LastModified, from which a lister goes on (less 5 seconds: the
// specification says the lists may lag the writes by that much). The
// cursor is sent as precisely as the DICT wrote the LastModified
// (milliseconds in the specification's examples; finer if the DICT's are),
// since the walk compares the page's items with it as it is. A full page
// modified at one instant, all handed, would come back the same (no
// offset): the walk lists that instant alone, one Status at a time at
// Limit 200, and goes on a nanosecond after it; more than 200 items of one
// status at one instant can't be reached by any query the specification
// offers, and the walk stops there (ErrInstantTooFull).
//
// A page's signature is verified over the whole answer, then each item is
// decoded on its own (items.go): an item that is not the specification's
// (an element required and missing, an enumeration's value it does not
// have, a date-time or an amount that can't be read) fails no other. The
// page answers it apart (ReportPage.Malformed, RefundPage.Malformed); a
// walk hands it in its place to the query's Malformed (its Id and
// LastModified as far as they can be read; where the walk met it when its
// LastModified can't be), or, without one, stops there (ErrMalformedItem).
// The report or refund request of a single answer (getInfractionReport,
// getRefund, a write's) is checked the same way (decodeAnswer): one that is
// not the specification's fails the call with its MalformedItem.
// An answer whose signature does not verify still fails whole: nothing
// unverified is read.
//
// # Transport and signatures
//
// Mutual TLS (the bank's client certificate, the DICT's CA). A request
// that changes something (acknowledge, close) is signed with an enveloped
// XML Digital Signature by the bank's signing certificate (goxmldsig:
// SHA-256 with the key's algorithm, RSA for the Pix's certificates;
// exclusive canonicalization; the certificate in KeyInfo). What is signed
// is byte for byte what is sent, as an XML parser reads it: the free texts
// (AnalysisDetails, RefundAnalysisDetails) are sent with "\n" line breaks
// (NormalizeDetails: "\r\n" and "\r" become "\n", as XML 1.0 §2.11 reads
// them), and any carriage return left is written &#xD;, never raw, which
// the DICT's parser would read as a line feed and digest otherwise.
// Every answer must carry the DICT's enveloped signature, by one of the
// certificates of Config.DICTCertFile: the client reads only what that
// signature covers. An answer unsigned, signed by another certificate, or
// changed after its signature is a *SignatureError (ErrUnverifiedAnswer),
// never accepted, whatever it says; a refusal (a 4xx problem) too. So is
// a signed answer whose ResponseTime lies outside the call (before its
// sending or after its receipt, by more than Config.ResponseTimeSkew,
// DefaultResponseTimeSkew 5 minutes): an answer of the DICT's replayed
// from another call, a page or a read since outdated, carries nothing
// else that ties it to its request. Only an answer that says "later" (429,
// 5xx, 408, 425), from which nothing is taken, is read without a
// signature: unsigned, the problem type it carries is kept for the log
// (ProblemError.Type, "(unsigned)") but is never a declared problem
// (errors.Is): a gateway can't forge a NotFound or a
// RequestSignatureInvalid that way; only its class, Unknown or
// RateLimited, holds. Its Retry-After is cut to [0, MaxRetryAfter] (5
// minutes); and the DICT's or a gateway's words an error keeps are cut
// short and stripped of control characters (they go to logs).
//
// The Signature of a request is the root's first child, where every
// example of the specification puts it. One point is not proven against
// the DICT, and is to be confirmed with the Pix security manual (Manual de
// Segurança do Pix) before production: KeyInfo carries the signing
// certificate (X509Data/X509Certificate), which the DICT is assumed to
// require. The Signature's place matters in the answers:
// goxmldsig's verifier gives up looking for the Signature after 1,000
// elements, so an answer whose Signature comes last is unverifiable beyond
// about 65 reports a page (ErrUnverifiedAnswer, every time). Placed first,
// as in the examples (and by the DICT simulator), a page of 200 is read
// (TestAFullPageIsVerified); a DICT that places it last would need the
// walks' Limit down to 50.
//
// # Errors
//
// Classify puts each outcome in one class:
//
//	nil                                    Done
//	a signed problem, 4xx (not 408/425/429) Refused: definitive; errors.Is names its type
//	ErrNotSent (an invalid request of ours) Refused, never sent
//	429 (ErrRateLimited)                   RateLimited: not processed; retry after RetryAfter
//	5xx, timeout, no answer, an answer
//	  that is not the operation's          Unknown (ErrUnknownOutcome): read back, then retry
//	*SignatureError (ErrUnverifiedAnswer)   Unverified: never accepted; as Unknown, and an alert
//	MalformedItem (ErrMalformedItem)       Malformed: a verified report or refund request not
//	                                         the specification's; never decided on, an operator's
//
// Each problem type of the specification these operations may answer is
// declared once (ErrNotFound, ErrInfractionReportOperationInvalid,
// ErrRefundAlreadyBeingProcessedForTransaction, ...): a *ProblemError is
// its declared problem (errors.Is), matched by the type in full
// (https://dict.pi.rsfn.net.br/api/v1/error/<Type>); a type not declared
// is classified by its status alone. What a caller does: NotFound, no such
// report or request; ...OperationInvalid, the status does not allow the
// operation: read it back, its status decides (below); Forbidden and
// RequestSignatureInvalid, our credentials or signature: alert, not
// retry. A 429's RetryAfter is the answer's Retry-After, or, without one,
// the time the operation's token bucket takes to refill one token (the
// specification's policy table: 1.5 s for a list filtered by role, 50 ms
// for a report's write); a 503's is its Retry-After. A Retry-After is at
// most MaxRetryAfter; one zero, negative or past is none. Buckets and Bucket
// read the buckets' state (on Config.PoliciesURL, the specification's
// rate-limit server), for a caller that paces a burst: the MED lister
// reads its list's before a walk's second page and, while it is at or
// below a reserve, holds each page back (a query's Paging) a bounded wait,
// never stopping; RefillInterval is a policy's refill by the table. A 429 is not followed by a read of its bucket: the state
// says how many tokens are left (none) and the refill, not when the next
// token comes, so it gives the wait RetryAfter already is, for a token of
// POLICIES_READ.
//
// # Lost answers
//
// A write whose answer was lost (Unknown or Unverified) may have been
// done. The specification makes acknowledge and close idempotent (an
// acknowledge repeated while the report is ACKNOWLEDGED, a close repeated
// with the same parameters, get the first answer), but not once the
// report has moved on: then they are ...OperationInvalid. So a caller
// reads back before it sends again, and the read decides:
//
//   - acknowledge: GetInfractionReport. OPEN: send it again. ACKNOWLEDGED:
//     done. CLOSED or CANCELLED: done, and the report has moved on.
//   - close: GetInfractionReport. ACKNOWLEDGED: send the same close again.
//     CLOSED with our AnalysisResult and details (compared as
//     NormalizeDetails(ours), the text the DICT keeps): done. CLOSED with
//     another result: not ours to redo; an operator's. CANCELLED: its
//     creator cancelled it; nothing to close.
//   - CloseRefund: GetRefund. OPEN: send the same closing again. CLOSED
//     with our AnalysisResult, RefundTransactionId and details (as
//     NormalizeDetails(ours)): done. CLOSED
//     otherwise: an operator's. CANCELLED: the requester cancelled it.
//
// A read-back that is itself Unknown, RateLimited or Unverified decides
// nothing: wait and read again. The client offers the reads; the MED
// saga, which keeps what it sent, makes the decision.
package dict
