// Package psp owns the bank's side of its PSP's API: what a transfer, a
// devolução and the PSP's answers are (Transfer, Result, RefundRequest,
// RefundResult), the interfaces the worker, the refund saga and the
// catch-up call (Client, RefundClient, ReceivedLister, WebhookRegistrar),
// the HTTP client that implements them (HTTPClient, built by New from one
// Config: OAuth 2.0 client credentials and mutual TLS, as the Central
// Bank's API Pix requires), and the one table that classifies the PSP's
// answers (Classify), because that decides what the worker may do next,
// and above all whether it may compensate:
//
//   - AnswerResult: a Result about the transfer (or the devolução). Pending
//     or settled; or rejected (not made), which compensates only once the
//     PSP's own record confirms it.
//   - AnswerAlreadySubmitted (409): the PSP holds the transfer already: ask
//     its status.
//   - AnswerNotFound (404 on a status query; for a devolução, the spec's
//     NaoEncontrado problem): submit again under the same id, which the PSP
//     deduplicates.
//   - AnswerRefundRefused (400 PixDevolucaoInvalida): the PSP refused the
//     devolução, or our id is already used (by our own earlier PUT too):
//     its record of the devolução decides.
//   - AnswerRequestRefused (*RequestError: 401, 403 AcessoNegado, 400, 413,
//     ...; a refused *TokenError: invalid_client, invalid_scope): our
//     request or credentials are wrong; never a rejection, never
//     compensated.
//   - AnswerTransient (ErrTransient: 5xx and ServicoIndisponivel, 408, 425,
//     429, a timeout, a cut connection, an answer that can't be understood,
//     the token endpoint down): the outcome is unknown; retry later with
//     the same id.
//
// No secret (the client secret, a token) is ever part of an error of this
// package: a token endpoint's refusal keeps its status and RFC 6749 error
// code only (TokenError).
package psp
