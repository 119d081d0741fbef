// Package pspsimtests holds the tests of the PSP simulator
// (internal/tooling/pspsim), and nothing else. They check every answer the
// simulator gives, and every webhook it sends, against the API Pix's
// OpenAPI document (tooling/pspspec), whose checks (tooling/oas) are the
// tooling module's: the service's module, where the simulator is, does not
// hold them.
package pspsimtests
