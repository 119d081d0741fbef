// Package pix owns the domain vocabulary of incoming PIX credits: the validated
// notification, the inbox statuses, and the typed errors for every business
// refusal. The HTTP layer maps these errors to status codes in one place
// (api/errors.go); the activities map them to Temporal error types.
package pix
