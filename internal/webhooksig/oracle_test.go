package webhooksig

// Verify as it was before its MACs were kept between requests and its
// signature entries decoded without allocating (webhooksig.go at
// 3897fbc), verbatim but for its names and the Verifier's fields passed
// in: the oracle of FuzzVerifyMatchesTheOracle.

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// oracleVerify is Verify as it was: it checks the webhook-id, webhook-timestamp and webhook-signature
// headers of h against body and returns the PSP whose secret matched. Several
// webhook-signature header lines are treated as one space-separated list.
// Errors wrap ErrMissingSignature, ErrMalformedSignature, ErrStaleTimestamp or
// ErrBadSignature, checked in that order.
func oracleVerify(secrets []Secret, tolerance time.Duration, now func() time.Time, h http.Header, body []byte) (psp string, err error) {
	id := h.Get(headerID)
	ts := h.Get(headerTimestamp)
	sigLines := h.Values(headerSignature)
	sigLen := len(sigLines) // separators when joined
	for _, l := range sigLines {
		sigLen += len(l)
	}
	switch {
	case id == "":
		return "", fmt.Errorf("%w: %s header missing", ErrMissingSignature, headerID)
	case ts == "":
		return "", fmt.Errorf("%w: %s header missing", ErrMissingSignature, headerTimestamp)
	case sigLen > maxHeaderLen+1:
		return "", fmt.Errorf("%w: %s longer than %d bytes", ErrMalformedSignature, headerSignature, maxHeaderLen)
	}
	sigHeader := strings.Join(sigLines, " ")
	if strings.TrimSpace(sigHeader) == "" {
		return "", fmt.Errorf("%w: %s header missing", ErrMissingSignature, headerSignature)
	}

	if len(id) > maxIDLen {
		return "", fmt.Errorf("%w: %s longer than %d bytes", ErrMalformedSignature, headerID, maxIDLen)
	}
	if !printableASCII(id) {
		return "", fmt.Errorf("%w: %s contains characters outside printable ASCII", ErrMalformedSignature, headerID)
	}
	unix, err := parseTimestamp(ts)
	if err != nil {
		return "", err
	}
	sigs, err := oracleParseSignatures(sigHeader)
	if err != nil {
		return "", err
	}

	if err := oracleCheckTime(tolerance, now, unix); err != nil {
		return "", err
	}

	for _, s := range secrets {
		want := oracleMAC(s.Key, id, ts, body)
		for _, got := range sigs {
			if hmac.Equal(got, want) {
				return s.PSP, nil
			}
		}
	}
	return "", fmt.Errorf("%w: no %s entry matches a known secret", ErrBadSignature, headerSignature)
}

// oracleParseSignatures returns the decoded v1 entries of a webhook-signature value.
// Entries of other versions are ignored; a v1 entry that is not standard
// base64 of a 32-byte MAC is skipped. At least one usable v1 entry is required.
func oracleParseSignatures(header string) ([][]byte, error) {
	fields := strings.Fields(header)
	if len(fields) > maxEntries {
		return nil, fmt.Errorf("%w: %s has %d entries, at most %d allowed", ErrMalformedSignature, headerSignature, len(fields), maxEntries)
	}
	var sigs [][]byte
	for _, f := range fields {
		b64, ok := strings.CutPrefix(f, versionPrefix)
		if !ok {
			continue
		}
		sig, err := base64.StdEncoding.DecodeString(b64)
		if err != nil || len(sig) != sha256.Size {
			continue
		}
		sigs = append(sigs, sig)
	}
	if len(sigs) == 0 {
		return nil, fmt.Errorf("%w: %s has no v1 entry with a base64 HMAC-SHA256", ErrMalformedSignature, headerSignature)
	}
	return sigs, nil
}

