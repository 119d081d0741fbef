// Package pspspec owns api-pix.yaml, the OpenAPI document of the part of
// the Central Bank's API Pix (bacen/pix-api, release 2.9.0) that the bank
// uses, with the bank's own transfer interface marked x-pixbank-extension,
// and checks HTTP exchanges against it: the requests the bank's PSP client
// (internal/psp) makes, the answers the PSP simulator
// (internal/tooling/pspsim) gives, and the webhooks the simulator sends.
// The client, the simulator and the specification can then not drift
// apart unseen.
//
// The document's paths are relative to the PSP's API base: a PSP_URL with
// a path (https://psp.example/api/v2) puts that path before them, and New
// is told it (Options.BasePath); the package-level functions check
// exchanges at the root.
//
// Test support: the service never imports it.
package pspspec
