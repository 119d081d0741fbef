// Package openapi owns the service's OpenAPI 3.1 contract: the YAML
// documents of the PSP-facing webhooks (webhooks.yaml) and of the customer,
// admin, codec and operations routes (pix-api.yaml), embedded in the binary,
// and their JSON form, derived from the YAML when first asked for (there is
// no second copy to keep). The api package serves both under /openapi/;
// internal/tooling/apicontract checks the e2e tests' traffic against them.
package openapi
