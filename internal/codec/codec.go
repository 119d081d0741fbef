package codec

import (
	"crypto/rand"
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
	// EncodingEncrypted marks a payload this codec encrypted.
	EncodingEncrypted = "binary/encrypted"
	// MetadataKeyID names the key that encrypted the payload.
	MetadataKeyID = "encryption-key-id"
)

// ErrUnknownKeyID is the error of a payload encrypted with a key the ring
// doesn't hold (removed too early, or a ring of another environment).
var ErrUnknownKeyID = errors.New("payload encrypted with a key id the key ring doesn't hold")

// Codec is an AES-256-GCM converter.PayloadCodec. An encrypted payload's
// data is nonce||ciphertext of the whole original payload (its metadata
// too: the encoding and the Go type say things as well), sealed with the
// key id as additional authenticated data, so a payload relabeled with
// another key id fails like a tampered one.
type Codec struct {
	keys *KeyRing
}

var _ converter.PayloadCodec = (*Codec)(nil)

// New returns the codec of keys.
func New(keys *KeyRing) *Codec { return &Codec{keys: keys} }

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

// Encode encrypts every payload with the newest key.
func (c *Codec) Encode(payloads []*commonpb.Payload) ([]*commonpb.Payload, error) {
	id := c.keys.NewestID()
	aead, ok := c.keys.cipherFor(id)
	if !ok {
		return payloads, errors.New("encrypt payload: the key ring holds no key (build it with ParseKeyRing)")
	}
	out := make([]*commonpb.Payload, len(payloads))
	for i, p := range payloads {
		plain, err := p.Marshal()
		if err != nil {
			return payloads, fmt.Errorf("encrypt payload: marshal: %w", err)
		}
		nonce := make([]byte, aead.NonceSize(), aead.NonceSize()+len(plain)+aead.Overhead())
		if _, err := rand.Read(nonce); err != nil {
			return payloads, fmt.Errorf("encrypt payload: nonce: %w", err)
		}
		out[i] = &commonpb.Payload{
			Metadata: map[string][]byte{
				MetadataEncoding: []byte(EncodingEncrypted),
				MetadataKeyID:    []byte(id),
			},
			Data: aead.Seal(nonce, nonce, plain, []byte(id)),
		}
	}
	return out, nil
}

// Decode decrypts the payloads this codec encrypted, with the key each
// names; the others pass through unchanged, so that histories written
// before encryption was turned on still replay and read.
func (c *Codec) Decode(payloads []*commonpb.Payload) ([]*commonpb.Payload, error) {
	out := make([]*commonpb.Payload, len(payloads))
	for i, p := range payloads {
		if string(p.GetMetadata()[MetadataEncoding]) != EncodingEncrypted {
			out[i] = p
			continue
		}
		decrypted, err := c.decrypt(p)
		if err != nil {
			return payloads, err
		}
		out[i] = decrypted
	}
	return out, nil
}

func (c *Codec) decrypt(p *commonpb.Payload) (*commonpb.Payload, error) {
	idBytes, ok := p.GetMetadata()[MetadataKeyID]
	if !ok || len(idBytes) == 0 {
		return nil, fmt.Errorf("decrypt payload: its metadata names no %s", MetadataKeyID)
	}
	id := string(idBytes)
	aead, ok := c.keys.cipherFor(id)
	if !ok {
		// The id is safe to show: ids are names, never key material; but
		// one from a forged payload is quoted, not trusted.
		return nil, fmt.Errorf("decrypt payload: %w: %q (the ring holds %v)", ErrUnknownKeyID, id, c.keys.IDs())
	}
	data := p.GetData()
	if len(data) < aead.NonceSize()+aead.Overhead() {
		return nil, fmt.Errorf("decrypt payload with key %q: %d bytes is too short to be nonce||ciphertext", id, len(data))
	}
	nonce, sealed := data[:aead.NonceSize()], data[aead.NonceSize():]
	plain, err := aead.Open(nil, nonce, sealed, idBytes)
	if err != nil {
		return nil, fmt.Errorf("decrypt payload with key %q (tampered, or encrypted by another key of that id): %w", id, err)
	}
	var original commonpb.Payload
	if err := original.Unmarshal(plain); err != nil {
		return nil, fmt.Errorf("decrypt payload with key %q: unmarshal: %w", id, err)
	}
	return &original, nil
}
