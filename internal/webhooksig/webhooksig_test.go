package webhooksig_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/internal/webhooksig"
)

// Standard Webhooks reference vector (https://www.standardwebhooks.com),
// cross-checked with openssl:
//
//	printf '%s' 'msg_p5jXN8AQM9LWM0D4loKWxJek.1614265330.{"test": 2432232314}' |
//	  openssl dgst -sha256 -mac HMAC \
//	    -macopt hexkey:31f290f6bf06298aab4f08d43c3f082cf648a362da2da4b0 -binary | base64
//	g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=
//
// (31f2…a4b0 is the hex of base64-decoded MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw.)
const (
	refSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	refID     = "msg_p5jXN8AQM9LWM0D4loKWxJek"
	refTS     = "1614265330"
	refBody   = `{"test": 2432232314}`
	refSig    = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
)

var refTime = time.Unix(1614265330, 0)

func mustKey(t testing.TB, secret string) []byte {
	t.Helper()
	s, err := webhooksig.ParseSecrets("x=" + secret)
	require.NoError(t, err)
	require.Len(t, s, 1)
	return s[0].Key
}

func TestReferenceVector(t *testing.T) {
	key := mustKey(t, refSecret)
	require.Equal(t, "31f290f6bf06298aab4f08d43c3f082cf648a362da2da4b0", fmt.Sprintf("%x", key))
	require.Equal(t, refSig, webhooksig.Sign(key, refID, refTime, []byte(refBody)))

	v := webhooksig.NewVerifier([]webhooksig.Secret{{PSP: "ref", Key: key}}, 0, func() time.Time { return refTime })
	h := http.Header{}
	h.Set("webhook-id", refID)
	h.Set("webhook-timestamp", refTS)
	h.Set("webhook-signature", refSig)
	psp, err := v.Verify(h, []byte(refBody))
	require.NoError(t, err)
	require.Equal(t, "ref", psp)
}

// TestOpenSSLVector checks a second vector (random key, UTF-8 PIX-like body)
// computed only with openssl:
//
//	body='{"endToEndId":"E1234567820261129120000000000001","valor":"10.50","pagador":"José"}'
//	printf '%s' "msg_pix_0001.1764417600.$body" | openssl dgst -sha256 -mac HMAC \
//	  -macopt hexkey:0236c37a63c96d4bb46056f07646049955c269a730a69b5b1bca41405928e7de -binary | base64
//	lL7TbR4eZjUAS1nL/z2asA82qoqDJTBkOtcXt4Ft5GI=
func TestOpenSSLVector(t *testing.T) {
	const (
		secret = "whsec_AjbDemPJbUu0YFbwdkYEmVXCaacwpptbG8pBQFko594="
		id     = "msg_pix_0001"
		body   = `{"endToEndId":"E1234567820261129120000000000001","valor":"10.50","pagador":"José"}`
		want   = "v1,lL7TbR4eZjUAS1nL/z2asA82qoqDJTBkOtcXt4Ft5GI="
	)
	ts := time.Unix(1764417600, 0)
	key := mustKey(t, secret)
	require.Equal(t, "0236c37a63c96d4bb46056f07646049955c269a730a69b5b1bca41405928e7de", fmt.Sprintf("%x", key))
	require.Equal(t, want, webhooksig.Sign(key, id, ts, []byte(body)))
	require.Equal(t, secret, webhooksig.FormatSecret(key))

	h := http.Header{}
	webhooksig.SetHeaders(h, id, ts, []byte(body), key)
	require.Equal(t, want, h.Get("webhook-signature"))
	psp, err := webhooksig.NewVerifier([]webhooksig.Secret{{PSP: "psp-x", Key: key}}, 0,
		func() time.Time { return ts.Add(90 * time.Second) }).Verify(h, []byte(body))
	require.NoError(t, err)
	require.Equal(t, "psp-x", psp)
}

