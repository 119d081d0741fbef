package contract_test

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"
	"github.com/goccy/go-yaml"
	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/api"
	"github.com/pixbank/pix/api/openapi"
	"github.com/pixbank/pix/db"
	"github.com/pixbank/pix/internal/pix"
	"github.com/pixbank/pix/saga"
	"github.com/pixbank/pix/saga/registry"
	"github.com/pixbank/pix/tooling/apicontract"
)

// The OpenAPI documents (api/openapi) against the router: what gin serves
// is what they document, and the other way round. The e2e tests check the
// answers themselves (tooling/e2e/contract_test.go).

func loadContract(t *testing.T) *apicontract.Contract {
	t.Helper()
	c, err := apicontract.Load(apicontract.Options{})
	require.NoError(t, err, "every document is OpenAPI 3.1 and every $ref resolves")
	return c
}

// contractRouter is the router with every route class and every optional
// route (the codec server, /metrics) on.
func contractRouter(t *testing.T) *gin.Engine {
	t.Helper()
	handler, err := api.NewRouter(api.Deps{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Codec: http.NotFoundHandler(), Metrics: http.NotFoundHandler(), Sagas: sagas(t)}, api.AllRoutes)
	require.NoError(t, err)
	return handler.(*gin.Engine)
}

// sagas are every saga's HTTP side (registry.HTTP), built offline: their
// handlers are never called.
func sagas(t *testing.T) []api.SagaHTTP {
	t.Helper()
	routes, err := registry.HTTP(saga.Env{Store: db.NewStore(nil), Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Lookup: func(string) (string, bool) { return "", false }})
	require.NoError(t, err)
	return routes
}

// codecMount is where the codec server is mounted, for every method (gin's
// Any); the methods its documented paths don't list it answers itself (405).
const codecMount = "/codec/*op"

func TestOpenAPIDocumentsEveryRoute(t *testing.T) {
	c := loadContract(t)
	documented := map[string]bool{}
	var codecDocumented []string
	for _, d := range c.Documents {
		for _, op := range d.Operations() {
			key := op.String()
			require.False(t, documented[key], "%s is in two documents", key)
			documented[key] = true
			if strings.HasPrefix(op.Path, "/codec/") {
				codecDocumented = append(codecDocumented, key)
			}
		}
	}

	served := map[string]bool{}
	var codecMethods []string
	for _, r := range contractRouter(t).Routes() {
		if r.Path == codecMount {
			codecMethods = append(codecMethods, r.Method)
			continue
		}
		served[r.Method+" "+ginPathToOpenAPI(r.Path)] = true
	}
	for key := range served {
		require.True(t, documented[key], "gin serves %s, which no document has", key)
	}
	for key := range documented {
		if !strings.HasPrefix(strings.Fields(key)[1], "/codec/") {
			require.True(t, served[key], "a document has %s, which gin does not serve", key)
		}
	}
	// The codec server: its documented operations are under its mount and
	// use methods the mount takes.
	require.NotEmpty(t, codecDocumented)
	for _, key := range codecDocumented {
		require.Contains(t, codecMethods, strings.Fields(key)[0], "%s: the codec mount does not take the method", key)
	}
	for _, want := range []string{"POST /codec/decode", "POST /codec/encode", "OPTIONS /codec/decode", "OPTIONS /codec/encode"} {
		require.Contains(t, codecDocumented, want)
	}
}

// ginPathToOpenAPI writes gin's /pix/credits/:end_to_end_id as
// /pix/credits/{end_to_end_id}, and a catch-all's last segment
// (/pix/med/quarantine/:kind/*id) as a parameter too: its value is one
// path parameter, a '/' in it sent percent-encoded.
func ginPathToOpenAPI(path string) string {
	parts := strings.Split(path, "/")
	for i, p := range parts {
		if name, ok := strings.CutPrefix(p, ":"); ok {
			parts[i] = "{" + name + "}"
		} else if name, ok := strings.CutPrefix(p, "*"); ok && i == len(parts)-1 {
			parts[i] = "{" + name + "}"
		}
	}
	return strings.Join(parts, "/")
}

