package api_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/api"
	"github.com/pixbank/pix/db/dbtest"
	"github.com/pixbank/pix/internal/webhooksig"
)

var (
	pspAKey    = []byte("psp-a signing key, 32 bytes long")
	pspAOldKey = []byte("psp-a key being rotated out.....")
	pspBKey    = []byte("psp-b signing key, 32 bytes long")
)

func withSignatures(required bool) func(*api.Deps) {
	return func(d *api.Deps) {
		d.Signatures = webhooksig.NewVerifier([]webhooksig.Secret{
			{PSP: "psp-a", Key: pspAKey}, {PSP: "psp-a", Key: pspAOldKey}, {PSP: "psp-b", Key: pspBKey},
		}, 0, nil)
		d.RequireSignatures = required
	}
}

func signed(body, id string, at time.Time, keys ...[]byte) http.Header {
	h := http.Header{"Content-Type": {"application/json"}}
	webhooksig.SetHeaders(h, id, at, []byte(body), keys...)
	return h
}

func TestWebhookSignatures(t *testing.T) {
	store := dbtest.New(t)
	srv := newServer(t, store, withSignatures(true))
	url := srv.URL + "/webhooks/pix"
	n := 0
	body := func() string {
		n++
		return `{"end_to_end_id":"E12345678202611291200` + strings.Repeat("0", 10) + strconv.Itoa(n%10) + `","account_id":"acc-1","amount_cents":100}`
	}
	now := time.Now()

	refused := []struct {
		name string
		h    func(b string) http.Header
		code string
	}{
		{"unsigned", func(string) http.Header { return http.Header{"Content-Type": {"application/json"}} }, api.CodeSignatureMissing},
		{"signature header missing", func(b string) http.Header {
			h := signed(b, "msg_1", now, pspAKey)
			h.Del("webhook-signature")
			return h
		}, api.CodeSignatureMissing},
		{"timestamp header missing", func(b string) http.Header {
			h := signed(b, "msg_1", now, pspAKey)
			h.Del("webhook-timestamp")
			return h
		}, api.CodeSignatureMissing},
		{"unknown key", func(b string) http.Header { return signed(b, "msg_1", now, []byte("a forger's key")) }, api.CodeSignatureInvalid},
		{"body changed after signing", func(b string) http.Header {
			return signed(strings.Replace(b, "100", "100000", 1), "msg_1", now, pspAKey)
		}, api.CodeSignatureInvalid},
		{"id changed after signing", func(b string) http.Header {
			h := signed(b, "msg_1", now, pspAKey)
			h.Set("webhook-id", "msg_2")
			return h
		}, api.CodeSignatureInvalid},
		{"timestamp changed after signing", func(b string) http.Header {
			h := signed(b, "msg_1", now, pspAKey)
			h.Set("webhook-timestamp", strconv.FormatInt(now.Unix()+1, 10))
			return h
		}, api.CodeSignatureInvalid},
		{"stale: a replay six minutes later", func(b string) http.Header { return signed(b, "msg_1", now.Add(-6*time.Minute), pspAKey) }, api.CodeSignatureExpired},
		{"from the future", func(b string) http.Header { return signed(b, "msg_1", now.Add(6*time.Minute), pspAKey) }, api.CodeSignatureExpired},
		{"malformed signature", func(b string) http.Header {
			h := signed(b, "msg_1", now, pspAKey)
			h.Set("webhook-signature", "v1,not base64!")
			return h
		}, api.CodeSignatureInvalid},
		{"malformed timestamp", func(b string) http.Header {
			h := signed(b, "msg_1", now, pspAKey)
			h.Set("webhook-timestamp", "yesterday")
			return h
		}, api.CodeSignatureInvalid},
	}
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			b := body()
			r := doWith(t, http.DefaultClient, http.MethodPost, url, tc.h(b), b)
			require.Equal(t, http.StatusUnauthorized, r.status, "%v", r.body)
			code, _ := errorOf(t, r)
			require.Equal(t, tc.code, code)
		})
	}
	t.Run("api pix route too", func(t *testing.T) {
		b := batch(apiPixItem(t, validID, nil))
		r := doWith(t, http.DefaultClient, http.MethodPost, srv.URL+apiPixPath, http.Header{"Content-Type": {"application/json"}}, b)
		require.Equal(t, http.StatusUnauthorized, r.status)
		r = doWith(t, http.DefaultClient, http.MethodPost, srv.URL+apiPixPath, signed(b, "msg_1", now, []byte("forged")), b)
		require.Equal(t, http.StatusUnauthorized, r.status)
	})
	t.Run("unsigned with a wrong content type is 401, not 415", func(t *testing.T) {
		r := doWith(t, http.DefaultClient, http.MethodPost, url, http.Header{"Content-Type": {"text/plain"}}, body())
		require.Equal(t, http.StatusUnauthorized, r.status)
	})
	require.Zero(t, countInbox(t, store), "no refused request stored anything")

	accepted := []struct {
		name string
		h    func(b string) http.Header
		psp  string
	}{
		{"psp-a", func(b string) http.Header { return signed(b, "msg_a", now, pspAKey) }, "psp-a"},
		{"psp-a with its old key during rotation", func(b string) http.Header { return signed(b, "msg_a", now, pspAOldKey) }, "psp-a"},
		{"several signatures, one valid", func(b string) http.Header { return signed(b, "msg_a", now, []byte("stale key"), pspAKey) }, "psp-a"},
		{"psp-b", func(b string) http.Header { return signed(b, "msg_b", now, pspBKey) }, "psp-b"},
		{"just inside the tolerance", func(b string) http.Header { return signed(b, "msg_b", now.Add(-4*time.Minute), pspBKey) }, "psp-b"},
	}
	for _, tc := range accepted {
		t.Run(tc.name, func(t *testing.T) {
			b := body()
			r := doWith(t, http.DefaultClient, http.MethodPost, url, tc.h(b), b)
			require.Equal(t, http.StatusAccepted, r.status, "%v", r.body)
			var psp string
			require.NoError(t, store.Pool().QueryRow(t.Context(), `SELECT psp FROM inbox_messages WHERE payload = $1::jsonb`, b).Scan(&psp))
			require.Equal(t, tc.psp, psp)
		})
	}
	b := batch(apiPixItem(t, validID, nil))
	r := doWith(t, http.DefaultClient, http.MethodPost, srv.URL+apiPixPath, signed(b, "msg_c", now, pspBKey), b)
	require.Equal(t, http.StatusOK, r.status, "%v", r.body)
}

