// Package webhooksig owns webhook authentication with the Standard Webhooks
// signature scheme (https://www.standardwebhooks.com): parsing the
// WEBHOOK_SECRETS configuration, verifying the webhook-id, webhook-timestamp
// and webhook-signature headers that PSPs send us, and producing the same
// headers for our own clients (load generator, test helpers, CLI).
//
// A signature is "v1," followed by the standard base64 encoding of
// HMAC-SHA256(key, id + "." + timestamp + "." + body). The signed content
// binds the body to the message id and to the send time: the id lets the
// receiver deduplicate deliveries, the timestamp bounds how long a captured
// request can be replayed (DefaultTolerance either way), and because both are
// inside the MAC neither can be changed to turn an old delivery into a "new"
// one. Signing the raw header strings (not re-encoded values) means sender
// and receiver hash exactly the same bytes.
//
// The header may carry several space-separated signatures so that a PSP can
// rotate keys without downtime, and a Verifier holds several secrets per PSP
// for the same reason; Verify reports which PSP's secret matched. Entries with
// another version prefix (e.g. "v1a,") are ignored.
//
// Signatures are compared with hmac.Equal, in constant time: an ordinary
// byte comparison returns as soon as a byte differs, and an attacker who can
// time responses could then forge a valid MAC byte by byte.
//
// The API Pix authenticates its webhooks by mutual TLS alone: CertPSPs
// (WEBHOOK_MTLS_PSPS) says which PSP a client certificate the CA issued
// belongs to, by its subject common name or a DNS SAN.
//
// Verify bounds its work on hostile input (header lengths, number of
// signature entries) and never panics. Errors wrap the sentinels
// ErrMissingSignature, ErrMalformedSignature, ErrStaleTimestamp and
// ErrBadSignature, and never contain key material.
package webhooksig
