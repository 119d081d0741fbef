package pspsim

import "net/http"

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

// ProblemTypeBase is problemTypeBase, for the test that it is pspspec's.
const ProblemTypeBase = problemTypeBase
