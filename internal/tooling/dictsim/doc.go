// Package dictsim owns the DICT simulator: an in-memory stand-in for the
// Central Bank's DICT that speaks the part of its API (bacen/pix-dict-api,
// 1.8.0) the bank calls as the credited participant of MED, as the
// repository's facts document writes it (internal/dict/dictspec's
// dict-api.yaml): the infraction reports (list, get, acknowledge, close),
// the refund requests (list, get, close) and the rate-limit policies (list,
// get). It is the bank's DICT in the tests of the DICT client and, later,
// of the MED saga: NewTestServer serves it over mutual TLS with
// certificates made for the test and hands back the bank's dict.Config;
// NewServer does the same for a program (the fault suite), its
// certificates in a directory it is given; cmd/dictsim serves it for make
// run, with the development PKI's (NewServed, the one constructor of all
// three).
//
// # What it speaks
//
// XML bodies in the specification's element names, every answer signed by
// the DICT's certificate (an enveloped XML Digital Signature, goxmldsig,
// as the client's; the Signature the root's first child, as in the
// specification's examples), every write (acknowledge, close,
// closeRefund) verified against its participant's signing certificates:
// unsigned or wrongly signed, 400 RequestSignatureInvalid. Problems are RFC 7807 in
// application/problem+xml, of type
// https://dict.pi.rsfn.net.br/api/v1/error/<Type>, the types the client
// declares. Every request is checked against dict-api.yaml (one that
// breaks it is 400 BadRequest, and Options.OnViolation is told), and so is
// every answer of the simulator's own before it leaves (a defect of the
// simulator's: told too). The operations are found by the document's own
// paths: the simulator serves exactly what it describes.
//
// Who asks is the connection's participant, by its TLS client certificate
// (Participant.TLSCertificates), which must be the one the request names
// (PI-RequestingParticipant, a list's Participant, a write's
// Participant); without TLS, the one the request names, which the
// simulator must know. A report or a refund request of which the asker is
// no party looks like none (404 NotFound); a list of another's is 403
// Forbidden (a read has no 403 in the document: NotFound); a write by a
// party that is not the one to make it (the reporter acknowledging its own
// report, the requester closing its refund request) is 403 Forbidden.
// Indirect participants are not modelled (IncludeIndirectParticipants
// changes nothing).
//
// # The model
//
// An infraction report is OPEN when opened (OpenReport: another
// participant reports a PIX; its amount kept for the refund), ACKNOWLEDGED
// by the party that did not report it, then CLOSED by that party with
// AGREED or DISAGREED and its details; its creator may cancel it at any
// time (CancelReport), even closed: CANCELLED. A refund request is opened
// for a report closed AGREED (OpenRefund: the payer's participant asks
// back the PIX or less), OPEN until its contested participant closes it
// (TOTALLY_ACCEPTED, PARTIALLY_ACCEPTED or REJECTED, with its details,
// rejection reason and RefundTransactionId) or its requester cancels it
// (CancelRefund). An acknowledge repeated while the report is
// ACKNOWLEDGED, a close repeated with the same parameters, get the first
// answer; a write the status forbids is 400 InfractionReportOperationInvalid
// or RefundOperationInvalid. The DICT's own refusals of a second report or
// refund request of a PIX are the control calls' errors, the client's
// declared problems (errors.Is).
//
// The lists filter by the asker's role (IsCredited, IsDebited; a refund
// list's ParticipantRole), Status, ModifiedAfter and ModifiedBefore (both
// included), hide the details unless IncludeDetails, order by
// LastModified ascending (then by id), and hold Limit items (20 without
// one; the document allows 1 to 200), HasMoreElements saying whether more
// follow; with Options.ListLag they lag the writes, as the specification
// says the DICT's may by up to 5 seconds. A list query the document does
// not take is 400 BadRequest, the specification's problem for a malformed
// request, before anything is listed: a ModifiedAfter or ModifiedBefore
// that is not RFC 3339's date-time (dictspec.ParseDateTime), a Limit out
// of 1 to 200 or not a number (the 1 is the document's, not the
// specification's: see dictspec's doc), a refund list without its required
// ParticipantRole or with another role.
//
// Rate limits: a token bucket per participant and policy, each request
// taking a token, refilled at the policy's rate (the document's x-policies,
// as docs/med.md's table; Options.Limits replaces them for a test); an
// empty bucket is 429 RateLimited, signed, without Retry-After (the
// specification gives none: the client waits the refill of one token).
// The policies' answers show the buckets as they are.
//
// # Clocks
//
// The model's times (CreationTime, LastModified, the buckets' refill, the
// faults' durations) are on a simulated clock: Options.Now (time.Now
// unless a test fixes it) plus what Advance added, so that a test jumps
// 72 hours or 7 days. An answer's ResponseTime is always the real time:
// the client holds it to its own clock (dict.Config.ResponseTimeSkew).
// Certificates are checked on the real clock too.
//
// # Behaviours for tests
//
// Control methods, and the same as JSON routes on a handler of their own
// (ControlHandler): open a report against a PIX, open a refund request
// once its report is closed AGREED (for the PIX's amount or less), cancel
// either; lose the answers of the next writes (LoseAnswers: done, and the
// connection cut or a gateway's 504 without a body); a rate-limit storm
// (RateLimitStorm: every bucket empty for a while); the DICT down
// (SetOutage: 503 ServiceUnavailable with Retry-After, or 500, for a
// while, nothing done); move the clock (Advance). "A refund request that
// never comes" needs nothing: a report closed AGREED simply gets no
// OpenRefund. A test of a client's handling of wrong answers sets an
// answer hook (SetAnswerHook), which may answer instead of the simulator
// or alter its answer: unsigned, signed by a foreign certificate, changed
// after its signature (Answer.Sign), raw bytes, another status, a lost
// answer.
//
// It keeps everything in memory, without bound: it is for development and
// tests. NewServed is how it is served as the DICT is (mutual TLS, its
// answers signed): by the tests (NewTestServer, with certificates made for
// the test), by the fault suite (NewServer) and by its binary (cmd/dictsim, which make run starts with the
// development PKI's).
package dictsim
