// Package api owns the HTTP interface: the gin router, thin handlers, request
// decoding and validation, and the one mapping from domain errors to HTTP
// status codes and the JSON error envelope {"error":{"code","message"}};
// and it serves its contract, the OpenAPI documents of api/openapi, under
// /openapi/.
package api