func TestVerify(t *testing.T) {
	keyA1 := mustKey(t, refSecret)
	keyA2 := []byte("psp-a rotated key, 32 bytes long")
	keyB := []byte("psp-b signing key")
	unknown := []byte("a key nobody configured")
	v := webhooksig.NewVerifier([]webhooksig.Secret{
		{PSP: "psp-a", Key: keyA1},
		{PSP: "psp-a", Key: keyA2},
		{PSP: "psp-b", Key: keyB},
	}, 0, func() time.Time { return refTime })

	body := []byte(refBody)
	// signed returns headers for refID/body at refTime+offset, signed with keys.
	signed := func(offset time.Duration, keys ...[]byte) http.Header {
		h := http.Header{}
		webhooksig.SetHeaders(h, refID, refTime.Add(offset), body, keys...)
		return h
	}
	with := func(h http.Header, k, val string) http.Header { h.Set(k, val); return h }
	without := func(h http.Header, k string) http.Header { h.Del(k); return h }
	validSig := webhooksig.Sign(keyA1, refID, refTime, body)
	entries := func(n int) string {
		e := make([]string, n)
		for i := range e {
			e[i] = validSig
		}
		return strings.Join(e, " ")
	}

	tests := []struct {
		name    string
		h       http.Header
		body    []byte // nil: body
		wantPSP string
		wantErr error
		wantMsg string
	}{
		{name: "valid", h: signed(0, keyA1), wantPSP: "psp-a"},
		{name: "valid reference header", h: with(with(with(http.Header{}, "webhook-id", refID), "webhook-timestamp", refTS), "webhook-signature", refSig), wantPSP: "psp-a"},
		{name: "rotated: old unknown key then new key", h: signed(0, unknown, keyA2), wantPSP: "psp-a"},
		{name: "rotated: current key then next unknown key", h: signed(0, keyA1, unknown), wantPSP: "psp-a"},
		{name: "second psp's secret matches", h: signed(0, keyB), wantPSP: "psp-b"},
		{name: "second psp among unknown", h: signed(0, unknown, keyB), wantPSP: "psp-b"},
		{name: "v1a entry ignored beside valid v1", h: with(signed(0), "webhook-signature", "v1a,AAAA "+validSig), wantPSP: "psp-a"},
		{name: "extra spaces between entries", h: with(signed(0), "webhook-signature", "  v2,zz   "+validSig+"  "), wantPSP: "psp-a"},
		{name: "two signature header lines", h: func() http.Header {
			h := signed(0, unknown)
			h.Add("webhook-signature", validSig)
			return h
		}(), wantPSP: "psp-a"},

		{name: "wrong key", h: signed(0, unknown), wantErr: webhooksig.ErrBadSignature},
		{name: "tampered body", h: signed(0, keyA1), body: []byte(`{"test": 2432232315}`), wantErr: webhooksig.ErrBadSignature},
		{name: "empty body", h: signed(0, keyA1), body: []byte{}, wantErr: webhooksig.ErrBadSignature},
		{name: "tampered id", h: with(signed(0, keyA1), "webhook-id", refID+"x"), wantErr: webhooksig.ErrBadSignature},
		{name: "tampered timestamp within tolerance", h: with(signed(0, keyA1), "webhook-timestamp", "1614265331"), wantErr: webhooksig.ErrBadSignature},
		{name: "timestamp with leading zero is other content", h: with(signed(0, keyA1), "webhook-timestamp", "0"+refTS), wantErr: webhooksig.ErrBadSignature},
		{name: "signature of wrong length ignored beside wrong one", h: with(signed(0, unknown), "webhook-signature", "v1,AAAA "+webhooksig.Sign(unknown, refID, refTime, body)), wantErr: webhooksig.ErrBadSignature},

		{name: "stale past", h: signed(-6*time.Minute, keyA1), wantErr: webhooksig.ErrStaleTimestamp, wantMsg: "timestamp is 6m0s in the past"},
		{name: "stale future", h: signed(6*time.Minute, keyA1), wantErr: webhooksig.ErrStaleTimestamp, wantMsg: "timestamp is 6m0s in the future"},
		{name: "one second too old", h: signed(-5*time.Minute-time.Second, keyA1), wantErr: webhooksig.ErrStaleTimestamp, wantMsg: "5m1s in the past"},
		{name: "one second too new", h: signed(5*time.Minute+time.Second, keyA1), wantErr: webhooksig.ErrStaleTimestamp, wantMsg: "5m1s in the future"},
		{name: "stale even with bad signature", h: signed(-time.Hour, unknown), wantErr: webhooksig.ErrStaleTimestamp, wantMsg: "1h0m0s in the past"},
		{name: "timestamp zero", h: with(signed(0, keyA1), "webhook-timestamp", "0"), wantErr: webhooksig.ErrStaleTimestamp, wantMsg: "in the past"},
		{name: "timestamp max int64", h: with(signed(0, keyA1), "webhook-timestamp", "9223372036854775807"), wantErr: webhooksig.ErrStaleTimestamp, wantMsg: "in the future"},
		{name: "just inside tolerance past", h: signed(-5*time.Minute, keyA1), wantPSP: "psp-a"},
		{name: "just inside tolerance future", h: signed(5*time.Minute, keyB), wantPSP: "psp-b"},

		{name: "missing id", h: without(signed(0, keyA1), "webhook-id"), wantErr: webhooksig.ErrMissingSignature, wantMsg: "webhook-id"},
		{name: "missing timestamp", h: without(signed(0, keyA1), "webhook-timestamp"), wantErr: webhooksig.ErrMissingSignature, wantMsg: "webhook-timestamp"},
		{name: "missing signature", h: without(signed(0, keyA1), "webhook-signature"), wantErr: webhooksig.ErrMissingSignature, wantMsg: "webhook-signature"},
		{name: "empty id", h: with(signed(0, keyA1), "webhook-id", ""), wantErr: webhooksig.ErrMissingSignature},
		{name: "empty timestamp", h: with(signed(0, keyA1), "webhook-timestamp", ""), wantErr: webhooksig.ErrMissingSignature},
		{name: "blank signature", h: with(signed(0, keyA1), "webhook-signature", "   "), wantErr: webhooksig.ErrMissingSignature},
		{name: "no headers", h: http.Header{}, wantErr: webhooksig.ErrMissingSignature},
		{name: "nil header", h: nil, wantErr: webhooksig.ErrMissingSignature},

		{name: "timestamp not a number", h: with(signed(0, keyA1), "webhook-timestamp", "yesterday"), wantErr: webhooksig.ErrMalformedSignature, wantMsg: "webhook-timestamp"},
		{name: "timestamp fractional", h: with(signed(0, keyA1), "webhook-timestamp", refTS+".5"), wantErr: webhooksig.ErrMalformedSignature},
		{name: "timestamp negative", h: with(signed(0, keyA1), "webhook-timestamp", "-"+refTS), wantErr: webhooksig.ErrMalformedSignature},
		{name: "timestamp with plus", h: with(signed(0, keyA1), "webhook-timestamp", "+"+refTS), wantErr: webhooksig.ErrMalformedSignature},
		{name: "timestamp with space", h: with(signed(0, keyA1), "webhook-timestamp", refTS+" "), wantErr: webhooksig.ErrMalformedSignature},
		{name: "timestamp overflows int64", h: with(signed(0, keyA1), "webhook-timestamp", "9223372036854775808"), wantErr: webhooksig.ErrMalformedSignature},
		{name: "timestamp RFC 3339", h: with(signed(0, keyA1), "webhook-timestamp", refTime.UTC().Format(time.RFC3339)), wantErr: webhooksig.ErrMalformedSignature},
		{name: "id too long", h: with(signed(0, keyA1), "webhook-id", strings.Repeat("a", 257)), wantErr: webhooksig.ErrMalformedSignature, wantMsg: "256"},
		{name: "id with newline", h: with(signed(0, keyA1), "webhook-id", "msg\n1"), wantErr: webhooksig.ErrMalformedSignature, wantMsg: "printable ASCII"},
		{name: "id with non-ASCII", h: with(signed(0, keyA1), "webhook-id", "msg_é"), wantErr: webhooksig.ErrMalformedSignature},
		{name: "non-v1 entries only", h: with(signed(0), "webhook-signature", "v1a,"+strings.TrimPrefix(validSig, "v1,")+" v2,abc"), wantErr: webhooksig.ErrMalformedSignature, wantMsg: "no v1 entry"},
		{name: "bare base64 without version", h: with(signed(0), "webhook-signature", strings.TrimPrefix(validSig, "v1,")), wantErr: webhooksig.ErrMalformedSignature},
		{name: "bad base64", h: with(signed(0), "webhook-signature", "v1,not*base64!"), wantErr: webhooksig.ErrMalformedSignature},
		{name: "base64url instead of std", h: with(signed(0), "webhook-signature", "v1,"+base64.URLEncoding.EncodeToString(make([]byte, 32))[:40]+"-_=="), wantErr: webhooksig.ErrMalformedSignature},
		{name: "v1 entry of wrong length", h: with(signed(0), "webhook-signature", "v1,AAAA"), wantErr: webhooksig.ErrMalformedSignature},
		{name: "empty v1 entry", h: with(signed(0), "webhook-signature", "v1,"), wantErr: webhooksig.ErrMalformedSignature},
		{name: "32 entries accepted", h: with(signed(0), "webhook-signature", entries(32)), wantPSP: "psp-a"},
		{name: "33 entries refused", h: with(signed(0), "webhook-signature", entries(33)), wantErr: webhooksig.ErrMalformedSignature, wantMsg: "at most 32"},
		{name: "signature header over 8 KiB", h: with(signed(0), "webhook-signature", validSig+" v2,"+strings.Repeat("A", 8<<10)), wantErr: webhooksig.ErrMalformedSignature, wantMsg: "longer than 8192"},
		{name: "signature lines together over 8 KiB", h: func() http.Header {
			h := signed(0, keyA1)
			for range 3 {
				h.Add("webhook-signature", "v2,"+strings.Repeat("A", 3<<10))
			}
			return h
		}(), wantErr: webhooksig.ErrMalformedSignature},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := tt.body
			if b == nil {
				b = body
			}
			psp, err := v.Verify(tt.h, b)
			if tt.wantErr == nil {
				require.NoError(t, err)
				require.Equal(t, tt.wantPSP, psp)
				return
			}
			require.ErrorIs(t, err, tt.wantErr)
			require.Empty(t, psp)
			require.Contains(t, err.Error(), tt.wantMsg)
			require.Equal(t, strings.ToLower(err.Error()[:1]), err.Error()[:1], "lowercase message")
			for _, other := range []error{webhooksig.ErrMissingSignature, webhooksig.ErrMalformedSignature, webhooksig.ErrStaleTimestamp, webhooksig.ErrBadSignature} {
				if other != tt.wantErr {
					require.NotErrorIs(t, err, other)
				}
			}
		})
	}
}

