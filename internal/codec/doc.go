// Package codec owns the encryption of the service's Temporal payloads:
// workflow and activity inputs and results, memos (the payer's name and
// document of an incoming PIX), signals, queries, and failure messages and
// stack traces. Temporal's server, its database and its UI then hold only
// ciphertext; the service's processes, which hold the keys, read it back.
//
// It holds the AES-256-GCM PayloadCodec (a key derived per payload with
// HKDF, so a configured key's use has no practical bound; the first format,
// sealed with the configured key itself, still decrypts) and its key ring
// (TEMPORAL_CODEC_KEYS, several keys for rotation), the DataConverter and FailureConverter a
// Temporal client or replayer is given, and the codec server's HTTP handler
// through which the Temporal UI and CLI decode payloads for an authorized
// operator.
package codec
