// Package psp owns the bank's side of outgoing PIX transfers at the PSP: what
// a transfer and the PSP's answer are (Transfer, Result, Status), the Client
// interface the worker sends transfers through, and how a failure is
// classified, because that decides what the worker does next:
//
//   - ErrTransient (5xx, 408, 429, a timeout, a refused or reset connection,
//     an answer that can't be understood): the PSP could not answer now, or
//     not intelligibly; retry later with the same EndToEndID,
//     which the PSP deduplicates, so a retry never sends the money twice,
//     even when the lost answer was for a request the PSP had processed.
//   - *RequestError (any other 4xx): the PSP refused the request itself;
//     retrying the same request can't fix it.
//   - ErrNotFound: the PSP knows no transfer with that EndToEndID.
//   - A definitive rejection of the transfer (receiver account closed, ...)
//     is not an error: it is a Result with StatusRejected.
//
// HTTPClient implements Client over the HTTP API of the PSP simulator
// (package pspsim); an adapter for a real PSP implements Client too.
package psp
