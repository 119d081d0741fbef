package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/internal/cli"
)

// webhookPSP is a PSP's webhook registration (PUT, GET, DELETE
// /webhook/{chave}) under /api/v2, behind an OAuth 2.0 token endpoint
// that takes one client secret.
type webhookPSP struct {
	mu       sync.Mutex
	hooks    map[string]string
	requests []string // method path authorization
}

func (p *webhookPSP) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/oauth/token" {
		if _, secret, _ := r.BasicAuth(); secret != "the-secret" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = io.WriteString(w, `{"error":"invalid_client","error_description":"secret `+secret+` unknown"}`)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"access_token":"tok","token_type":"Bearer","expires_in":3600}`)
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.requests = append(p.requests, r.Method+" "+r.URL.EscapedPath()+" "+r.Header.Get("Authorization"))
	chave, ok := strings.CutPrefix(r.URL.Path, "/api/v2/webhook/")
	if !ok {
		http.NotFound(w, r)
		return
	}
	problem := func(status int, name string) {
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(status)
		_, _ = fmt.Fprintf(w, `{"type":"https://pix.bcb.gov.br/api/v2/error/%s","title":"%s","status":%d}`, name, name, status)
	}
	switch r.Method {
	case http.MethodPut:
		var body struct {
			WebhookURL string `json:"webhookUrl"`
		}
		if json.NewDecoder(r.Body).Decode(&body) != nil || chave != "maria@example.com" {
			problem(http.StatusBadRequest, "WebhookOperacaoInvalida")
			return
		}
		p.hooks[chave] = body.WebhookURL
	case http.MethodGet:
		url, ok := p.hooks[chave]
		if !ok {
			problem(http.StatusNotFound, "NaoEncontrado")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]string{"webhookUrl": url, "chave": chave, "criacao": "2026-12-01T12:00:00Z"})
	case http.MethodDelete:
		if _, ok := p.hooks[chave]; !ok {
			problem(http.StatusNotFound, "NaoEncontrado")
			return
		}
		delete(p.hooks, chave)
		w.WriteHeader(http.StatusNoContent)
	}
}

func TestPSPWebhook(t *testing.T) {
	t.Parallel()
	p := &webhookPSP{hooks: map[string]string{}}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	getenv := env("PSP_URL", srv.URL+"/api/v2", "PSP_OAUTH_TOKEN_URL", srv.URL+"/oauth/token",
		"PSP_CLIENT_ID", "bank", "PSP_CLIENT_SECRET", "the-secret")

	r := pixctl(t, getenv, "psp", "webhook", "set", "maria@example.com", "https://bank.example/webhooks")
	r.requireStatus(t, 0)
	require.Contains(t, r.stdout, "https://bank.example/webhooks/pix")

	r = pixctl(t, getenv, "psp", "webhook", "get", "maria@example.com", "-o", "json")
	r.requireStatus(t, 0)
	var got map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &got))
	require.Equal(t, "https://bank.example/webhooks", got["webhookUrl"])

	r = pixctl(t, getenv, "psp", "webhook", "delete", "maria@example.com")
	r.requireStatus(t, 0)
	require.Contains(t, r.stdout, "removed")

	// No webhook, or a key the PSP refuses: a problem found.
	pixctl(t, getenv, "psp", "webhook", "get", "maria@example.com").requireStatus(t, cli.ExitProblem)
	pixctl(t, getenv, "psp", "webhook", "delete", "maria@example.com").requireStatus(t, cli.ExitProblem)
	pixctl(t, getenv, "psp", "webhook", "set", "joao@example.com", "https://bank.example/webhooks").requireStatus(t, cli.ExitProblem)

	p.mu.Lock()
	require.Equal(t, "PUT /api/v2/webhook/maria@example.com Bearer tok", p.requests[0])
	calls := len(p.requests)
	p.mu.Unlock()

	// Usage: a verb or argument missing, a URL the PSP could only refuse,
	// settings that do not go together; nothing sent.
	for _, args := range [][]string{
		{"psp", "webhook"},
		{"psp", "webhook", "put", "maria@example.com"},
		{"psp", "webhook", "set", "maria@example.com"},
		{"psp", "webhook", "get", "maria@example.com", "extra"},
		{"psp", "webhook", "set", "maria@example.com", "http://bank.example/webhooks"},
	} {
		pixctl(t, getenv, args...).requireStatus(t, cli.ExitUsage)
	}
	noSecret := env("PSP_URL", srv.URL+"/api/v2", "PSP_OAUTH_TOKEN_URL", srv.URL+"/oauth/token", "PSP_CLIENT_ID", "bank")
	pixctl(t, noSecret, "psp", "webhook", "get", "maria@example.com").requireStatus(t, cli.ExitUsage)
	p.mu.Lock()
	require.Len(t, p.requests, calls)
	p.mu.Unlock()

	// Credentials refused by the token endpoint: could not ask, and the
	// secret is never printed.
	wrong := env("PSP_URL", srv.URL+"/api/v2", "PSP_OAUTH_TOKEN_URL", srv.URL+"/oauth/token",
		"PSP_CLIENT_ID", "bank", "PSP_CLIENT_SECRET", "wrong-secret")
	r = pixctl(t, wrong, "psp", "webhook", "get", "maria@example.com")
	r.requireStatus(t, cli.ExitUnavailable)
	require.Contains(t, r.stderr, "invalid_client")
	require.NotContains(t, r.stderr+r.stdout, "wrong-secret")

	// The PSP down: could not ask.
	down := env("PSP_URL", "http://127.0.0.1:1/api/v2")
	r = pixctl(t, down, "psp", "webhook", "get", "maria@example.com")
	r.requireStatus(t, cli.ExitUnavailable)
	require.Contains(t, r.stderr, "PSP_OAUTH_TOKEN_URL unset")
}
