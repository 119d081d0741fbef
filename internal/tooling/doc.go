// Package tooling holds, below it, what is not the product but serves its
// development and its proofs: the PSP simulator (pspsim, served by
// cmd/pspsim), the load generator (load: cmd/pixload, cmd/pixfaults), a
// Temporal dev server for the tests (temporaltest), the development token
// issuer's defaults (devauth: pixctl, pixfaults), and the check of HTTP
// exchanges against the OpenAPI documents (apicontract: the api and e2e
// tests). The service's own packages (api, db, activities, workflows,
// worker, cmd/pixd) never import them; their tests may.
package tooling
