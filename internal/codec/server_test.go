package codec_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/pixbank/pix/internal/codec"
)

const uiOrigin = "http://127.0.0.1:8233"

// newTestServer serves the codec server as the API mounts it, at /codec/,
// authorizing the requests that carry the operator's token.
func newTestServer(t *testing.T, c *codec.Codec) *httptest.Server {
	t.Helper()
	h := codec.NewServer(c, codec.ServerOptions{
		AllowedOrigins:  []string{uiOrigin},
		Authorize:       func(r *http.Request) bool { return r.Header.Get("Authorization") == "Bearer operator" },
		MaxRequestBytes: 64 << 10,
	})
	mux := http.NewServeMux()
	mux.Handle("/codec/", h)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func call(t *testing.T, method, url string, header http.Header, body []byte) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	require.NoError(t, err)
	req.Header = header
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	var out bytes.Buffer
	_, err = out.ReadFrom(res.Body)
	require.NoError(t, err)
	return res, out.Bytes()
}

// payloadsJSON is the body the Temporal UI posts: {"payloads":[...]} in
// protojson.
func payloadsJSON(t *testing.T, payloads []*commonpb.Payload) []byte {
	t.Helper()
	b, err := protojson.Marshal(&commonpb.Payloads{Payloads: payloads})
	require.NoError(t, err)
	return b
}

func operator() http.Header {
	return http.Header{"Content-Type": {"application/json"}, "Authorization": {"Bearer operator"}, "X-Namespace": {"default"}}
}

func TestServerEncodeDecodeRoundTrip(t *testing.T) {
	c := mustCodec(t, "k1="+testKey(1))
	srv := newTestServer(t, c)
	plain := []*commonpb.Payload{plainPayload(t, memo)}

	res, body := call(t, http.MethodPost, srv.URL+"/codec/encode", operator(), payloadsJSON(t, plain))
	require.Equal(t, http.StatusOK, res.StatusCode, "%s", body)
	require.Equal(t, "no-store", res.Header.Get("Cache-Control"))
	require.NotContains(t, string(body), "Joana")
	var encoded commonpb.Payloads
	require.NoError(t, protojson.Unmarshal(body, &encoded))
	require.Equal(t, codec.EncodingEncrypted, string(encoded.Payloads[0].Metadata[codec.MetadataEncoding]))

	// Decoded as the UI asks, from its origin.
	h := operator()
	h.Set("Origin", uiOrigin)
	res, body = call(t, http.MethodPost, srv.URL+"/codec/decode", h, payloadsJSON(t, encoded.Payloads))
	require.Equal(t, http.StatusOK, res.StatusCode, "%s", body)
	require.Equal(t, uiOrigin, res.Header.Get("Access-Control-Allow-Origin"))
	require.Equal(t, "true", res.Header.Get("Access-Control-Allow-Credentials"))
	var decoded commonpb.Payloads
	require.NoError(t, protojson.Unmarshal(body, &decoded))
	require.True(t, plain[0].Equal(decoded.Payloads[0]))
	require.Contains(t, string(decoded.Payloads[0].Data), "Joana Dias")

	// A payload of an unknown key is the SDK handler's 400, naming the id.
	other, err := mustCodec(t, "gone="+testKey(9)).Encode(plain)
	require.NoError(t, err)
	res, body = call(t, http.MethodPost, srv.URL+"/codec/decode", operator(), payloadsJSON(t, other))
	require.Equal(t, http.StatusBadRequest, res.StatusCode)
	require.Contains(t, string(body), `"gone"`)
}

