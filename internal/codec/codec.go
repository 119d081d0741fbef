package codec

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
)

// The metadata of an encrypted payload.
const (
	// MetadataEncoding is the payload metadata key Temporal's converters
	// read the encoding from.
	MetadataEncoding = converter.MetadataEncoding
	// EncodingEncrypted marks a payload this codec encrypts: format v2,
	// sealed with a key derived for that payload alone (see Codec).
	EncodingEncrypted = "binary/encrypted-v2"
	// EncodingEncryptedV1 marks a payload of the first format, sealed
	// with the configured key itself. The codec no longer writes it and
	// decrypts it for as long as the key is in the ring: histories,
	// schedules and memos written before v2 keep reading.
	EncodingEncryptedV1 = "binary/encrypted"
	// MetadataKeyID names the key that encrypted the payload.
	MetadataKeyID = "encryption-key-id"
)

// Format v2's layout and derivation.
const (
	// saltSize is the per-payload HKDF salt: 256 random bits, so that
	// two payloads share a derived key with probability about
	// n²/2²⁵⁷ after n payloads (docs/security.md#key-usage-bound).
	saltSize = 32
	// deriveLabel, then a zero byte and the key id, is the HKDF info: it
	// binds a derived key to this use and to the key's name, so a payload
	// relabeled with another id derives another key and fails to open.
	deriveLabel = "pix temporal payload codec v2"
)

// ErrUnknownKeyID is the error of a payload encrypted with a key the ring
// doesn't hold (removed too early, or a ring of another environment).
var ErrUnknownKeyID = errors.New("payload encrypted with a key id the key ring doesn't hold")

// Codec is an AES-256-GCM converter.PayloadCodec. It seals the whole
// original payload (its metadata too: the encoding and the Go type say
// things as well), with the key id as additional authenticated data, so a
// payload relabeled with another key id fails like a tampered one.
//
// Each payload gets its own AES key: HKDF-SHA256 of the configured key,
// with 32 random bytes as the salt and the label and key id as the info.
// The payload's data is salt||nonce||ciphertext, the nonce random too.
// Sealing with the configured key directly (format v1, still decrypted)
// capped a key at 2³² payloads (NIST SP 800-38D's bound for random 96-bit
// nonces): days at full load. Derived keys lift the cap beyond any load
// (docs/security.md#key-usage-bound).
type Codec struct {
	keys   *KeyRing
	writes Format
}

var _ converter.PayloadCodec = (*Codec)(nil)

// Format is the format a codec writes (TEMPORAL_CODEC_WRITE_FORMAT); it
// reads both.
type Format string

const (
	// FormatV2: a key derived per payload (the default).
	FormatV2 Format = "v2"
	// FormatV1: sealed with the configured key itself, as releases before
	// v2 wrote, and the only format they read. Written only during the
	// passage from such a release (or back to it): while workers of both
	// may read the same runs, every payload stays readable by the older;
	// each payload then still counts against that key's 2³² bound.
	FormatV1 Format = "v1"
)

// ParseFormat reads a TEMPORAL_CODEC_WRITE_FORMAT value.
func ParseFormat(s string) (Format, error) {
	switch f := Format(s); f {
	case FormatV2, FormatV1:
		return f, nil
	}
	return "", fmt.Errorf("%q is not a payload format: v2 (the default) or v1 (while releases before v2 may read the payloads)", s)
}

// Option changes a Codec.
type Option func(*Codec)

// Writing makes the codec write format f (FormatV2 by default).
func Writing(f Format) Option { return func(c *Codec) { c.writes = f } }

// New returns the codec of keys.
func New(keys *KeyRing, opts ...Option) *Codec {
	c := &Codec{keys: keys, writes: FormatV2}
	for _, o := range opts {
		o(c)
	}
	return c
}

// FromString parses a TEMPORAL_CODEC_KEYS value (see ParseKeyRing) into a
// codec.
func FromString(keys string) (*Codec, error) {
	ring, err := ParseKeyRing(keys)
	if err != nil {
		return nil, err
	}
	return New(ring), nil
}

// Keys is the codec's key ring.
func (c *Codec) Keys() *KeyRing { return c.keys }

