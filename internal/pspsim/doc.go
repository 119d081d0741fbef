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
// A transfer's status is computed from its creation time when it is read,
// so no goroutine or timer runs per transfer. The simulator keeps
// everything in memory, without bound: it is for development and tests.
package pspsim
