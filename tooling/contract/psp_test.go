package contract_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/internal/psp/psptest"
	"github.com/pixbank/pix/tooling/pspspec"
)

// TestRequestsKeepToTheSpec: every request the client makes, one of each
// method, with a token, under a base path, keeps to the OpenAPI document of
// the API Pix (pspspec: the spec's paths, parameters, bodies and bearer
// token; the transfer interface is the bank's own extension there); and
// the answers this test's PSP gives, which the client accepted, keep to it
// too, so that what the client reads is what a PSP following the spec
// sends.
func TestRequestsKeepToTheSpec(t *testing.T) {
	spec, err := pspspec.New(pspspec.Options{BasePath: psptest.APIBase})
	require.NoError(t, err)
	var mu sync.Mutex
	var problems []error
	checked := 0
	f := psptest.NewFakePSP(t)
	f.API = func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rec := httptest.NewRecorder()
		psptest.PixAPI(rec, r)
		mu.Lock()
		checked++
		if err := spec.ValidateRequest(r, body); err != nil {
			problems = append(problems, err)
		}
		if err := spec.ValidateResponse(r, rec.Code, rec.Header(), rec.Body.Bytes()); err != nil {
			problems = append(problems, err)
		}
		mu.Unlock()
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		_, _ = w.Write(rec.Body.Bytes())
	}
	psptest.CallEveryMethod(t, f.Client(t))
	require.Equal(t, 8, checked)
	require.Empty(t, problems)
}
