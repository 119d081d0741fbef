package api

// DecodeRefundRequestForTest exposes the refund body's validation to the
// package's external tests.
var DecodeRefundRequestForTest = decodeRefundRequest
