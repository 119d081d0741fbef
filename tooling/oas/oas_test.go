package oas_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/tooling/oas"
)

// doc has what apicontract's pinned document leaves out: arrays in
// parameters, answers by range and default, media type ranges.
const doc = `openapi: 3.1.0
info: {title: t, version: "1"}
paths:
  /a/{name}:
    get:
      parameters:
        - {name: name, in: path, required: true, schema: {type: string, pattern: '^[a-z ]+$'}}
        - {name: ids, in: query, schema: {type: array, items: {type: integer}, maxItems: 2}}
        - {name: tags, in: query, explode: false, schema: {type: array, items: {type: string, enum: [x, y]}}}
        - {name: X-Flags, in: header, schema: {type: array, items: {type: boolean}}}
      responses:
        '404': {description: exact, headers: {X-Exact: {required: true, schema: {type: string}}}}
        4XX: {description: range, headers: {X-Range: {required: true, schema: {type: string}}}}
        default: {description: any, headers: {X-Default: {required: true, schema: {type: string}}}}
        '200':
          description: ok
          content:
            application/*+json: {schema: {type: object, required: [ok]}}
            text/*: {}
`

func parse(t *testing.T) *oas.Document {
	t.Helper()
	d, err := oas.Parse("t", []byte(doc))
	require.NoError(t, err)
	require.NoError(t, d.Validate())
	return d
}

func request(t *testing.T, d *oas.Document, target string, header http.Header) []*oas.Error {
	t.Helper()
	r := httptest.NewRequest("GET", target, nil)
	r.Header = header
	rt := d.FindRoute("GET", r.URL.EscapedPath())
	require.NotNil(t, rt)
	return d.ValidateRequest(rt, r, nil, nil)
}

func TestParametersAsTheirStyleSays(t *testing.T) {
	t.Parallel()
	d := parse(t)
	// A path parameter percent-decoded; form arrays exploded, or not;
	// header arrays comma-separated; each item of its type.
	require.Empty(t, request(t, d, "/a/two%20words?ids=1&ids=2&tags=x,y", http.Header{"X-Flags": {"true,false"}}))
	for target, want := range map[string]string{
		"/a/UPPER":                   "path parameter 'name'",
		"/a/b?ids=1&ids=2&ids=3":     "maxItems",
		"/a/b?ids=1,2":               "query parameter 'ids'",
		"/a/b?tags=x&tags=z":         "", // not exploded: the first value is the list
		"/a/b?tags=x,z":              "/1: value must be one of",
		"/a/b?ids=one":               "/0: got string, want integer",
		"/a/b?ids=1&ids=2&tags=x,yy": "tags",
	} {
		errs := request(t, d, target, nil)
		if want == "" {
			require.Empty(t, errs, target)
			continue
		}
		require.NotEmpty(t, errs, target)
		require.Contains(t, errs[0].Error(), want, target)
	}
	errs := request(t, d, "/a/b", http.Header{"X-Flags": {"true,maybe"}})
	require.NotEmpty(t, errs)
	require.Contains(t, errs[0].Error(), "header parameter 'X-Flags'")
}

func TestTheAnswerIsFoundByCodeThenRangeThenDefault(t *testing.T) {
	t.Parallel()
	d := parse(t)
	rt := d.FindRoute("GET", "/a/b")
	for status, header := range map[int]string{404: "X-Exact", 409: "X-Range", 500: "X-Default"} {
		errs := d.ValidateResponse(rt, status, http.Header{}, nil)
		require.Len(t, errs, 1)
		require.Contains(t, errs[0].Error(), "response header '"+header+"' is required", status)
		require.Empty(t, d.ValidateResponse(rt, status, http.Header{header: {"1"}}, nil))
	}
}

func TestMediaTypeRanges(t *testing.T) {
	t.Parallel()
	d := parse(t)
	rt := d.FindRoute("GET", "/a/b")
	ok := func(contentType, body string) []*oas.Error {
		return d.ValidateResponse(rt, 200, http.Header{"Content-Type": {contentType}}, []byte(body))
	}
	require.Empty(t, ok("application/problem+json; charset=utf-8", `{"ok":1}`))
	require.Empty(t, ok("text/plain", "not JSON: not read"))
	require.NotEmpty(t, ok("application/problem+json", `{}`), "application/*+json's schema")
	require.NotEmpty(t, ok("application/json", `{"ok":1}`), "not in application/*+json")
	require.NotEmpty(t, ok("application/problem+json", `{"ok":`), "not JSON")
}

func TestRoutesByPathOnly(t *testing.T) {
	t.Parallel()
	d := parse(t)
	require.Nil(t, d.FindRoute("GET", "/a"))
	require.Nil(t, d.FindRoute("GET", "/a/b/c"))
	require.Nil(t, d.FindRoute("GET", "/a/"), "an empty segment is no parameter")
	rt := d.FindRoute("POST", "/a/b")
	require.NotNil(t, rt, "the path is documented")
	require.Nil(t, rt.Operation, "the method is not")
}

func TestCompiledSchemasAreSharedAcrossGoroutines(t *testing.T) {
	t.Parallel()
	d := parse(t)
	rt := d.FindRoute("GET", "/a/b")
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for range 16 {
		wg.Go(func() {
			if es := d.ValidateResponse(rt, 200, http.Header{"Content-Type": {"application/x+json"}}, []byte(`{}`)); len(es) != 1 {
				errs <- errors.New("want one error")
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
}

func TestAReferenceMustBeLocal(t *testing.T) {
	t.Parallel()
	_, err := oas.Parse("t", []byte(strings.Replace(doc, "{type: string, pattern: '^[a-z ]+$'}", "{$ref: 'other.yaml#/x'}", 1)))
	require.ErrorContains(t, err, "other.yaml#/x at /paths/~1a~1{name}/get/parameters/0/schema (not a local reference)")
}
