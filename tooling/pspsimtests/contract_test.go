package pspsimtests_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/internal/tooling/pspsim"
	"github.com/pixbank/pix/tooling/apicontract"
	"github.com/pixbank/pix/tooling/pspspec"
)

// checked wraps h, a simulator's handler whose API is under basePath, so
// that every answer it gives to an operation of the PSP's API is checked
// against pspspec's document when the test ends: the status, headers and
// body must be what the document says, and a request the document
// refuses must not have been answered with success. The control routes
// are not the PSP's: they are left alone.
func checked(t *testing.T, basePath string, h http.Handler) http.Handler {
	t.Helper()
	// The document's security is checked by the OAuth tests themselves:
	// most tests run the simulator without OAuth.
	spec, err := pspspec.New(pspspec.Options{BasePath: basePath, Unauthenticated: true})
	require.NoError(t, err)
	rec := &apicontract.Recorder{}
	t.Cleanup(func() {
		for _, ex := range rec.Exchanges() {
			req := httptest.NewRequest(ex.Method, ex.Target, nil)
			req.Header = ex.RequestHeader
			if !spec.Documented(req) {
				continue
			}
			if err := spec.ValidateResponse(req, ex.Status, ex.ResponseHeader, ex.ResponseBody); err != nil {
				t.Errorf("the simulator's answer departs from the document: %v\n  body: %s", err, ex.ResponseBody)
			}
			if ex.Status < 400 {
				if err := spec.ValidateRequest(req, ex.RequestBody); err != nil {
					t.Errorf("the simulator answered %d a request the document refuses: %v", ex.Status, err)
				}
			}
		}
	})
	return rec.Wrap(h)
}

// checkedServe makes Serve's answers checked as checked's.
func checkedServe(t *testing.T, sim *pspsim.Simulator, basePath string) {
	t.Helper()
	pspsim.WrapServedHandler(sim, func(h http.Handler) http.Handler { return checked(t, basePath, h) })
}

// The simulator's routes require the scopes the document gives them, and
// it has every operation of the document.
func TestRoutesRequireTheDocumentsScopes(t *testing.T) {
	t.Parallel()
	spec, err := pspspec.New(pspspec.Options{})
	require.NoError(t, err)
	want := map[string]string{}
	for _, op := range spec.Operations() {
		require.Len(t, op.Scopes, 1, op.String())
		want[op.String()] = op.Scopes[0]
	}
	require.Equal(t, want, pspsim.APIRouteScopes(pspsim.New(pspsim.Options{})))
	require.Equal(t, pspspec.ProblemTypeBase, pspsim.ProblemTypeBase)
}
