package codec_test

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"testing"

	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"

	"github.com/pixbank/pix/internal/codec"
)

// Writing FormatV1 (TEMPORAL_CODEC_WRITE_FORMAT=v1, the passage from or
// back to a release before v2): the payload is what such a release writes
// and reads, AES-256-GCM under the configured key itself, nonce||ciphertext,
// the key id as additional data (opened here with the standard library
// alone, as the release before v2 opens it); a codec of either format reads
// it, and v2 payloads stay readable to a codec writing v1.
func TestWritingV1IsWhatAReleaseBeforeV2Reads(t *testing.T) {
	ring, err := codec.ParseKeyRing("k1=" + testKey(0x31))
	require.NoError(t, err)
	v1 := codec.New(ring, codec.Writing(codec.FormatV1))
	v2 := codec.New(ring)
	plain := plainPayload(t, memo)

	sealed, err := v1.Encode([]*commonpb.Payload{plain})
	require.NoError(t, err)
	require.Equal(t, codec.EncodingEncryptedV1, string(sealed[0].Metadata[codec.MetadataEncoding]))
	require.Equal(t, "k1", string(sealed[0].Metadata[codec.MetadataKeyID]))
	block, err := aes.NewCipher(bytes.Repeat([]byte{0x31}, codec.KeySize))
	require.NoError(t, err)
	gcm, err := cipher.NewGCM(block)
	require.NoError(t, err)
	data := sealed[0].Data
	opened, err := gcm.Open(nil, data[:12], data[12:], []byte("k1"))
	require.NoError(t, err, "the release before v2 opens it with the configured key")
	var original commonpb.Payload
	require.NoError(t, original.Unmarshal(opened))
	require.Equal(t, plain.Data, original.Data)

	for _, c := range []*codec.Codec{v1, v2} {
		got, err := c.Decode(sealed)
		require.NoError(t, err)
		require.Equal(t, plain.Data, got[0].Data)
	}
	newer, err := v2.Encode([]*commonpb.Payload{plain})
	require.NoError(t, err)
	require.Equal(t, codec.EncodingEncrypted, string(newer[0].Metadata[codec.MetadataEncoding]))
	got, err := v1.Decode(newer)
	require.NoError(t, err)
	require.Equal(t, plain.Data, got[0].Data)

	_, err = codec.ParseFormat("v3")
	require.Error(t, err)
	f, err := codec.ParseFormat("v1")
	require.NoError(t, err)
	require.Equal(t, codec.FormatV1, f)
}
