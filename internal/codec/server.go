package codec

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"

	"go.temporal.io/sdk/converter"
)

// DefaultMaxRequestBytes bounds a codec server request: the Temporal UI
// sends one page of a history's payloads at a time.
const DefaultMaxRequestBytes = 4 << 20

// ServerOptions configure the codec server's handler.
type ServerOptions struct {
	// AllowedOrigins are the browser origins that may call the handler:
	// the Temporal UI's (for example http://127.0.0.1:8233). Empty: no
	// browser may; the CLI, which sends no Origin, still can.
	AllowedOrigins []string
	// Authorize says whether a request may encode or decode: decoded
	// payloads are personal data, for operators only. Nil refuses every
	// request. CORS preflights are answered without it (a browser sends
	// them without credentials), so the caller must pass its check here
	// rather than wrap the handler in it.
	Authorize func(*http.Request) bool
	// MaxRequestBytes bounds a request's body; 0 is DefaultMaxRequestBytes.
	MaxRequestBytes int64
}

// NewServer returns the codec server's handler: POST .../encode and POST
// .../decode with a JSON {"payloads":[...]} body, as the Temporal UI and
// CLI call a codec endpoint. It matches the paths' ends, as the SDK's
// handler does, so it serves /codec/encode and /codec/decode mounted at
// /codec/ whether or not the prefix is stripped (and the UI's
// {namespace}-templated endpoints too).
func NewServer(c converter.PayloadCodec, opts ServerOptions) http.Handler {
	if opts.MaxRequestBytes <= 0 {
		opts.MaxRequestBytes = DefaultMaxRequestBytes
	}
	return &server{sdk: converter.NewPayloadCodecHTTPHandler(c), opts: opts}
}

type server struct {
	sdk  http.Handler
	opts ServerOptions
}

func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Add("Vary", "Origin")
	origin := r.Header.Get("Origin")
	if r.Method == http.MethodOptions {
		s.preflight(w, origin)
		return
	}
	if origin != "" {
		// A browser's request from another origin is refused outright,
		// not only left unreadable to it.
		if !s.allowed(origin) {
			writeError(w, http.StatusForbidden, "origin_not_allowed", "this origin may not call the codec server")
			return
		}
		// Set before the checks below, so that the UI can read their errors.
		w.Header().Set("Access-Control-Allow-Origin", origin)
		w.Header().Set("Access-Control-Allow-Credentials", "true")
	}
	if s.opts.Authorize == nil || !s.opts.Authorize(r) {
		writeError(w, http.StatusUnauthorized, "unauthorized", "the codec server needs an operator's credentials")
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST, OPTIONS")
		writeError(w, http.StatusMethodNotAllowed, "method_not_allowed", "use POST")
		return
	}
	if !strings.HasSuffix(r.URL.Path, "/encode") && !strings.HasSuffix(r.URL.Path, "/decode") {
		writeError(w, http.StatusNotFound, "not_found", "the codec server serves POST .../encode and .../decode")
		return
	}
	// Read here, bounded, so that a body too large is a 413 (the SDK's
	// handler would read it whole, and call any failure a 400).
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.opts.MaxRequestBytes))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			writeError(w, http.StatusRequestEntityTooLarge, "payload_too_large", "the request body is larger than the codec server takes")
			return
		}
		writeError(w, http.StatusBadRequest, "invalid_request", "could not read the request body")
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	// Decoded payloads are personal data: no cache keeps them.
	w.Header().Set("Cache-Control", "no-store")
	s.sdk.ServeHTTP(w, r)
}

// preflight answers a browser's CORS preflight: the allowed origin may
// POST JSON with the UI's headers and credentials.
func (s *server) preflight(w http.ResponseWriter, origin string) {
	if origin == "" || !s.allowed(origin) {
		writeError(w, http.StatusForbidden, "origin_not_allowed", "this origin may not call the codec server")
		return
	}
	h := w.Header()
	h.Set("Access-Control-Allow-Origin", origin)
	h.Set("Access-Control-Allow-Methods", "POST")
	h.Set("Access-Control-Allow-Headers", "Content-Type, X-Namespace, Authorization")
	h.Set("Access-Control-Allow-Credentials", "true")
	h.Set("Access-Control-Max-Age", "600")
	w.WriteHeader(http.StatusNoContent)
}

func (s *server) allowed(origin string) bool { return slices.Contains(s.opts.AllowedOrigins, origin) }

// writeError writes the API's error shape: {"error":{"code","message"}}.
func writeError(w http.ResponseWriter, status int, code, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{"code": code, "message": message}}) //nolint:errcheck // the client is gone
}