func oracleCheckTime(tolerance time.Duration, now func() time.Time, unix int64) error {
	if tolerance <= 0 {
		tolerance = DefaultTolerance
	}
	if now == nil {
		now = time.Now
	}
	// Compare in whole seconds, the timestamp's precision. Both values are
	// int64, so the magnitude of their difference always fits a uint64.
	nowUnix := now().Unix()
	tol := uint64(tolerance / time.Second)
	if nowUnix >= unix {
		if off := uint64(nowUnix) - uint64(unix); off > tol {
			return fmt.Errorf("%w: timestamp is %s in the past (tolerance %s)", ErrStaleTimestamp, secondsString(off), tolerance)
		}
		return nil
	}
	if off := uint64(unix) - uint64(nowUnix); off > tol {
		return fmt.Errorf("%w: timestamp is %s in the future (tolerance %s)", ErrStaleTimestamp, secondsString(off), tolerance)
	}
	return nil
}

// oracleMAC computes HMAC-SHA256(key, id + "." + ts + "." + body).
func oracleMAC(key []byte, id, ts string, body []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(id))
	m.Write([]byte{'.'})
	m.Write([]byte(ts))
	m.Write([]byte{'.'})
	m.Write(body)
	return m.Sum(nil)
}

// FuzzVerifyMatchesTheOracle: Verify answers every request as the oracle
// does, the same PSP or the same error text. The signature header's
// lines are sig split at '\n'.
func FuzzVerifyMatchesTheOracle(f *testing.F) {
	keyA := []byte("fuzz psp-a key, 32 bytes long...")
	keyB := []byte("fuzz psp-b key")
	secrets := []Secret{{PSP: "psp-a", Key: keyA}, {PSP: "psp-b", Key: keyB}, {PSP: "psp-b", Key: []byte("psp-b's next key")}}
	refTime := time.Unix(1614265330, 0)
	now := func() time.Time { return refTime }
	v := NewVerifier(secrets, 0, now)
	body := []byte(`{"test": 2432232314}`)
	f.Add("msg_1", "1614265330", Sign(keyA, "msg_1", refTime, body), body)
	f.Add("msg_1", "1614265000", "v1,AAAA "+Sign(keyB, "msg_1", refTime.Add(-330*time.Second), body)+"\nv2,x", body)
	f.Add("msg_1", "1614265330", "v1,"+strings.Repeat("A", 43)+"= v1,"+strings.Repeat("A", 42)+"== v1,"+strings.Repeat("A", 44), body)
	f.Add("msg_1", "1614265330", strings.Repeat("v1,x ", 33), body)
	f.Add("msg_1", "1614265330", strings.Repeat("v1,x\u00a0", 20), body)
	f.Add("msg 1", "99999999999", "v1,\r"+Sign(keyA, "msg 1", refTime, body)[3:], body)
	f.Add("", "", "", []byte(nil))
	f.Fuzz(func(t *testing.T, id, ts, sig string, body []byte) {
		for _, lines := range [][]string{strings.Split(sig, "\n"), {sig}} {
			h := http.Header{}
			h.Set("webhook-id", id)
			h.Set("webhook-timestamp", ts)
			for _, l := range lines {
				h.Add("webhook-signature", l)
			}
			psp, err := v.Verify(h, body)
			oPSP, oErr := oracleVerify(v.oracleSecrets(), v.tolerance, v.now, h, body)
			if psp != oPSP || (err == nil) != (oErr == nil) || err != nil && err.Error() != oErr.Error() {
				t.Fatalf("Verify(%q, %q, %q) = %q, %v; the oracle %q, %v", id, ts, lines, psp, err, oPSP, oErr)
			}
			if HasSignature(h) != oracleHasSignature(h) {
				t.Fatalf("HasSignature differs")
			}
		}
	})
}

// oracleSecrets are the Verifier's secrets as Secrets.
func (v *Verifier) oracleSecrets() []Secret {
	out := make([]Secret, len(v.secrets))
	for i, s := range v.secrets {
		out[i] = Secret{PSP: s.psp, Key: s.key}
	}
	return out
}

func oracleHasSignature(h http.Header) bool {
	return len(h.Values(headerID)) > 0 || len(h.Values(headerTimestamp)) > 0 || len(h.Values(headerSignature)) > 0
}
