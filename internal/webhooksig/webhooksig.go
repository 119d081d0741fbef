package webhooksig

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"net/http"
	"net/textproto"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/pixbank/pix/internal/pix"
)

// DefaultTolerance is how far webhook-timestamp may be from the current time,
// in either direction, when NewVerifier is given no tolerance.
const DefaultTolerance = 5 * time.Minute

// Sentinel errors. Verify wraps exactly one of them (with %w) in every error it
// returns; test with errors.Is.
var (
	// ErrMissingSignature: webhook-id, webhook-timestamp or webhook-signature
	// is missing or empty.
	ErrMissingSignature = errors.New("missing webhook signature")
	// ErrMalformedSignature: the headers are present but cannot be parsed
	// (bad timestamp, bad id, oversized header, no usable v1 entry, too many
	// entries).
	ErrMalformedSignature = errors.New("malformed webhook signature")
	// ErrStaleTimestamp: webhook-timestamp is outside the tolerance.
	ErrStaleTimestamp = errors.New("webhook timestamp outside tolerance")
	// ErrBadSignature: no signature entry matches any configured secret.
	ErrBadSignature = errors.New("webhook signature does not match")
)

const (
	headerID        = "webhook-id"
	headerTimestamp = "webhook-timestamp"
	headerSignature = "webhook-signature"

	secretPrefix  = "whsec_"
	versionPrefix = "v1,"

	maxHeaderLen   = 8 << 10 // per header (all webhook-signature lines together)
	maxIDLen       = 256
	maxEntries     = 32
	maxPSPNameLen  = 64
	newSecretBytes = 32
)

// Secret is one PSP's signing secret.
type Secret struct {
	PSP string
	Key []byte
}

// String redacts the key so that a Secret logged or printed by mistake does
// not leak it.
func (s Secret) String() string { return fmt.Sprintf("%s:[redacted %d-byte key]", s.PSP, len(s.Key)) }

// GoString redacts the key for %#v as well.
func (s Secret) GoString() string {
	return fmt.Sprintf("webhooksig.Secret{PSP: %q, Key: [redacted %d bytes]}", s.PSP, len(s.Key))
}

// ParseSecrets reads the WEBHOOK_SECRETS configuration format:
//
//	psp-a=whsec_AAA,whsec_BBB;psp-b=whsec_CCC
//
// A PSP name (1-64 characters of [A-Za-z0-9_.-]) '=' one or more
// comma-separated secrets; PSPs are separated by ';'. Spaces around names,
// secrets and entries are trimmed and empty entries (e.g. a trailing ';') are
// skipped. Each secret is "whsec_<base64 key>" or plain base64; the key may
// not be empty. The empty string yields nil, nil. A PSP name may appear only
// once. Errors name the entry position and PSP but never contain key material.
func ParseSecrets(s string) ([]Secret, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []Secret
	seen := make(map[string]bool)
	for i, entry := range strings.Split(s, ";") {
		pos := i + 1
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		name, list, ok := strings.Cut(entry, "=")
		if !ok {
			return nil, fmt.Errorf("webhook secrets entry %d: want psp=secret[,secret...], found no '='", pos)
		}
		name = strings.TrimSpace(name)
		if err := CheckPSPName(name); err != nil {
			// The name is not echoed: a misplaced secret could be in it.
			return nil, fmt.Errorf("webhook secrets entry %d: %w", pos, err)
		}
		if seen[name] {
			return nil, fmt.Errorf("webhook secrets entry %d: duplicate psp %q", pos, name)
		}
		seen[name] = true
		if strings.TrimSpace(list) == "" {
			return nil, fmt.Errorf("webhook secrets entry %d (psp %q): no secrets", pos, name)
		}
		for j, raw := range strings.Split(list, ",") {
			key, err := parseKey(raw)
			if err != nil {
				return nil, fmt.Errorf("webhook secrets entry %d (psp %q) secret %d: %w", pos, name, j+1, err)
			}
			out = append(out, Secret{PSP: name, Key: key})
		}
	}
	return out, nil
}

// CheckPSPName says whether name is a PSP's name as WEBHOOK_SECRETS,
// WEBHOOK_MTLS_PSPS and PSP_NAME take it: 1-64 characters of
// [A-Za-z0-9_.-], and not pix.CatchUpPSP in any case. That name is the
// inbox's marker for a PIX the catch-up found first (db/inbox.go,
// saga/med's CreditPSP): a PSP so named would have every PIX its signed
// webhook delivered taken for a catch-up find, credited as PSP_NAME's,
// whose MED notices would then hold it and its own be refused.
func CheckPSPName(name string) error {
	if strings.EqualFold(name, pix.CatchUpPSP) {
		return fmt.Errorf("psp name %q is reserved: it marks the PIX the catch-up found; name the PSP otherwise", name)
	}
	if name == "" || len(name) > maxPSPNameLen {
		return fmt.Errorf("psp name must be 1-%d characters long", maxPSPNameLen)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '.' || c == '-') {
			return errors.New("psp name may contain only [A-Za-z0-9_.-]")
		}
	}
	if strings.HasPrefix(name, secretPrefix) {
		return errors.New("psp name looks like a secret (missing psp= before it?)")
	}
	return nil
}