func TestVerifierOptions(t *testing.T) {
	key := []byte("options key")
	body := []byte(`{}`)
	signedAt := func(at time.Time) http.Header {
		h := http.Header{}
		webhooksig.SetHeaders(h, "msg_1", at, body, key)
		return h
	}

	t.Run("nil now uses the clock, zero tolerance the default", func(t *testing.T) {
		v := webhooksig.NewVerifier([]webhooksig.Secret{{PSP: "p", Key: key}}, 0, nil)
		psp, err := v.Verify(signedAt(time.Now()), body)
		require.NoError(t, err)
		require.Equal(t, "p", psp)
		_, err = v.Verify(signedAt(time.Now().Add(-4*time.Minute)), body)
		require.NoError(t, err)
		_, err = v.Verify(signedAt(time.Now().Add(-6*time.Minute)), body)
		require.ErrorIs(t, err, webhooksig.ErrStaleTimestamp)
	})

	t.Run("negative tolerance means default", func(t *testing.T) {
		v := webhooksig.NewVerifier([]webhooksig.Secret{{PSP: "p", Key: key}}, -time.Second, func() time.Time { return refTime })
		_, err := v.Verify(signedAt(refTime.Add(-webhooksig.DefaultTolerance)), body)
		require.NoError(t, err)
	})

	t.Run("custom tolerance", func(t *testing.T) {
		v := webhooksig.NewVerifier([]webhooksig.Secret{{PSP: "p", Key: key}}, 30*time.Second, func() time.Time { return refTime })
		_, err := v.Verify(signedAt(refTime.Add(30*time.Second)), body)
		require.NoError(t, err)
		_, err = v.Verify(signedAt(refTime.Add(-31*time.Second)), body)
		require.ErrorIs(t, err, webhooksig.ErrStaleTimestamp)
		require.ErrorContains(t, err, "timestamp is 31s in the past")
	})

	t.Run("sub-second clock compares whole seconds", func(t *testing.T) {
		v := webhooksig.NewVerifier([]webhooksig.Secret{{PSP: "p", Key: key}}, 0, func() time.Time { return refTime.Add(999 * time.Millisecond) })
		_, err := v.Verify(signedAt(refTime.Add(-5*time.Minute)), body)
		require.NoError(t, err)
	})

	t.Run("keys are copied", func(t *testing.T) {
		k := append([]byte(nil), key...)
		v := webhooksig.NewVerifier([]webhooksig.Secret{{PSP: "p", Key: k}}, 0, func() time.Time { return refTime })
		k[0] ^= 0xff
		_, err := v.Verify(signedAt(refTime), body)
		require.NoError(t, err)
	})

	t.Run("empty key is never accepted", func(t *testing.T) {
		v := webhooksig.NewVerifier([]webhooksig.Secret{{PSP: "empty", Key: nil}, {PSP: "empty2", Key: []byte{}}}, 0, func() time.Time { return refTime })
		h := http.Header{}
		webhooksig.SetHeaders(h, "msg_1", refTime, body, nil, []byte{})
		_, err := v.Verify(h, body)
		require.ErrorIs(t, err, webhooksig.ErrBadSignature)
	})

	t.Run("no secrets, zero value and nil verifier refuse without panic", func(t *testing.T) {
		for _, v := range []*webhooksig.Verifier{webhooksig.NewVerifier(nil, 0, nil), {}, nil} {
			_, err := v.Verify(signedAt(time.Now()), body)
			require.ErrorIs(t, err, webhooksig.ErrBadSignature)
		}
	})
}

