// Package notification owns what a PSP's notification of a PIX received
// says: it decodes and validates the two formats (the native webhook and
// the Central Bank's API Pix, whose items GET /pix lists too) into
// pix.Notification, strict where money is decided (end_to_end_id, amount,
// account, key, txid, times) and tolerant with informational members,
// which stay in the stored payload. The webhook routes and the PSP
// catch-up decode through it, so that a PIX is validated alike whichever
// way it arrived.
package notification
