// Package api owns the HTTP interface: the gin router, thin handlers, request
// decoding and validation, and the one mapping from domain errors to HTTP
// status codes and the JSON error envelope {"error":{"code","message"}};
// and it serves its contract, the OpenAPI documents of api/openapi, under
// /openapi/. Every route has a class, which its scope picks, and a caller:
// a saga's HTTP side (SagaHTTP: its routes under their scopes, its own
// PSP webhooks behind the PSP webhooks' authentication, its hook on
// received webhooks, its section of a credit's view) is served like the
// router's own, through the same checks (sagas.go).
package api
