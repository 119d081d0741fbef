// Package apicontract checks HTTP exchanges with the service against its
// OpenAPI documents (api/openapi): that the route and method are
// documented, that the answer's status, headers and body are what the
// document says, and that a request the document refuses (a missing
// credential, header or field) was refused. It also records the exchanges
// an http.Handler serves (Recorder), so that the e2e tests can check all
// their traffic to the service. Test support: the service never imports it.
package apicontract