func TestServerPreflight(t *testing.T) {
	srv := newTestServer(t, mustCodec(t, "k1="+testKey(1)))
	preflight := func(origin string) *http.Response {
		h := http.Header{"Access-Control-Request-Method": {"POST"}, "Access-Control-Request-Headers": {"content-type,x-namespace,authorization"}}
		if origin != "" {
			h.Set("Origin", origin)
		}
		// No credentials: a browser sends none on a preflight.
		res, _ := call(t, http.MethodOptions, srv.URL+"/codec/decode", h, nil)
		return res
	}
	res := preflight(uiOrigin)
	require.Equal(t, http.StatusNoContent, res.StatusCode)
	require.Equal(t, uiOrigin, res.Header.Get("Access-Control-Allow-Origin"))
	require.Equal(t, "POST", res.Header.Get("Access-Control-Allow-Methods"))
	require.Equal(t, "Content-Type, X-Namespace, Authorization", res.Header.Get("Access-Control-Allow-Headers"))
	require.Equal(t, "true", res.Header.Get("Access-Control-Allow-Credentials"))
	require.Contains(t, res.Header.Values("Vary"), "Origin")

	for _, origin := range []string{"https://evil.example", "http://127.0.0.1:8234", ""} {
		res := preflight(origin)
		require.Equal(t, http.StatusForbidden, res.StatusCode, "origin %q", origin)
		require.Empty(t, res.Header.Get("Access-Control-Allow-Origin"))
	}

	// A request from a refused origin is refused too, even with credentials.
	h := operator()
	h.Set("Origin", "https://evil.example")
	res, _ = call(t, http.MethodPost, srv.URL+"/codec/decode", h, payloadsJSON(t, nil))
	require.Equal(t, http.StatusForbidden, res.StatusCode)
	require.Empty(t, res.Header.Get("Access-Control-Allow-Origin"))
}

func TestServerRefusesUnauthorized(t *testing.T) {
	c := mustCodec(t, "k1="+testKey(1))
	enc, err := c.Encode([]*commonpb.Payload{plainPayload(t, memo)})
	require.NoError(t, err)
	srv := newTestServer(t, c)
	for name, h := range map[string]http.Header{
		"no credentials": {"Content-Type": {"application/json"}, "Origin": {uiOrigin}},
		"wrong token":    {"Content-Type": {"application/json"}, "Authorization": {"Bearer guess"}},
	} {
		t.Run(name, func(t *testing.T) {
			res, body := call(t, http.MethodPost, srv.URL+"/codec/decode", h, payloadsJSON(t, enc))
			require.Equal(t, http.StatusUnauthorized, res.StatusCode)
			require.NotContains(t, string(body), "Joana")
			var e struct {
				Error struct{ Code, Message string }
			}
			require.NoError(t, json.Unmarshal(body, &e), "%s", body)
			require.Equal(t, "unauthorized", e.Error.Code)
			require.NotEmpty(t, e.Error.Message)
			if h.Get("Origin") != "" {
				require.Equal(t, uiOrigin, res.Header.Get("Access-Control-Allow-Origin"), "the UI can read the refusal")
			}
		})
	}

	// Nil Authorize refuses every request.
	closed := httptest.NewServer(codec.NewServer(c, codec.ServerOptions{}))
	defer closed.Close()
	res, _ := call(t, http.MethodPost, closed.URL+"/codec/decode", operator(), payloadsJSON(t, enc))
	require.Equal(t, http.StatusUnauthorized, res.StatusCode)
}

func TestServerRefusesOtherRequests(t *testing.T) {
	srv := newTestServer(t, mustCodec(t, "k1="+testKey(1)))
	res, _ := call(t, http.MethodGet, srv.URL+"/codec/decode", operator(), nil)
	require.Equal(t, http.StatusMethodNotAllowed, res.StatusCode)
	res, _ = call(t, http.MethodPost, srv.URL+"/codec/other", operator(), payloadsJSON(t, nil))
	require.Equal(t, http.StatusNotFound, res.StatusCode)
	res, _ = call(t, http.MethodPost, srv.URL+"/codec/decode", operator(), []byte("{not json"))
	require.Equal(t, http.StatusBadRequest, res.StatusCode)
	big := []byte(`{"payloads":[{"data":"` + strings.Repeat("A", 80<<10) + `"}]}`)
	res, body := call(t, http.MethodPost, srv.URL+"/codec/encode", operator(), big)
	require.Equal(t, http.StatusRequestEntityTooLarge, res.StatusCode, "%s", body)
	require.Contains(t, string(body), "payload_too_large")
}