// Every error code the service can answer is documented, and every code
// documented is one the service has: the business kinds (pix.Kinds, every
// saga's: this package links saga/registry, at
// their own status), the HTTP layer's Code constants, the codec server's
// codes. A new kind or code can't go undocumented, nor a removed one stay.
func TestOpenAPIDocumentsEveryErrorCode(t *testing.T) {
	c := loadContract(t)
	documentedAt := map[string][]string{} // code → "status operation"
	for _, d := range c.Documents {
		for _, op := range d.Operations() {
			for status, codes := range op.ErrorCodes() {
				for _, code := range codes {
					documentedAt[code] = append(documentedAt[code], status+" "+op.String())
				}
			}
		}
	}

	known := map[string]bool{}
	for _, k := range pix.Kinds {
		if k.Status == 0 {
			continue
		}
		known[k.Code] = true
		atItsStatus := slices.ContainsFunc(documentedAt[k.Code], func(at string) bool {
			return strings.HasPrefix(at, strconv.Itoa(k.Status)+" ")
		})
		require.True(t, atItsStatus, "kind %v: code %s is documented at %v, never at its status %d", k.Err, k.Code, documentedAt[k.Code], k.Status)
	}
	// Answered only to a path no document has, or a method a path does
	// not document (the router's NoRoute and NoMethod, the codec server's
	// own): no operation can list them; the documents' descriptions say so.
	undocumentable := map[string]bool{api.CodeNotFound: true, api.CodeMethodNotAllowed: true}
	httpCodes := append(stringConstants(t, "../../api/errors.go", "Code"), writeErrorCodes(t, "../../internal/codec/server.go")...)
	require.Contains(t, httpCodes, api.CodeInvalidRequest, "the constants were read")
	require.Contains(t, httpCodes, "origin_not_allowed", "the codec server's codes were read")
	for _, code := range httpCodes {
		known[code] = true
		if !undocumentable[code] {
			require.NotEmpty(t, documentedAt[code], "code %s is answered but no document has it", code)
		}
	}
	for code, at := range documentedAt {
		require.True(t, known[code], "code %s is documented (%v) but nothing answers it", code, at)
	}
}

// stringConstants are the values of the string constants of file whose
// names start with prefix.
func stringConstants(t *testing.T, file, prefix string) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
	require.NoError(t, err)
	var values []string
	for _, decl := range f.Decls {
		gen, ok := decl.(*ast.GenDecl)
		if !ok || gen.Tok != token.CONST {
			continue
		}
		for _, spec := range gen.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, name := range vs.Names {
				if lit, ok := vs.Values[i].(*ast.BasicLit); ok && strings.HasPrefix(name.Name, prefix) && lit.Kind == token.STRING {
					v, err := strconv.Unquote(lit.Value)
					require.NoError(t, err)
					values = append(values, v)
				}
			}
		}
	}
	return values
}

// writeErrorCodes are the codes the calls writeError(w, status, "code",
// ...) of file answer.
func writeErrorCodes(t *testing.T, file string) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
	require.NoError(t, err)
	var codes []string
	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok || len(call.Args) < 3 {
			return true
		}
		if id, ok := call.Fun.(*ast.Ident); ok && id.Name == "writeError" {
			if lit, ok := call.Args[2].(*ast.BasicLit); ok && lit.Kind == token.STRING {
				v, err := strconv.Unquote(lit.Value)
				require.NoError(t, err)
				codes = append(codes, v)
			}
		}
		return true
	})
	return codes
}

// The documents are served as they are kept: the YAML itself, and JSON
// that holds exactly what the YAML holds.
func TestOpenAPIServesItsDocuments(t *testing.T) {
	router := contractRouter(t)
	for _, name := range openapi.Names {
		get := func(path string) *httptest.ResponseRecorder {
			w := httptest.NewRecorder()
			router.ServeHTTP(w, httptest.NewRequest(http.MethodGet, path, nil))
			require.Equal(t, http.StatusOK, w.Code, path)
			return w
		}
		y := get("/openapi/" + name + ".yaml")
		require.Equal(t, "application/yaml; charset=utf-8", y.Header().Get("Content-Type"))
		require.Equal(t, string(openapi.YAML(name)), y.Body.String())

		j := get("/openapi/" + name + ".json")
		require.Equal(t, "application/json; charset=utf-8", j.Header().Get("Content-Type"))
		var fromJSON, fromYAML any
		require.NoError(t, json.Unmarshal(j.Body.Bytes(), &fromJSON))
		require.NoError(t, yaml.Unmarshal(openapi.YAML(name), &fromYAML))
		require.Equal(t, jsonShaped(t, fromYAML), fromJSON, "%s.json holds what %s.yaml holds", name, name)
	}
}

// jsonShaped is v (decoded from YAML) as encoding/json would decode it.
func jsonShaped(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	var out any
	require.NoError(t, json.Unmarshal(b, &out))
	return out
}

// The error envelope is one schema: the two documents' copies (each
// document stands alone) are the same.
func TestOpenAPIErrorEnvelopeIsTheSameInEveryDocument(t *testing.T) {
	var first map[string]any
	for _, name := range openapi.Names {
		var doc struct {
			Components struct {
				Schemas map[string]any `yaml:"schemas"`
			} `yaml:"components"`
		}
		require.NoError(t, yaml.Unmarshal(openapi.YAML(name), &doc))
		envelope := map[string]any{"Error": doc.Components.Schemas["Error"], "ErrorDetail": doc.Components.Schemas["ErrorDetail"]}
		require.NotNil(t, envelope["Error"], name)
		require.NotNil(t, envelope["ErrorDetail"], name)
		if first == nil {
			first = envelope
			continue
		}
		require.Equal(t, first, envelope, "%s's error envelope differs from %s's", name, openapi.Names[0])
	}
}
