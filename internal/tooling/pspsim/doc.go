// Package pspsim owns the PSP simulator: an in-memory stand-in for the
// bank's PSP with the HTTP API that psp.HTTPClient speaks, which the dev
// command, the demo, the tests and the fault suite run over real HTTP
// (cmd/pspsim serves it).
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
// than 200) and unauthorized (401, or 403, creating nothing). Without a
// behaviour a key accepts.
//
// It is also the receiving bank's PSP for the BCB API Pix devolução (the
// refund of a PIX received): PUT /pix/{e2eid}/devolucao/{id} makes one,
// answered 201 EM_PROCESSAMENTO with its rtrId, and GET reads it. A PUT
// repeated with the same id and body answers 200 with the devolução it
// holds; the same id with another valor (natureza, descricao) is 409
// refund_id_reused. What happens to the devoluções of a PIX is chosen per
// end_to_end_id with a RefundBehavior (PUT /refund-behaviors/{e2eid}):
// return (DEVOLVIDO after a while; the default), not_done (NAO_REALIZADO
// after a while), reject (NAO_REALIZADO at once), fail (503), lose_response
// (make it, cut the connection), unauthorized (401) and stay_processing;
// with a limit, a devolução that takes the PIX's devoluções beyond it is
// NAO_REALIZADO at once, motivo "valor excede o valor da PIX". The
// simulator needs no record of the PIX to refund it.
//
// With Options.WebhookURL it notifies the bank as an API Pix PSP does: a
// PIX told to POST /sim/pix is delivered as {"pix":[...]}, and delivered
// again, with all its devolucoes, whenever one of them becomes final;
// signed with Options.WebhookSecret (Standard Webhooks, as package
// webhooksig verifies). A PIX not told gets no webhook: the bank polls. The
// delivery loop is the one goroutine of the simulator's own: Serve runs it
// and stops it with its context; it checks for due outcomes every 50 ms,
// sends one message at a time, always the newest state of a PIX, and
// retries a failed delivery with a backoff capped at 5 s, 30 times.
//
// A transfer's or devolução's status is computed from its creation time
// when it is read (by Options.Now), so no goroutine or timer runs per
// transfer or devolução. The simulator keeps everything in memory, without
// bound: it is for development and tests.
package pspsim
