package codec

import (
	"crypto/cipher"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
)

// KeySize is the size of an AES-256 key.
const KeySize = 32

// keyIDPattern keeps key ids safe to put in payload metadata, logs and
// error messages.
var keyIDPattern = regexp.MustCompile(`^[A-Za-z0-9._-]+$`)

// KeyRing holds the codec's keys by id: every key decrypts the payloads
// that name it, the newest encrypts. It prints as its ids: a KeyRing logged
// or formatted by mistake shows no key material.
type KeyRing struct {
	keys map[string]*ringKey
	ids  []string // in configuration order; the last is the newest
}

// ringKey is one configured key: the secret per-payload keys are derived
// from (format v2), and the cipher of the key itself, which decrypts the
// payloads of format v1.
type ringKey struct {
	secret []byte
	v1     cipher.AEAD
}

// ParseKeyRing reads the TEMPORAL_CODEC_KEYS format: comma-separated
// keyid=base64 entries, each key 32 bytes (standard base64, padded or
// not), ids of [A-Za-z0-9._-]. The last entry is the newest: the one that
// encrypts. To rotate, append a new key and keep the old ones for as long
// as histories encrypted with them are kept.
//
// The errors name entries by position, and ids only once their entry is
// valid: an entry written wrong may be a bare key, and key material must
// never reach a log.
func ParseKeyRing(s string) (*KeyRing, error) {
	if strings.TrimSpace(s) == "" {
		return nil, errors.New("no keys: want keyid=base64key[,keyid=base64key...]")
	}
	r := &KeyRing{keys: map[string]*ringKey{}}
	for i, entry := range strings.Split(s, ",") {
		n := i + 1
		entry = strings.TrimSpace(entry)
		if entry == "" {
			return nil, fmt.Errorf("entry %d is empty", n)
		}
		id, encoded, ok := strings.Cut(entry, "=")
		id, encoded = strings.TrimSpace(id), strings.TrimSpace(encoded)
		if !ok {
			return nil, fmt.Errorf("entry %d is not keyid=base64key", n)
		}
		if id == "" {
			return nil, fmt.Errorf("entry %d has an empty key id", n)
		}
		key, err := decodeKey(encoded)
		if err != nil {
			return nil, fmt.Errorf("entry %d: %w", n, err)
		}
		if !keyIDPattern.MatchString(id) {
			return nil, fmt.Errorf("entry %d: the key id may hold only letters, digits, '.', '_' and '-'", n)
		}
		if _, dup := r.keys[id]; dup {
			return nil, fmt.Errorf("entry %d: key id %q appears twice", n, id)
		}
		v1, err := newAEAD(key)
		if err != nil {
			return nil, fmt.Errorf("entry %d: %w", n, err)
		}
		r.keys[id] = &ringKey{secret: key, v1: v1}
		r.ids = append(r.ids, id)
	}
	return r, nil
}

// decodeKey decodes a base64 key of KeySize bytes. Its errors never quote
// the input.
func decodeKey(encoded string) ([]byte, error) {
	key, err := base64.StdEncoding.DecodeString(encoded)
	if err != nil {
		key, err = base64.RawStdEncoding.DecodeString(encoded)
	}
	if err != nil {
		return nil, errors.New("the key is not standard base64 (for example: openssl rand -base64 32)")
	}
	if len(key) != KeySize {
		return nil, fmt.Errorf("the key is %d bytes, want %d (for example: openssl rand -base64 32)", len(key), KeySize)
	}
	return key, nil
}

// NewestID is the id of the key that encrypts ("" for a ring built
// without ParseKeyRing, which holds none).
func (r *KeyRing) NewestID() string {
	if r == nil || len(r.ids) == 0 {
		return ""
	}
	return r.ids[len(r.ids)-1]
}

// IDs are the ids of every key, oldest first.
func (r *KeyRing) IDs() []string { return append([]string(nil), r.ids...) }

// key is the key of id, if the ring holds it.
func (r *KeyRing) key(id string) (*ringKey, bool) {
	if r == nil {
		return nil, false
	}
	k, ok := r.keys[id]
	return k, ok
}

// String shows the ids only.
func (r *KeyRing) String() string {
	if r == nil || len(r.ids) == 0 {
		return "KeyRing(none)"
	}
	return fmt.Sprintf("KeyRing(ids=%s newest=%s)", strings.Join(r.ids, ","), r.NewestID())
}

// GoString keeps %#v from printing the keys.
func (r *KeyRing) GoString() string { return r.String() }

// LogValue keeps slog from printing the keys.
func (r *KeyRing) LogValue() slog.Value { return slog.StringValue(r.String()) }
