// Package tooling holds, below it, what is not the product but serves its
// development and its proofs, and that the service's own module still
// needs: what pixctl (shipped with the service) runs, and what the
// service's own tests start. The development token issuer's defaults
// (devauth: pixctl token and dev-issuer) and certificates (devpki: pixctl
// dev-pki and demo; testpki for the tests), a Temporal dev server
// (temporaltest) and a NATS server (natstest) for the tests, each the
// pinned binary in .bin started as a process, the log lines a test reads
// (logtest), the PSP simulator (pspsim: cmd/pspsim, and pixctl's tests),
// the DICT simulator (dictsim: the DICT client's tests, MED's).
//
// The rest of the tooling is a module of its own, tooling/ at the
// repository's root (github.com/pixbank/pix/tooling): the load generator
// and its histograms (tooling/load, tooling/cmd/pixload), the fault suite
// (tooling/cmd/pixfaults), the end-to-end tests (tooling/e2e), and the
// check of HTTP exchanges against the OpenAPI documents (tooling/apicontract,
// tooling/pspspec) with the tests that need it (tooling/contract,
// tooling/pspsimtests), whose libraries the service's go.mod never lists. The service's own packages
// (api, db, activities, workflows, worker, cmd/pixd) never import any of
// them; their tests may import these.
package tooling
