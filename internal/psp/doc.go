// Package psp owns the bank's side of outgoing PIX transfers at the PSP: what
// a transfer and the PSP's answer are (Transfer, Result, Status), the Client
// interface the worker sends transfers through, and the one table that
// classifies the PSP's answers (Classify), because that decides what the
// worker may do next, and above all whether it may refund:
//
//   - AnswerResult: a Result about the transfer. Pending or settled; or
//     rejected, which refunds only once the PSP's status query confirms it.
//   - AnswerAlreadySubmitted (409): the PSP holds the transfer already: ask
//     its status.
//   - AnswerNotFound (404 on a status query): submit again under the same
//     EndToEndID, which the PSP deduplicates.
//   - AnswerRequestRefused (*RequestError: 401, 403, 400, 413, ...): our
//     request or credentials are wrong; never a rejection, never refunded.
//   - AnswerTransient (ErrTransient: 5xx, 408, 425, 429, a timeout, a cut
//     connection, an answer that can't be understood): the outcome is
//     unknown; retry later with the same EndToEndID.
//
// HTTPClient implements Client over the HTTP API of the PSP simulator
// (package pspsim); an adapter for a real PSP implements Client too.
package psp
