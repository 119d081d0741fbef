// Package dictspec owns dict-api.yaml, the bank's own OpenAPI document of
// the part of the Central Bank's DICT API (bacen/pix-dict-api, 1.8.0) that
// the bank calls as the credited participant of MED (infraction reports,
// refund requests, the rate-limit policies), and checks HTTP exchanges
// against its facts: paths and methods, query and header parameters, XML
// element names, enumerations, patterns, required elements, the enveloped
// signature's presence, documented statuses and media types. The DICT
// simulator (internal/tooling/dictsim) finds its operations by the
// document's paths and checks with it every request it receives and every
// answer it gives; the tests that serve it (the DICT client's, in
// internal/dict, and its own) fail on any that breaks the document, so
// that neither the client nor the simulator drifts from it unseen.
//
// It checks the document's facts, not XML Schema: the DICT's API is XML
// described by OpenAPI, which general validators do not read, and the
// facts above are what a client or a simulator gets wrong.
//
// # Where the document is not the specification's text
//
// The document is stricter than the specification, or reads it, in a few
// places; each is marked x-spec-deviation in dict-api.yaml, so that a
// refusal of the check or the simulator there is known for a guess, not a
// fact of the DICT:
//
//   - the lists' Limit: the specification gives it a default (20) and a
//     maximum (200), no minimum; the document adds minimum 1, so a Limit of
//     0 or below is refused 400 BadRequest (the bank's client never sends
//     one);
//   - the writes' domain problems (InfractionReportOperationInvalid,
//     RefundOperationInvalid): the specification names them but lists no
//     status for them; the document reads them as 400, the status of every
//     refusal the specification shows.
//
// Beyond the document's words, what the check refuses for a malformed
// request (400 BadRequest, "Requisição com formato inválido", the
// specification's problem for it, documented 400 of both lists) follows
// RFC 3339 for the date-times (ParseDateTime: a comma before the fraction
// or an offset of 24 hours is refused, though time.Parse takes both; a
// lower case "t" or "z" is taken) with one exception: a leap second (:60)
// is refused, as Go's time cannot hold it. The specification says nothing
// of a ModifiedAfter later than ModifiedBefore: it is not refused (an
// empty page).
//
// Test support: the service never imports it; the simulator does.
package dictspec
