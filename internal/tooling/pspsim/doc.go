// Package pspsim owns the PSP simulator: an in-memory stand-in for the
// bank's PSP that speaks the part of the Central Bank's API Pix the bank
// uses, and the bank's own transfer interface, which the dev command, the
// demo, the tests and the fault suite run over real HTTP (cmd/pspsim
// serves it). Its answers keep to tooling/pspspec's OpenAPI document: its
// tests (tooling/pspsimtests, in the tooling's module) check every one of
// them against it.
//
// # Credentials
//
// With Options.OAuth, it is an OAuth 2.0 authorization server for the
// client credentials grant (RFC 6749 §4.4) at POST /oauth/token, the
// client authenticated by HTTP Basic (§2.3.1): a wrong or missing client
// is 401 invalid_client with WWW-Authenticate: Basic; a missing grant_type
// 400 invalid_request, another grant 400 unsupported_grant_type, a scope
// not granted 400 invalid_scope; a token is {access_token, token_type
// "Bearer", expires_in, scope}, valid for OAuthOptions.TokenLifetime by
// Options.Now. Every API route then needs a bearer token (RFC 6750): none
// is 401 with the Bearer challenge, an expired, revoked or unknown one 401
// error="invalid_token", one without the route's scope (the API Pix's:
// pix.read, pix.write, webhook.read, webhook.write) 403 AcessoNegado. With
// Options.TLS, Serve serves TLS, mutual when its configuration requires a
// client certificate. Without either (the default) the API takes no
// credentials, as the tests and tools of before expect. The control
// routes (behaviours, /sim/...) are never behind OAuth; ServeControl
// serves them alone on a plain listener for when the API is behind mutual
// TLS.
//
// # Transfers (the bank's extension)
//
// Like a real PSP it deduplicates by end_to_end_id: whatever happens, one
// end_to_end_id is at most one transfer, and a resubmission answers with
// the transfer it already has (409 end_to_end_id_reused when the payload
// differs). What happens to a transfer is chosen per receiver Pix key with a
// Behavior: accept (pending, settled after a while), reject, reject_later,
// fail (503 a number of times, creating nothing), timeout (create, then
// hang without answering, as when the PSP processed a request whose answer
// was lost), lose_response (create, then cut the connection at once),
// duplicate_conflict (a resubmission answered 409 duplicate_transfer rather
// than 200) and unauthorized (401 invalid_token, or 403 AcessoNegado, as
// the OAuth layer refuses credentials, creating nothing). Without a
// behaviour a key accepts. The transfer routes' own errors are the
// envelope {"error":{"code","message"}}.
//
// # PIX received and devoluções (the API Pix)
//
// A PIX told to POST /sim/pix (an API Pix Pix object; without horario, the
// simulator's now) is a PIX the PSP received: GET /pix lists those whose
// horario is from inicio to fim, both included (fim before inicio is 400
// PixConsultaInvalida), by horario, filtered by txid, a page of
// paginacao.itensPorPagina (1 to 1000, default 100) at a time, or fewer
// when a ListPageSize is in force (below; the answer's itensPorPagina then
// says the page size used, and paginaAtual and quantidadeDePaginas count
// pages of it), with quantidadeDePaginas (at least 1) and
// quantidadeTotalDeItens; GET /pix/{e2eid} reads one. A PIX is listed
// whether or not its webhook is sent, with all its devoluções. The PIX
// are kept in GET /pix's order, so that a page costs a search, not a sort
// of all of them.
//
// PUT /pix/{e2eid}/devolucao/{id} makes a devolução, answered 201
// EM_PROCESSAMENTO with its rtrId, and GET reads it (404 NaoEncontrado
// when there is none). A PUT repeating one it holds (the same id and body)
// answers 200 with it; the same id with another valor (natureza,
// descricao) is 400 PixDevolucaoInvalida ("id already used"), as is a body
// that does not meet the schema. For a PIX it received, a devolução that,
// with the earlier ones not NAO_REALIZADO, would exceed the PIX's valor,
// or asked for more than 90 days (RefundWindow) after its horario, is 400
// PixDevolucaoInvalida, nothing made. Of a PIX it did not receive, a
// devolução is made (the bank's tests credit PIX the simulator never saw),
// unless Options.RefundsNeedPix: then 404 NaoEncontrado. What happens to
// the devoluções of a PIX is chosen per end_to_end_id with a
// RefundBehavior (PUT /refund-behaviors/{e2eid}): return (DEVOLVIDO after
// a while; the default), not_done (NAO_REALIZADO after a while), reject
// (NAO_REALIZADO at once), fail (503 ServicoIndisponivel), lose_response
// (make it, cut the connection), unauthorized (401 invalid_token),
// stay_processing, refuse (400 PixDevolucaoInvalida, nothing made) and
// refuse_retry (made, but a repeated PUT answered 400
// PixDevolucaoInvalida, as a PSP that reads "id already used" so); with a
// limit, a devolução that takes the PIX's devoluções beyond it is
// NAO_REALIZADO at once, motivo "valor excede o valor da PIX".
//
// # Webhooks
//
// PUT, GET and DELETE /webhook/{chave} register the webhook of a key; a
// PIX received to a key with one is notified at {webhookUrl}/pix, and one
// to a key without at Options.WebhookURL (as is). A notification is
// {"pix":[...]}, delivered again, with all its devolucoes, whenever one of
// them becomes final; over mutual TLS with Options.WebhookTLS's client
// certificate; unsigned, as the API Pix's, unless Options.WebhookSecret
// signs it (Standard Webhooks, as package webhooksig verifies). With
// Options.WebhooksTxidOnly only a PIX with a txid is notified ("Somente
// Pix associados a um txid serão notificados"); a WebhookBehavior per key
// (PUT /webhook-behaviors/{chave}) never notifies the PIX to it (never),
// which are then only in GET /pix. The delivery loop is the one goroutine
// of the simulator's own: Serve runs it and stops it with its context; it
// checks for due outcomes every 50 ms, sends one message at a time,
// always the newest state of a PIX, and retries a failed delivery with a
// backoff capped at 5 s, 30 times.
//
// # MED through the PSP
//
// With Options.MEDWebhookURL it notices the bank of MED infraction
// reports and refund requests as a PSP does for a bank behind it: the
// DICT's InfractionReport and Refund as JSON, at /infraction-reports and
// /refunds under the URL, signed and over TLS as the webhooks, one
// attempt in the control request that caused it (its answer says how it
// went). The control routes POST /sim/med/reports (a report about a PIX,
// ACKNOWLEDGED by the PSP unless asked OPEN) and .../{id}/close,
// /cancel, /refund (only of a report closed AGREED), /refund/close and
// /notify (a redelivery) stand for the DICT and the PSP's own channel
// (med.go). A devolução asked while a refund request is open on its PIX
// is answered with the natureza of a return within MED (MED_FRAUDE, or
// MED_OPERACIONAL for an operational flaw), as the API Pix's Devolucao
// says the SPI sets it; a request still takes ORIGINAL or RETIRADA only.
//
// # PSP-wide faults
//
// For the fault suite, as the behaviours: the token endpoint down for a
// while (PUT /sim/token-endpoint {"mode":"unavailable"|"cut","for":"30s"}:
// 503 temporarily_unavailable, or the connection closed without an
// answer), every webhook dropped for a while (PUT /sim/webhook-drop
// {"for":"2m"}: each message due then is given up unsent; the PIX stay in
// GET /pix), a client's secret rotated (PUT
// /sim/oauth-clients/{client_id} {"secret":...,"revoke_tokens":bool}), and
// GET /pix's pages cut short (PUT /sim/list-page-size {"max":2}: at most so
// many PIX a page whatever paginacao.itensPorPagina asks, as the spec's
// maximum lets a PSP do, until DELETE /sim/list-page-size: a window of n
// PIX takes n/max pages); GET /sim/faults shows what is in force, with the
// pages of GET /pix answered under the limit.
//
// A transfer's or devolução's status is computed from its creation time
// when it is read (by Options.Now), so no goroutine or timer runs per
// transfer or devolução. The simulator keeps everything in memory, without
// bound: it is for development and tests.
package pspsim
