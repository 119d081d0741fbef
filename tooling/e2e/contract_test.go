//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/api/openapi"
	"github.com/pixbank/pix/cmd/pixd/app"
	"github.com/pixbank/pix/tooling/apicontract"
)

// The OpenAPI contract (api/openapi) holds for every exchange the tests
// have with the service: each stack's API records its exchanges (server
// side, so every client is seen, the tests' helpers, http.DefaultClient,
// pixload, the Temporal CLI's codec calls; the PSP simulator is another
// server and is not), and when the test ends each is checked against the
// documents: an undocumented route or method, an undocumented status, a
// missing header the document requires, a body that is not the documented
// shape, or a request the document refuses answered with success fails the
// test.

// contract is the documents, loaded once for the package.
var contract = sync.OnceValues(func() (*apicontract.Contract, error) {
	return apicontract.Load(apicontract.Options{AdminToken: e2eAdminToken})
})

// contractCoverage counts the checked exchanges by documented operation
// and status, over the package's run (TestMain reports it).
var contractCoverage struct {
	mu   sync.Mutex
	seen map[string]int
	n    int
}

// recordContract has a's API record its exchanges, checked against the
// documents when the test ends. Call it before the stack's own cleanup is
// registered, so that the check runs after the API has stopped.
func recordContract(t *testing.T, a *app.App) {
	t.Helper()
	rec := &apicontract.Recorder{}
	a.WrapHTTP = rec.Wrap
	t.Cleanup(func() { checkContract(t, rec.Exchanges()) })
}

// maxContractReports bounds the departures reported per test.
const maxContractReports = 20

func checkContract(t *testing.T, exchanges []apicontract.Exchange) {
	t.Helper()
	c, err := contract()
	if err != nil {
		t.Errorf("the OpenAPI documents: %v", err)
		return
	}
	results, reports := c.CheckAll(exchanges)
	for i, res := range results {
		noteCoverage(res, exchanges[i].Status)
	}
	for i, r := range reports {
		if i == maxContractReports {
			t.Errorf("the OpenAPI contract: %d more departures", len(reports)-i)
			break
		}
		t.Errorf("the OpenAPI contract does not hold: %s", r)
	}
}

func noteCoverage(res apicontract.Result, status int) {
	contractCoverage.mu.Lock()
	defer contractCoverage.mu.Unlock()
	if contractCoverage.seen == nil {
		contractCoverage.seen = map[string]int{}
	}
	contractCoverage.n++
	if res.Operation != "" {
		contractCoverage.seen[fmt.Sprintf("%s %d", res.Operation, status)]++
	}
}

// reportContractCoverage prints how many exchanges were checked and the
// documented answers no test produced (informational: some, such as a 500,
// no test should produce).
func reportContractCoverage(w io.Writer) {
	contractCoverage.mu.Lock()
	defer contractCoverage.mu.Unlock()
	c, err := contract()
	if err != nil || contractCoverage.n == 0 {
		return
	}
	var unseen []string
	for _, d := range c.Documents {
		for _, op := range d.Operations() {
			for _, res := range op.Op.Responses {
				if contractCoverage.seen[op.String()+" "+res.Status] == 0 {
					unseen = append(unseen, op.String()+" "+res.Status)
				}
			}
		}
	}
	slices.Sort(unseen)
	fmt.Fprintf(w, "openapi: %d exchanges checked against the documents; documented answers no test produced (%d): %s\n",
		contractCoverage.n, len(unseen), strings.Join(unseen, ", "))
}

// The documents are served by the API, the JSON form holding what the YAML
// does (and the exchanges are checked like any other).
func TestServesItsOpenAPIDocuments(t *testing.T) {
	s := newStack(t, shared, nil)
	for _, name := range openapi.Names {
		res, err := http.Get(s.baseURL + "/openapi/" + name + ".json")
		require.NoError(t, err)
		body, err := io.ReadAll(res.Body)
		res.Body.Close()
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, res.StatusCode)
		want, err := openapi.JSON(name)
		require.NoError(t, err)
		require.JSONEq(t, string(want), string(body))
		var doc struct {
			OpenAPI string `json:"openapi"`
		}
		require.NoError(t, json.Unmarshal(body, &doc))
		require.Equal(t, "3.1.0", doc.OpenAPI)

		res, err = http.Get(s.baseURL + "/openapi/" + name + ".yaml")
		require.NoError(t, err)
		body, err = io.ReadAll(res.Body)
		res.Body.Close()
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, res.StatusCode)
		require.Equal(t, string(openapi.YAML(name)), string(body))
	}
}
