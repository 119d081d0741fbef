// Package psptest owns the tests' fake PSP (FakePSP: the API Pix over
// mutual TLS, with its OAuth 2.0 token endpoint, each test scripting its
// answers), the requests the tests make of it and its answers to them
// (PixAPI, CallEveryMethod), and the ways its token endpoint fails a call
// (TokenFailures), which the activities of every saga that calls the PSP
// must go through without moving money; and, for an in-memory fake PSP that
// answers from scripts, the scripts' answers call by call and the calls
// counted (Next, Calls). The PSP client's own tests use it, the activities'
// tests too, and so does the check of its requests against the API Pix's
// OpenAPI document, which is in the tooling's module (tooling/contract): a
// package's _test files would not reach it. Test support: the service never
// imports it.
package psptest