func TestHasSignature(t *testing.T) {
	require.False(t, webhooksig.HasSignature(nil))
	require.False(t, webhooksig.HasSignature(http.Header{"Content-Type": {"application/json"}}))
	for _, k := range []string{"webhook-id", "Webhook-Timestamp", "WEBHOOK-SIGNATURE"} {
		h := http.Header{}
		h.Set(k, "x")
		require.True(t, webhooksig.HasSignature(h), k)
		h.Set(k, "")
		require.True(t, webhooksig.HasSignature(h), "present but empty: %s", k)
	}
}

func TestSetHeaders(t *testing.T) {
	k1, k2 := []byte("k1"), []byte("k2")
	body := []byte("payload")
	h := http.Header{}
	webhooksig.SetHeaders(h, "msg_9", refTime, body, k1, k2)
	require.Equal(t, "msg_9", h.Get("webhook-id"))
	require.Equal(t, refTS, h.Get("webhook-timestamp"))
	require.Equal(t, webhooksig.Sign(k1, "msg_9", refTime, body)+" "+webhooksig.Sign(k2, "msg_9", refTime, body), h.Get("webhook-signature"))

	// Re-signing replaces, and signing with no key removes the signature.
	webhooksig.SetHeaders(h, "msg_10", refTime, body, k2)
	require.Equal(t, []string{webhooksig.Sign(k2, "msg_10", refTime, body)}, h.Values("webhook-signature"))
	webhooksig.SetHeaders(h, "msg_11", refTime, body)
	require.Empty(t, h.Values("webhook-signature"))
	require.True(t, webhooksig.HasSignature(h))

	// Sign uses whole Unix seconds.
	require.Equal(t, webhooksig.Sign(k1, "m", refTime, body), webhooksig.Sign(k1, "m", refTime.Add(999*time.Millisecond), body))
}

