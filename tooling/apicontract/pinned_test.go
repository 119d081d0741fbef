package apicontract_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/tooling/apicontract"
)

// pinned is a small document with one of each thing the contract checks:
// the departures below are each the one thing wrong with an exchange that
// otherwise keeps to it (what libopenapi-validator found, and the checks
// that replaced it must still find).
const pinned = `openapi: 3.1.0
info: {title: pinned, version: "1"}
security:
  - bearer: []
paths:
  /things/{id}:
    parameters:
      - {name: id, in: path, required: true, schema: {type: string, maxLength: 4}}
    get:
      parameters:
        - {name: limit, in: query, schema: {type: integer, maximum: 10}}
      responses:
        '200':
          description: the thing
          headers:
            X-Version: {required: true, schema: {type: integer}}
          content:
            application/json:
              schema: {$ref: '#/components/schemas/thing'}
        4XX:
          description: a refusal
          content:
            application/problem+json:
              schema: {type: object, required: [title]}
        default:
          description: anything else
    put:
      requestBody:
        required: true
        content:
          application/json:
            # A reference by JSON pointer, escaped (~1) and URL-encoded.
            schema: {$ref: '#/paths/~1things~1%7Bid%7D/get/responses/200/content/application~1json/schema'}
            example: {id: ab, at: '2026-12-07T10:00:00Z'}
      responses:
        '204': {description: stored}
  /things/mine:
    get:
      security: []
      responses:
        '200': {description: mine, content: {text/plain: {}}}
components:
  securitySchemes:
    bearer: {type: http, scheme: bearer}
  schemas:
    thing:
      type: object
      additionalProperties: false
      required: [id, at]
      properties:
        id: {type: string, examples: [ab]}
        at: {type: string, format: date-time}
`

func pinnedContract(t *testing.T, source string) *apicontract.Contract {
	t.Helper()
	d, err := apicontract.NewDocument("pinned", []byte(source), apicontract.Options{})
	require.NoError(t, err)
	return &apicontract.Contract{Documents: []*apicontract.Document{d}}
}

const thing = `{"id":"ab","at":"2026-12-07T10:00:00Z"}`

func bearer() http.Header {
	return http.Header{"Authorization": {"Bearer t"}, "Content-Type": {"application/json"}}
}

func TestPinnedDocumentKeepsToItself(t *testing.T) {
	t.Parallel()
	c := pinnedContract(t, pinned)
	require.NoError(t, c.Documents[0].Validate())
	require.Empty(t, c.Documents[0].ExampleProblems())
	for _, ex := range []apicontract.Exchange{
		{Method: "GET", Target: "/things/ab?limit=3", RequestHeader: bearer(), Status: 200,
			ResponseHeader: http.Header{"Content-Type": {"application/json; charset=utf-8"}, "X-Version": {"2"}}, ResponseBody: []byte(thing)},
		{Method: "GET", Target: "/things/ab", RequestHeader: bearer(), Status: 404,
			ResponseHeader: http.Header{"Content-Type": {"application/problem+json"}}, ResponseBody: []byte(`{"title":"no"}`)},
		{Method: "GET", Target: "/things/ab", RequestHeader: bearer(), Status: 500},
		{Method: "PUT", Target: "/things/ab", RequestHeader: bearer(), RequestBody: []byte(thing), Status: 204},
		// The literal path wins over the template (whose id it would
		// break), and it asks for no token.
		{Method: "GET", Target: "/things/mine", Status: 200, ResponseHeader: http.Header{"Content-Type": {"text/plain"}}, ResponseBody: []byte("x")},
		// A refused request refused: no departure.
		{Method: "GET", Target: "/things/ab?limit=11", Status: 400,
			ResponseHeader: http.Header{"Content-Type": {"application/problem+json"}}, ResponseBody: []byte(`{"title":"no"}`)},
	} {
		require.Empty(t, c.Check(ex).Problems, "%s", ex)
	}
}