// parseKey decodes one secret, "whsec_<base64>" or plain base64. Its errors
// never contain the input.
func parseKey(raw string) ([]byte, error) {
	s := strings.TrimSpace(raw)
	s = strings.TrimPrefix(s, secretPrefix)
	if s == "" {
		return nil, errors.New("empty secret")
	}
	key, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		// base64's own error only gives an offset, but keep the message ours.
		return nil, errors.New("secret is not valid base64 (want whsec_<standard base64>)")
	}
	if len(key) == 0 {
		return nil, errors.New("empty secret")
	}
	return key, nil
}

// FormatSecret writes key in the "whsec_<base64>" form that ParseSecrets reads.
func FormatSecret(key []byte) string {
	return secretPrefix + base64.StdEncoding.EncodeToString(key)
}

// NewSecret returns a fresh random 32-byte secret in the "whsec_<base64>" form.
func NewSecret() string {
	key := make([]byte, newSecretBytes)
	// crypto/rand.Read never returns an error (it crashes the program if the
	// system's random source fails), so there is nothing to handle.
	_, _ = rand.Read(key)
	return FormatSecret(key)
}

// Verifier checks webhook signatures against a fixed set of secrets. It is
// safe for concurrent use. The zero value (and a nil *Verifier) has no secrets
// and refuses everything.
type Verifier struct {
	secrets   []*keyedMAC
	tolerance time.Duration
	now       func() time.Time
}

// keyedMAC is one secret and the HMAC-SHA256 states keyed with it, kept
// between requests: keying an HMAC costs two SHA-256 blocks and five
// allocations, every request.
type keyedMAC struct {
	psp  string
	key  []byte
	macs sync.Pool // of *macState
}

// macState is one HMAC keyed with its keyedMAC's key, and the buffers of a
// computation.
type macState struct {
	mac    hash.Hash
	prefix []byte // id + "." + timestamp + "."
	sum    []byte
}

// sum is HMAC-SHA256(key, id + "." + ts + "." + body).
func (k *keyedMAC) sum(id, ts string, body []byte) (out [sha256.Size]byte) {
	m, _ := k.macs.Get().(*macState)
	if m == nil {
		m = &macState{mac: hmac.New(sha256.New, k.key)}
	}
	m.mac.Reset()
	m.prefix = append(append(append(append(m.prefix[:0], id...), '.'), ts...), '.')
	m.mac.Write(m.prefix)
	m.mac.Write(body)
	m.sum = m.mac.Sum(m.sum[:0])
	copy(out[:], m.sum)
	k.macs.Put(m)
	return out
}

// Header keys as http.Header holds them: h[key] is h.Get(key) without
// canonicalizing the key (an allocation) on every call.
var (
	keyID        = textproto.CanonicalMIMEHeaderKey(headerID)
	keyTimestamp = textproto.CanonicalMIMEHeaderKey(headerTimestamp)
	keySignature = textproto.CanonicalMIMEHeaderKey(headerSignature)
)

