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
// Test support: the service never imports it; the simulator does.
package dictspec