func TestWebhookSignaturesOptional(t *testing.T) {
	store := dbtest.New(t)
	srv := newServer(t, store, withSignatures(false))
	url := srv.URL + "/webhooks/pix"
	b := `{"end_to_end_id":"` + validID + `","account_id":"acc-1","amount_cents":100}`
	// A signature that is present is still verified.
	r := doWith(t, http.DefaultClient, http.MethodPost, url, signed(b, "msg_1", time.Now(), []byte("forged")), b)
	require.Equal(t, http.StatusUnauthorized, r.status)
	require.Zero(t, countInbox(t, store))
	r = doWith(t, http.DefaultClient, http.MethodPost, url, http.Header{"Content-Type": {"application/json"}}, b)
	require.Equal(t, http.StatusAccepted, r.status)
}

func TestAdminRoutesNeedTheBearerToken(t *testing.T) {
	store := dbtest.New(t)
	retry := "/admin/pix/credits/" + validID + "/retry"
	post := func(srvURL string, h http.Header) response {
		return doWith(t, http.DefaultClient, http.MethodPost, srvURL+retry, h, "")
	}

	disabled := newServer(t, store, func(d *api.Deps) { d.AdminToken = "" })
	r := post(disabled.URL, http.Header{"Authorization": {"Bearer "}})
	require.Equal(t, http.StatusForbidden, r.status)
	code, _ := errorOf(t, r)
	require.Equal(t, api.CodeAdminDisabled, code)

	srv := newServer(t, store)
	for name, h := range map[string]http.Header{
		"no header":    {},
		"wrong token":  {"Authorization": {"Bearer " + adminToken + "x"}},
		"token prefix": {"Authorization": {"Bearer " + adminToken[:10]}},
		"basic scheme": {"Authorization": {"Basic " + adminToken}},
		"bare token":   {"Authorization": {adminToken}},
	} {
		t.Run(name, func(t *testing.T) {
			r := post(srv.URL, h)
			require.Equal(t, http.StatusUnauthorized, r.status, "%v", r.body)
			code, _ := errorOf(t, r)
			require.Equal(t, api.CodeUnauthorized, code)
		})
	}
	r = post(srv.URL, http.Header{"Authorization": {"Bearer " + adminToken}})
	require.Equal(t, http.StatusNotFound, r.status, "authorized: the handler answers that the PIX is unknown")
	code, _ = errorOf(t, r)
	require.Equal(t, api.CodeCreditNotFound, code)
}