func TestPinnedDepartures(t *testing.T) {
	t.Parallel()
	c := pinnedContract(t, pinned)
	ok := http.Header{"Content-Type": {"application/json"}, "X-Version": {"2"}}
	cases := map[string]struct {
		ex   apicontract.Exchange
		want []string
	}{
		"a body its schema refuses": {apicontract.Exchange{Method: "GET", Target: "/things/ab", RequestHeader: bearer(), Status: 200,
			ResponseHeader: ok, ResponseBody: []byte(`{"id":"ab","at":"2026-12-07T10:00:00Z","extra":1}`)},
			[]string{"the answer is not what the document says", "/: additional properties 'extra' not allowed", "additionalProperties"}},
		"an undocumented status": {apicontract.Exchange{Method: "PUT", Target: "/things/ab", RequestHeader: bearer(),
			RequestBody: []byte(thing), Status: 200}, []string{"status 200 is not documented for PUT /things/{id}"}},
		"a required header missing": {apicontract.Exchange{Method: "GET", Target: "/things/ab", RequestHeader: bearer(), Status: 200,
			ResponseHeader: http.Header{"Content-Type": {"application/json"}}, ResponseBody: []byte(thing)},
			[]string{"response header 'X-Version' is required"}},
		"a header its schema refuses": {apicontract.Exchange{Method: "GET", Target: "/things/ab", RequestHeader: bearer(), Status: 200,
			ResponseHeader: http.Header{"Content-Type": {"application/json"}, "X-Version": {"two"}}, ResponseBody: []byte(thing)},
			[]string{"response header 'X-Version' does not keep to its schema"}},
		"a date-time that is not one": {apicontract.Exchange{Method: "GET", Target: "/things/ab", RequestHeader: bearer(), Status: 200,
			ResponseHeader: ok, ResponseBody: []byte(`{"id":"ab","at":"2026-12-07 10:00"}`)},
			[]string{"/at: '2026-12-07 10:00' is not valid date-time", "/format"}},
		"an undocumented media type": {apicontract.Exchange{Method: "GET", Target: "/things/ab", RequestHeader: bearer(), Status: 200,
			ResponseHeader: http.Header{"Content-Type": {"text/html"}, "X-Version": {"2"}}, ResponseBody: []byte(thing)},
			[]string{`Content-Type "text/html" is not documented`}},
		"an unknown route": {apicontract.Exchange{Method: "GET", Target: "/others/ab", Status: 200},
			[]string{"no document has the route GET /others/ab"}},
		"a body the document refuses, accepted": {apicontract.Exchange{Method: "PUT", Target: "/things/ab", RequestHeader: bearer(),
			RequestBody: []byte(`{"id":"ab"}`), Status: 204}, []string{"the document refuses the request", "missing property 'at'"}},
		"a parameter over its maximum, served": {apicontract.Exchange{Method: "GET", Target: "/things/ab?limit=11", RequestHeader: bearer(),
			Status: 200, ResponseHeader: ok, ResponseBody: []byte(thing)},
			[]string{"the document refuses the request", "query parameter 'limit'", "maximum"}},
		"a path parameter too long, served": {apicontract.Exchange{Method: "GET", Target: "/things/abcde", RequestHeader: bearer(),
			Status: 200, ResponseHeader: ok, ResponseBody: []byte(thing)}, []string{"path parameter 'id'", "maxLength"}},
		"no bearer token, served": {apicontract.Exchange{Method: "GET", Target: "/things/ab", Status: 200,
			ResponseHeader: ok, ResponseBody: []byte(thing)}, []string{"the document refuses the request", "bearer: no bearer token"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			problems := strings.Join(c.Check(tc.ex).Problems, "\n")
			for _, want := range tc.want {
				require.Contains(t, problems, want)
			}
		})
	}
}

func TestPinnedDocumentDefects(t *testing.T) {
	t.Parallel()
	_, err := apicontract.NewDocument("pinned", []byte(strings.Replace(pinned, "application~1json/schema'}", "application~1jsn/schema'}", 1)), apicontract.Options{})
	require.ErrorContains(t, err, "references that resolve to nothing: #/paths/~1things~1%7Bid%7D/get/responses/200/content/application~1jsn/schema",
		"a dangling $ref, named")

	_, err = apicontract.NewDocument("pinned", []byte(strings.Replace(pinned, "openapi: 3.1.0", "openapi: 3.0.3", 1)), apicontract.Options{})
	require.ErrorContains(t, err, `openapi "3.0.3", want 3.1.x`)

	noInfo := pinnedContract(t, strings.Replace(pinned, "info: {title: pinned, version: \"1\"}\n", "", 1))
	require.ErrorContains(t, noInfo.Documents[0].Validate(), "missing property 'info'")

	badExamples := pinnedContract(t, strings.NewReplacer("examples: [ab]", "examples: [7]",
		"example: {id: ab, at: '2026-12-07T10:00:00Z'}", "example: {id: ab, at: yesterday}").Replace(pinned))
	problems := strings.Join(badExamples.Documents[0].ExampleProblems(), "\n")
	require.Contains(t, problems, "PUT /things/{id} request application/json example does not keep to its schema: /at: 'yesterday' is not valid date-time")
	require.Contains(t, problems, "schema thing.id examples[0] does not keep to its schema: /: got number, want string")
}

// The contract is checked from many goroutines at once (the e2e tests'
// recorders, pspspec's servers): its schemas compile once, safely.
func TestPinnedConcurrentChecks(t *testing.T) {
	t.Parallel()
	c := pinnedContract(t, pinned)
	ex := apicontract.Exchange{Method: "GET", Target: "/things/ab", RequestHeader: bearer(), Status: 200,
		ResponseHeader: http.Header{"Content-Type": {"application/json"}, "X-Version": {"2"}}, ResponseBody: []byte(thing)}
	done := make(chan []string)
	for range 8 {
		go func() { done <- c.Check(ex).Problems }()
	}
	for range 8 {
		require.Empty(t, <-done)
	}
}
