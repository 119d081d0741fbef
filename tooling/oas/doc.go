// Package oas is the small part of OpenAPI 3.1 the contract checks need:
// it parses a document (YAML), resolves its local references, routes a
// request to its operation by path, and checks a request and an answer
// (parameters, bodies, headers, status, security) against the operation,
// with the schemas validated as JSON Schema 2020-12 (santhosh-tekuri's
// validator, formats asserted). It also checks a document against the
// OpenAPI 3.1 specification's own schema (oas31-schema.json).
//
// It replaces libopenapi and libopenapi-validator, whose 40-odd packages
// were the largest compile of the tooling module: it knows no more of
// OpenAPI than the documents of this repository use (no cookies, no
// external references, no XML bodies), and says so when it meets more.
//
// Test support: the service never imports it.
package oas
