// Package dictspec owns dict-api.yaml, the bank's own OpenAPI document of
// the part of the Central Bank's DICT API (bacen/pix-dict-api, 1.8.0) that
// the bank calls as the credited participant of MED (infraction reports,
// refund requests, the rate-limit policies), and checks HTTP exchanges
// against its facts: paths and methods, query and header parameters, XML
// element names, enumerations, patterns, required elements, the enveloped
// signature's presence, documented statuses and media types. The DICT
// client's tests (internal/dict) check every request the client sends and
// every answer their server gives with it, so that the client and the
// document cannot drift apart unseen; the DICT simulator will be checked
// the same way.
//
// It checks the document's facts, not XML Schema: the DICT's API is XML
// described by OpenAPI, which general validators do not read, and the
// facts above are what a client or a simulator gets wrong.
//
// Test support: the service never imports it.
package dictspec
