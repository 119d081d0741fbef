// Package contract holds the service's contract tests that need the
// OpenAPI checks (tooling/oas, through tooling/apicontract), which the
// service's module does not hold: that the router (package api, with every saga's
// routes) serves what the documents of api/openapi say, and the other way
// round, and that every error code is documented; and that the requests the
// PSP client (internal/psp) makes keep to the API Pix's document
// (tooling/pspspec). Tests only.
package contract