// Encode encrypts every payload with a key derived from the newest key
// (or, writing FormatV1, with the newest key itself).
func (c *Codec) Encode(payloads []*commonpb.Payload) ([]*commonpb.Payload, error) {
	id := c.keys.NewestID()
	k, ok := c.keys.key(id)
	if !ok {
		return payloads, errors.New("encrypt payload: the key ring holds no key (build it with ParseKeyRing)")
	}
	out := make([]*commonpb.Payload, len(payloads))
	for i, p := range payloads {
		plain, err := p.Marshal()
		if err != nil {
			return payloads, fmt.Errorf("encrypt payload: marshal: %w", err)
		}
		// The nonce is random although the derived key seals this payload
		// only: it costs 12 bytes and keeps a payload's secrecy from
		// resting on its salt alone being unique.
		prefix, encoding := saltSize+nonceSize, EncodingEncrypted
		if c.writes == FormatV1 {
			prefix, encoding = nonceSize, EncodingEncryptedV1
		}
		data := make([]byte, prefix, prefix+len(plain)+tagSize)
		if _, err := rand.Read(data); err != nil {
			return payloads, fmt.Errorf("encrypt payload: salt and nonce: %w", err)
		}
		nonce, aead := data[prefix-nonceSize:], k.v1
		if c.writes != FormatV1 {
			var err error
			if aead, err = k.derive(id, data[:saltSize]); err != nil {
				return payloads, fmt.Errorf("encrypt payload with key %q: %w", id, err)
			}
		}
		out[i] = &commonpb.Payload{
			Metadata: map[string][]byte{
				MetadataEncoding: []byte(encoding),
				MetadataKeyID:    []byte(id),
			},
			Data: aead.Seal(data, nonce, plain, []byte(id)),
		}
	}
	return out, nil
}

// Decode decrypts the payloads this codec encrypted, in either format, with
// the key each names; the others pass through unchanged, so that histories
// written before encryption was turned on still replay and read.
func (c *Codec) Decode(payloads []*commonpb.Payload) ([]*commonpb.Payload, error) {
	out := make([]*commonpb.Payload, len(payloads))
	for i, p := range payloads {
		switch string(p.GetMetadata()[MetadataEncoding]) {
		case EncodingEncrypted, EncodingEncryptedV1:
			decrypted, err := c.decrypt(p)
			if err != nil {
				return payloads, err
			}
			out[i] = decrypted
		default:
			out[i] = p
		}
	}
	return out, nil
}

func (c *Codec) decrypt(p *commonpb.Payload) (*commonpb.Payload, error) {
	idBytes, ok := p.GetMetadata()[MetadataKeyID]
	if !ok || len(idBytes) == 0 {
		return nil, fmt.Errorf("decrypt payload: its metadata names no %s", MetadataKeyID)
	}
	id := string(idBytes)
	k, ok := c.keys.key(id)
	if !ok {
		// The id is safe to show: ids are names, never key material; but
		// one from a forged payload is quoted, not trusted.
		return nil, fmt.Errorf("decrypt payload: %w: %q (the ring holds %v)", ErrUnknownKeyID, id, c.keys.IDs())
	}
	data := p.GetData()
	aead, layout := k.v1, "nonce||ciphertext"
	if string(p.GetMetadata()[MetadataEncoding]) == EncodingEncrypted {
		layout = "salt||nonce||ciphertext"
		if len(data) < saltSize {
			return nil, fmt.Errorf("decrypt payload with key %q: %d bytes is too short to be %s", id, len(data), layout)
		}
		var err error
		if aead, err = k.derive(id, data[:saltSize]); err != nil {
			return nil, fmt.Errorf("decrypt payload with key %q: %w", id, err)
		}
		data = data[saltSize:]
	}
	if len(data) < nonceSize+tagSize {
		return nil, fmt.Errorf("decrypt payload with key %q: %d bytes is too short to be %s", id, len(p.GetData()), layout)
	}
	plain, err := aead.Open(nil, data[:nonceSize], data[nonceSize:], idBytes)
	if err != nil {
		return nil, fmt.Errorf("decrypt payload with key %q (tampered, or encrypted by another key of that id): %w", id, err)
	}
	var original commonpb.Payload
	if err := original.Unmarshal(plain); err != nil {
		return nil, fmt.Errorf("decrypt payload with key %q: unmarshal: %w", id, err)
	}
	return &original, nil
}

// derive is the AES-256-GCM cipher of the key derived from k for one
// payload's salt.
func (k *ringKey) derive(id string, salt []byte) (cipher.AEAD, error) {
	key, err := hkdf.Key(sha256.New, k.secret, salt, deriveLabel+"\x00"+id, KeySize)
	if err != nil {
		return nil, fmt.Errorf("derive key: %w", err)
	}
	return newAEAD(key)
}

// newAEAD is the AES-256-GCM cipher of key.
func newAEAD(key []byte) (cipher.AEAD, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("aes: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("gcm: %w", err)
	}
	return aead, nil
}

// GCM's standard nonce and tag sizes, which both formats use.
const (
	nonceSize = 12
	tagSize   = 16
)