func TestSecrets(t *testing.T) {
	s1, s2 := webhooksig.NewSecret(), webhooksig.NewSecret()
	require.NotEqual(t, s1, s2)
	require.True(t, strings.HasPrefix(s1, "whsec_"))
	k := mustKey(t, s1)
	require.Len(t, k, 32)
	require.Equal(t, s1, webhooksig.FormatSecret(k))

	sec := webhooksig.Secret{PSP: "psp-a", Key: []byte("do not print me")}
	for _, out := range []string{fmt.Sprint(sec), fmt.Sprintf("%v %+v %s %#v", sec, sec, sec, sec), fmt.Sprint([]webhooksig.Secret{sec})} {
		require.NotContains(t, out, "do not print me")
		require.NotContains(t, out, base64.StdEncoding.EncodeToString(sec.Key))
		require.Contains(t, out, "psp-a")
	}
}

func TestParseSecrets(t *testing.T) {
	a := webhooksig.FormatSecret([]byte("key of psp a, number one"))
	b := webhooksig.FormatSecret([]byte("key of psp a, number two"))
	c := webhooksig.FormatSecret([]byte("key of psp b"))
	good := []struct {
		name string
		in   string
		want []webhooksig.Secret
	}{
		{name: "empty", in: "", want: nil},
		{name: "blank", in: "  \t ", want: nil},
		{name: "two psps", in: "psp-a=" + a + "," + b + ";psp-b=" + c, want: []webhooksig.Secret{
			{PSP: "psp-a", Key: []byte("key of psp a, number one")},
			{PSP: "psp-a", Key: []byte("key of psp a, number two")},
			{PSP: "psp-b", Key: []byte("key of psp b")},
		}},
		{name: "spaces trimmed, trailing semicolon", in: "  psp-a = " + a + " , " + b + " ; PSP_b.2 =" + c + " ; ", want: []webhooksig.Secret{
			{PSP: "psp-a", Key: []byte("key of psp a, number one")},
			{PSP: "psp-a", Key: []byte("key of psp a, number two")},
			{PSP: "PSP_b.2", Key: []byte("key of psp b")},
		}},
		{name: "plain base64 without prefix", in: "p=" + strings.TrimPrefix(c, "whsec_"), want: []webhooksig.Secret{{PSP: "p", Key: []byte("key of psp b")}}},
		{name: "reference secret", in: "ref=" + refSecret, want: []webhooksig.Secret{{PSP: "ref", Key: mustKey(t, refSecret)}}},
		{name: "64-char name", in: strings.Repeat("n", 64) + "=" + c, want: []webhooksig.Secret{{PSP: strings.Repeat("n", 64), Key: []byte("key of psp b")}}},
	}
	for _, tt := range good {
		t.Run(tt.name, func(t *testing.T) {
			got, err := webhooksig.ParseSecrets(tt.in)
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}

	const leak = "c2VjcmV0LXZhbHVl" // base64 "secret-value"
	bad := []struct {
		name    string
		in      string
		wantMsg []string
	}{
		{name: "no equals", in: "psp-a=" + a + ";" + "whsec_" + leak, wantMsg: []string{"entry 2", "no '='"}},
		{name: "no secrets", in: "psp-a=" + leak + ";psp-b=", wantMsg: []string{"entry 2", `"psp-b"`, "no secrets"}},
		{name: "blank secrets", in: "psp-b=  ", wantMsg: []string{"entry 1", `"psp-b"`, "no secrets"}},
		{name: "empty name", in: "=whsec_" + leak, wantMsg: []string{"entry 1", "psp name"}},
		{name: "name with space", in: "psp a=whsec_" + leak, wantMsg: []string{"entry 1", "[A-Za-z0-9_.-]"}},
		{name: "name with unicode", in: "psp-ç=whsec_" + leak, wantMsg: []string{"entry 1", "[A-Za-z0-9_.-]"}},
		{name: "name too long", in: strings.Repeat("n", 65) + "=whsec_" + leak, wantMsg: []string{"entry 1", "1-64"}},
		{name: "secret in name position", in: "whsec_" + leak + "==", wantMsg: []string{"entry 1", "looks like a secret"}},
		{name: "duplicate psp", in: "psp-a=whsec_" + leak + ";psp-b=" + c + ";psp-a=" + b, wantMsg: []string{"entry 3", `duplicate psp "psp-a"`}},
		{name: "empty key", in: "psp-a=whsec_", wantMsg: []string{"entry 1", `"psp-a"`, "secret 1", "empty secret"}},
		{name: "empty secret in list", in: "psp-a=whsec_" + leak + ",,whsec_" + leak, wantMsg: []string{"entry 1", "secret 2", "empty secret"}},
		{name: "bad base64", in: "psp-a=" + a + ";psp-b=" + c + ",whsec_" + leak + "!", wantMsg: []string{"entry 2", `"psp-b"`, "secret 2", "base64"}},
		{name: "base64 missing padding", in: "psp-a=whsec_" + leak + "Q", wantMsg: []string{"entry 1", "base64"}},
		{name: "base64url", in: "psp-a=whsec_" + leak + "-_-_", wantMsg: []string{"entry 1", "base64"}},
		{name: "padding only", in: "psp-a=whsec_====", wantMsg: []string{"entry 1", "base64"}},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			got, err := webhooksig.ParseSecrets(tt.in)
			require.Error(t, err)
			require.Nil(t, got)
			for _, m := range tt.wantMsg {
				require.Contains(t, err.Error(), m)
			}
			for _, secret := range []string{leak, a[6:], b[6:], c[6:], "secret-value"} {
				require.NotContains(t, err.Error(), secret, "error leaks key material")
			}
		})
	}
}