// first is h.Get for a canonical key.
func first(h http.Header, key string) string {
	if v := h[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// NewVerifier returns a Verifier for secrets, which it copies. Secrets with an
// empty key are skipped, since anyone could sign with them. tolerance <= 0
// means DefaultTolerance; now nil means time.Now. With no usable secret every
// signature is refused with ErrBadSignature.
func NewVerifier(secrets []Secret, tolerance time.Duration, now func() time.Time) *Verifier {
	if tolerance <= 0 {
		tolerance = DefaultTolerance
	}
	if now == nil {
		now = time.Now
	}
	v := &Verifier{tolerance: tolerance, now: now}
	for _, s := range secrets {
		if len(s.Key) == 0 {
			continue
		}
		v.secrets = append(v.secrets, &keyedMAC{psp: s.PSP, key: append([]byte(nil), s.Key...)})
	}
	return v
}

// Signs reports whether v holds a secret of psp: that PSP's webhooks must
// be signed, whatever else authenticates them. A nil Verifier holds none.
func (v *Verifier) Signs(psp string) bool {
	return v != nil && slices.ContainsFunc(v.secrets, func(k *keyedMAC) bool { return k.psp == psp })
}

// HasSignature reports whether any of webhook-id, webhook-timestamp or
// webhook-signature is present in h (even with an empty value), i.e. whether
// the sender meant to sign the request.
func HasSignature(h http.Header) bool {
	return len(h[keyID]) > 0 || len(h[keyTimestamp]) > 0 || len(h[keySignature]) > 0
}

// Verify checks the webhook-id, webhook-timestamp and webhook-signature
// headers of h against body and returns the PSP whose secret matched. Several
// webhook-signature header lines are treated as one space-separated list.
// Errors wrap ErrMissingSignature, ErrMalformedSignature, ErrStaleTimestamp or
// ErrBadSignature, checked in that order.
func (v *Verifier) Verify(h http.Header, body []byte) (psp string, err error) {
	id := first(h, keyID)
	ts := first(h, keyTimestamp)
	sigLines := h[keySignature]
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
	var sigs signatures
	if err := parseSignatures(sigHeader, &sigs); err != nil {
		return "", err
	}

	if v == nil {
		v = &Verifier{} // no secrets: checkTime uses the defaults, then no match
	}
	if err := v.checkTime(unix); err != nil {
		return "", err
	}

	for _, s := range v.secrets {
		want := s.sum(id, ts, body)
		for i := range sigs.n {
			if hmac.Equal(sigs.mac[i][:], want[:]) {
				return s.psp, nil
			}
		}
	}
	return "", fmt.Errorf("%w: no %s entry matches a known secret", ErrBadSignature, headerSignature)
}

// printableASCII reports whether s has only bytes 0x20 (space) to 0x7e.
func printableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// parseTimestamp accepts decimal digits only (no sign, no spaces) that fit an
// int64.
func parseTimestamp(ts string) (int64, error) {
	if len(ts) > 19 {
		return 0, fmt.Errorf("%w: %s is not an integer Unix time in seconds", ErrMalformedSignature, headerTimestamp)
	}
	for i := 0; i < len(ts); i++ {
		if ts[i] < '0' || ts[i] > '9' {
			return 0, fmt.Errorf("%w: %s is not an integer Unix time in seconds", ErrMalformedSignature, headerTimestamp)
		}
	}
	n, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: %s is not an integer Unix time in seconds", ErrMalformedSignature, headerTimestamp)
	}
	return n, nil
}

// signatures are the decoded v1 entries of a webhook-signature value.
type signatures struct {
	mac [maxEntries][sha256.Size]byte
	n   int
}

// encodedMACLen is the length of a 32-byte MAC in padded standard base64:
// the only length that decodes to 32 bytes (a field holds no \r or \n,
// which the decoder would skip).
const encodedMACLen = (sha256.Size + 2) / 3 * 4

// parseSignatures puts the decoded v1 entries of a webhook-signature value
// in sigs. Entries of other versions are ignored; a v1 entry that is not
// standard base64 of a 32-byte MAC is skipped. At least one usable v1 entry
// is required.
func parseSignatures(header string, sigs *signatures) error {
	entries := 0
	for f := range strings.FieldsSeq(header) {
		// Past maxEntries only counted, for the refusal's message.
		if entries++; entries > maxEntries {
			continue
		}
		b64, ok := strings.CutPrefix(f, versionPrefix)
		if !ok || len(b64) != encodedMACLen {
			continue
		}
		var src [encodedMACLen]byte
		var sig [encodedMACLen / 4 * 3]byte
		copy(src[:], b64)
		if n, err := base64.StdEncoding.Decode(sig[:], src[:]); err != nil || n != sha256.Size {
			continue
		}
		copy(sigs.mac[sigs.n][:], sig[:sha256.Size])
		sigs.n++
	}
	if entries > maxEntries {
		return fmt.Errorf("%w: %s has %d entries, at most %d allowed", ErrMalformedSignature, headerSignature, entries, maxEntries)
	}
	if sigs.n == 0 {
		return fmt.Errorf("%w: %s has no v1 entry with a base64 HMAC-SHA256", ErrMalformedSignature, headerSignature)
	}
	return nil
}

func (v *Verifier) checkTime(unix int64) error {
	tolerance, now := v.tolerance, v.now
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

// secondsString formats a number of seconds as a time.Duration when it fits
// one, and in plain seconds otherwise.
func secondsString(sec uint64) string {
	if sec > uint64((1<<63-1)/time.Second) {
		return strconv.FormatUint(sec, 10) + "s"
	}
	return (time.Duration(sec) * time.Second).String()
}

// Sign returns the webhook-signature entry "v1,<base64>" for key over
// id + "." + timestamp + "." + body, the timestamp in Unix seconds.
func Sign(key []byte, id string, timestamp time.Time, body []byte) string {
	ts := strconv.FormatInt(timestamp.Unix(), 10)
	sum := (&keyedMAC{key: key}).sum(id, ts, body)
	return versionPrefix + base64.StdEncoding.EncodeToString(sum[:])
}

// SetHeaders sets webhook-id, webhook-timestamp and webhook-signature on h,
// the signature header holding one space-separated entry per key (in order).
// With no keys the signature header is removed. For clients and tests.
func SetHeaders(h http.Header, id string, timestamp time.Time, body []byte, keys ...[]byte) {
	h.Set(headerID, id)
	h.Set(headerTimestamp, strconv.FormatInt(timestamp.Unix(), 10))
	if len(keys) == 0 {
		h.Del(headerSignature)
		return
	}
	sigs := make([]string, len(keys))
	for i, k := range keys {
		sigs[i] = Sign(k, id, timestamp, body)
	}
	h.Set(headerSignature, strings.Join(sigs, " "))
}

// ClientKey returns the first key of a WEBHOOK_SECRETS value, for our own
// clients that act as a PSP (the load and fault commands, the demo); nil
// when the value is empty.
func ClientKey(secrets string) ([]byte, error) {
	parsed, err := ParseSecrets(secrets)
	if err != nil || len(parsed) == 0 {
		return nil, err
	}
	return parsed[0].Key, nil
}
