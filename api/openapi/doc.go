// Package openapi owns the service's OpenAPI 3.1 contract: the YAML
// documents of the PSP-facing webhooks (webhooks.yaml, the base, and
// webhooks/*.yaml, a fragment per saga with webhooks of its own) and of the customer,
// admin, codec and operations routes (pix-api.yaml, the base: info, servers,
// tags and the components sagas share; and pix-api/*.yaml, one fragment of
// paths and components per saga, merged into the base when the document is
// first asked for), embedded in the binary, and their JSON form, derived
// from the YAML (there is no second copy to keep). testdata/pix-api.yaml is
// the document as written before the split, which the assembled one must
// equal. The api package serves both under /openapi/;
// tooling/apicontract checks the e2e tests' traffic against them.
package openapi