// FuzzVerify asserts that Verify never panics, only returns the documented
// sentinels, and that whatever it accepts really carries a valid v1 HMAC of
// id.timestamp.body under the returned PSP's key, within tolerance.
func FuzzVerify(f *testing.F) {
	keyA := mustKey(f, refSecret)
	keyB := []byte("fuzz psp-b key")
	secrets := map[string][][]byte{"psp-a": {keyA}, "psp-b": {keyB}}
	v := webhooksig.NewVerifier([]webhooksig.Secret{{PSP: "psp-a", Key: keyA}, {PSP: "psp-b", Key: keyB}},
		0, func() time.Time { return refTime })

	f.Add(refID, refTS, refSig, []byte(refBody))
	f.Add(refID, refTS, "v1a,AAAA "+webhooksig.Sign(keyB, refID, refTime, []byte(refBody))+" v1,AAAA", []byte(refBody))
	f.Add("msg 1", "1614265000", "v1,"+strings.Repeat("A", 43)+"=", []byte{})
	f.Add("", "", "", []byte(nil))
	f.Add("msg\x00", "-1", "v1,!!", []byte{0xff})
	f.Add(refID, "9223372036854775807", refSig, []byte(refBody))

	sentinels := []error{webhooksig.ErrMissingSignature, webhooksig.ErrMalformedSignature, webhooksig.ErrStaleTimestamp, webhooksig.ErrBadSignature}
	f.Fuzz(func(t *testing.T, id, ts, sig string, body []byte) {
		h := http.Header{}
		h.Set("webhook-id", id)
		h.Set("webhook-timestamp", ts)
		h.Set("webhook-signature", sig)
		psp, err := v.Verify(h, body)
		if err != nil {
			require.Empty(t, psp)
			n := 0
			for _, s := range sentinels {
				if errors.Is(err, s) {
					n++
				}
			}
			require.Equal(t, 1, n, "want exactly one sentinel: %v", err)
		} else {
			// Recompute independently of the package and require a v1 entry
			// whose decoded bytes equal the MAC under one of psp's keys.
			keys, ok := secrets[psp]
			require.True(t, ok, "unknown psp %q", psp)
			matched := false
			for _, k := range keys {
				m := hmac.New(sha256.New, k)
				m.Write([]byte(id + "." + ts + "."))
				m.Write(body)
				want := m.Sum(nil)
				for _, e := range strings.Fields(sig) {
					if b64, ok := strings.CutPrefix(e, "v1,"); ok {
						got, err := base64.StdEncoding.DecodeString(b64)
						if err == nil && hmac.Equal(got, want) {
							matched = true
						}
					}
				}
			}
			require.True(t, matched, "accepted a signature that does not match")
			n, perr := strconv.ParseInt(ts, 10, 64)
			require.NoError(t, perr)
			require.LessOrEqual(t, max(n-refTime.Unix(), refTime.Unix()-n), int64(webhooksig.DefaultTolerance/time.Second))
		}

		// Whatever the fuzzer gave, our own signature over a well-formed
		// request must verify (or be refused only for its timestamp).
		n, perr := strconv.ParseInt(ts, 10, 64)
		if perr != nil || id == "" || len(id) > 256 || strings.ContainsFunc(id, func(r rune) bool { return r < 0x20 || r > 0x7e }) {
			return
		}
		h2 := http.Header{}
		webhooksig.SetHeaders(h2, id, time.Unix(n, 0), body, []byte("unknown"), keyB)
		psp, err = v.Verify(h2, body)
		if d := n - refTime.Unix(); n >= 0 && d >= -300 && d <= 300 {
			require.NoError(t, err)
			require.Equal(t, "psp-b", psp)
		} else if err != nil {
			require.True(t, errors.Is(err, webhooksig.ErrStaleTimestamp) || errors.Is(err, webhooksig.ErrMalformedSignature), "%v", err)
		}
	})
}
