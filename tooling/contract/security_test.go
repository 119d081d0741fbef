package contract_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/api"
	"github.com/pixbank/pix/api/openapi"
	"github.com/pixbank/pix/internal/auth"
	"github.com/pixbank/pix/tooling/apicontract"
)

// docs/security.md's route table and the routes' checks against the
// OpenAPI documents, which TestOpenAPIDocumentsEveryRoute holds to what
// the router serves: a route added (a saga's, whatever its scope) must be
// filed under its class in the table, and checked as its document says.

// Route classes of docs/security.md's table, as its rows name them.
const (
	classCustomer   = "customer"
	classAdmin      = "admin"
	classCodec      = "codec server"
	classWebhooks   = "PSP webhooks"
	classOperations = "operations"
	classDocuments  = "documents"
)

// securityOf is what an operation's security requirements ask, scheme by
// scheme: bearerToken's scopes, adminToken's (none).
func securityOf(op apicontract.Operation) map[string][]string {
	schemes := map[string][]string{}
	for _, req := range op.Op.Security {
		for _, s := range req {
			schemes[s.Scheme] = append(schemes[s.Scheme], s.Scopes...)
		}
	}
	return schemes
}

// classOf is the class docs/security.md files op under, by its document
// and its security.
func classOf(op apicontract.Operation) string {
	security := securityOf(op)
	_, admin := security["adminToken"]
	_, bearer := security["bearerToken"]
	switch {
	case strings.HasPrefix(op.Path, "/openapi/"):
		return classDocuments
	case op.Document == openapi.Webhooks:
		return classWebhooks
	case strings.HasPrefix(op.Path, "/codec/"):
		return classCodec
	case admin:
		return classAdmin
	case bearer:
		return classCustomer
	}
	return classOperations
}

// securityTable reads the route table of docs/security.md (## Route
// classes): each row's class (its bold name) and the routes its first cell
// names (`METHOD /path`).
func securityTable(t *testing.T) map[string][]string {
	t.Helper()
	text, err := os.ReadFile("../../docs/security.md")
	require.NoError(t, err)
	_, section, ok := strings.Cut(string(text), "\n## Route classes\n")
	require.True(t, ok, "docs/security.md has a section ## Route classes")
	section, _, _ = strings.Cut(section, "\n## ")
	row := regexp.MustCompile(`(?m)^\| \*\*([^*]+)\*\*([^|]*)\|`)
	route := regexp.MustCompile("`((?:GET|POST|PUT|PATCH|DELETE|OPTIONS|HEAD) /[^`]*)`")
	table := map[string][]string{}
	for _, m := range row.FindAllStringSubmatch(section, -1) {
		for _, r := range route.FindAllStringSubmatch(m[2], -1) {
			table[m[1]] = append(table[m[1]], r[1])
		}
	}
	require.NotEmpty(t, table, "the table's rows were read")
	return table
}

// Every documented route (so every route served) is in docs/security.md's
// table, in the row of its class, and the table names no other.
func TestSecurityRouteTableListsEveryRoute(t *testing.T) {
	documented := map[string][]string{}
	for _, d := range loadContract(t).Documents {
		for _, op := range d.Operations() {
			class := classOf(op)
			documented[class] = append(documented[class], op.String())
		}
	}
	table := securityTable(t)
	for class, routes := range documented {
		require.ElementsMatch(t, routes, table[class], "docs/security.md's row %q against the routes of that class", class)
	}
	for class := range table {
		require.Contains(t, documented, class, "docs/security.md has a row %q of no route", class)
	}
}

// scopeless verifies every token as a caller granted nothing but what its
// name says: "none" no scope, "customer" pix:read and pix:write.
type scopeless struct{}

func (scopeless) Verify(_ context.Context, token string) (auth.Caller, error) {
	switch token {
	case "none":
		return auth.Caller{Subject: "contract-none"}, nil
	case "customer":
		return auth.Caller{Subject: "contract-customer", Scopes: []string{auth.ScopeRead, auth.ScopeWrite}, Accounts: []string{"acc-1"}}, nil
	}
	return auth.Caller{}, &auth.TokenError{Reason: "unknown"}
}

// Every route the documents secure with a bearer token is refused as they
// say: 401 without a token, 403 insufficient_scope naming the scope they
// list to a token without it; an admin route refuses a customer's token
// too. The router's check of a route is the one its declared scope picks
// (api.Route.Scope), so this holds each route's scope to its document.
func TestEveryRouteIsCheckedAsItsDocumentSays(t *testing.T) {
	handler, err := api.NewRouter(api.Deps{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Tokens: scopeless{},
		AdminToken: "contract-admin-token-0123456789", Sagas: sagas(t)}, api.AllRoutes)
	require.NoError(t, err)
	param := regexp.MustCompile(`\{[^}]+\}`)
	send := func(op apicontract.Operation, token string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(op.Method, param.ReplaceAllString(op.Path, "x"), nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		w := httptest.NewRecorder()
		handler.ServeHTTP(w, req)
		return w
	}
	checked := 0
	for _, d := range loadContract(t).Documents {
		for _, op := range d.Operations() {
			class := classOf(op)
			if class != classCustomer && class != classAdmin {
				continue
			}
			scopes := securityOf(op)["bearerToken"]
			require.Len(t, scopes, 1, "%s names one scope for its bearer token", op)
			w := send(op, "")
			require.Equal(t, http.StatusUnauthorized, w.Code, "%s without a token: %s", op, w.Body)
			require.Equal(t, `Bearer realm="pix"`, w.Header().Get("WWW-Authenticate"), op.String())
			tokens := []string{"none"}
			if class == classAdmin {
				require.Equal(t, []string{auth.ScopeAdmin}, scopes, op.String())
				tokens = append(tokens, "customer")
			} else {
				require.True(t, slices.Contains([]string{auth.ScopeRead, auth.ScopeWrite}, scopes[0]), "%s: a customer route's scope", op)
			}
			for _, token := range tokens {
				w := send(op, token)
				require.Equal(t, http.StatusForbidden, w.Code, "%s with a %s token: %s", op, token, w.Body)
				require.Contains(t, w.Body.String(), `"code":"`+api.CodeInsufficientScope+`"`, op.String())
				require.Contains(t, w.Header().Get("WWW-Authenticate"), `scope="`+scopes[0]+`"`, op.String())
			}
			checked++
		}
	}
	require.Greater(t, checked, 10, "the secured routes were found")
}
