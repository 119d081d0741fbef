package pspsim

import "net/http"

// What the simulator's tests need of its insides. They are a package of
// the tooling's module (tooling/pspsimtests), beside the OpenAPI validator
// they check its answers with, which the service's go.mod does not list:
// an export_test.go would not reach them.

// WrapServedHandler makes Serve serve wrap(Handler()): the tests record
// what a served simulator answers.
func WrapServedHandler(s *Simulator, wrap func(http.Handler) http.Handler) { s.wrapHandler = wrap }

// APIRouteScopes are the scopes of the simulator's API routes, by
// pattern ("GET /pix").
func APIRouteScopes(s *Simulator) map[string]string {
	scopes := map[string]string{}
	for _, rt := range s.apiRoutes() {
		scopes[rt.pattern] = rt.scope
	}
	return scopes
}

// ProblemTypeBase is problemTypeBase, for the test that it is
// tooling/pspspec's.
const ProblemTypeBase = problemTypeBase
