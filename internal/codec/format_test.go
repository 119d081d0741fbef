package codec_test

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/pixbank/pix/internal/codec"
)

// goldenVector is a payload and its encryption, as committed in testdata.
type goldenVector struct {
	Name      string          `json:"name"`
	Plain     json.RawMessage `json:"plain"`
	Encrypted json.RawMessage `json:"encrypted"`
}

// readGolden reads a file of golden vectors: the key ring that encrypted
// them, and the vectors.
func readGolden(t *testing.T, file string) (keys string, plain, encrypted []*commonpb.Payload) {
	t.Helper()
	b, err := os.ReadFile(file)
	require.NoError(t, err)
	var golden struct {
		Keys    string         `json:"keys"`
		Vectors []goldenVector `json:"vectors"`
	}
	require.NoError(t, json.Unmarshal(b, &golden))
	require.NotEmpty(t, golden.Vectors)
	for _, v := range golden.Vectors {
		var p, e commonpb.Payload
		require.NoError(t, protojson.Unmarshal(v.Plain, &p), v.Name)
		require.NoError(t, protojson.Unmarshal(v.Encrypted, &e), v.Name)
		plain, encrypted = append(plain, &p), append(encrypted, &e)
	}
	return golden.Keys, plain, encrypted
}

// The payloads the codec wrote before per-payload keys (format v1,
// testdata/v1_golden.json, made by the code of then) still decrypt: with
// the ring that wrote them, and after one more rotation.
func TestV1PayloadsStillDecrypt(t *testing.T) {
	keys, encrypted := requireGoldenDecrypts(t, "testdata/v1_golden.json", codec.EncodingEncryptedV1)
	// Still authenticated: a flipped bit fails, and so does a payload of
	// the first format relabeled as v2 (its first bytes taken for a salt).
	tampered := proto.Clone(encrypted[1]).(*commonpb.Payload)
	tampered.Data[len(tampered.Data)-1] ^= 1
	_, err := mustCodec(t, keys).Decode([]*commonpb.Payload{tampered})
	require.ErrorContains(t, err, "authentication failed")
	upgraded := proto.Clone(encrypted[1]).(*commonpb.Payload)
	upgraded.Metadata[codec.MetadataEncoding] = []byte(codec.EncodingEncrypted)
	_, err = mustCodec(t, keys).Decode([]*commonpb.Payload{upgraded})
	require.ErrorContains(t, err, "authentication failed")
}

// What the codec writes today (format v2, testdata/v2_golden.json) keeps
// decrypting: a change to the derivation or the layout fails here.
func TestV2PayloadsStillDecrypt(t *testing.T) {
	requireGoldenDecrypts(t, "testdata/v2_golden.json", codec.EncodingEncrypted)
}

// requireGoldenDecrypts checks that file's vectors, all of format, decrypt
// to their plain payloads with the ring that wrote them and after one more
// rotation; it returns that ring and the encrypted vectors.
func requireGoldenDecrypts(t *testing.T, file, format string) (keys string, encrypted []*commonpb.Payload) {
	t.Helper()
	keys, plain, encrypted := readGolden(t, file)
	for _, p := range encrypted {
		require.Equal(t, format, string(p.Metadata[codec.MetadataEncoding]))
	}
	for _, ring := range []string{keys, keys + ",rotated-later=" + testKey(0x33)} {
		dec, err := mustCodec(t, ring).Decode(encrypted)
		require.NoError(t, err, ring)
		for i := range plain {
			require.True(t, plain[i].Equal(dec[i]), "vector %d: want %v, got %v", i, plain[i], dec[i])
		}
	}
	return keys, encrypted
}

// Format v2 is what docs/security.md says, opened here from the
// description alone: HKDF-SHA256(key, salt, label 0 key id) → AES-256-GCM,
// data salt||nonce||ciphertext, the key id as additional data.
func TestV2FormatAsDocumented(t *testing.T) {
	keys, plain, encrypted := readGolden(t, "testdata/v2_golden.json")
	secrets := map[string][]byte{}
	for _, entry := range strings.Split(keys, ",") {
		id, b64, _ := strings.Cut(entry, "=")
		key, err := base64.StdEncoding.DecodeString(b64)
		require.NoError(t, err)
		secrets[id] = key
	}
	for i, p := range encrypted {
		require.Equal(t, "binary/encrypted-v2", string(p.Metadata["encoding"]))
		id := string(p.Metadata["encryption-key-id"])
		salt, nonce, sealed := p.Data[:32], p.Data[32:44], p.Data[44:]
		derived, err := hkdf.Key(sha256.New, secrets[id], salt, "pix temporal payload codec v2\x00"+id, 32)
		require.NoError(t, err)
		block, err := aes.NewCipher(derived)
		require.NoError(t, err)
		gcm, err := cipher.NewGCM(block)
		require.NoError(t, err)
		opened, err := gcm.Open(nil, nonce, sealed, []byte(id))
		require.NoError(t, err, "vector %d", i)
		want, err := plain[i].Marshal()
		require.NoError(t, err)
		require.True(t, bytes.Equal(want, opened), "vector %d", i)
	}
}

// Property: whatever the payload, it round-trips, and its encryption holds
// none of its bytes in clear. Decode never panics on what an attacker could
// write into a history.
func FuzzRoundTrip(f *testing.F) {
	c, err := codec.FromString("k1=" + testKey(1) + ",k2=" + testKey(2))
	require.NoError(f, err)
	f.Add([]byte("json/plain"), []byte(`{"payer":"Joana Dias"}`))
	f.Add([]byte(""), []byte(""))
	f.Fuzz(func(t *testing.T, encoding, data []byte) {
		in := &commonpb.Payload{Metadata: map[string][]byte{"encoding": encoding}, Data: data}
		enc, err := c.Encode([]*commonpb.Payload{in})
		require.NoError(t, err)
		dec, err := c.Decode(enc)
		require.NoError(t, err)
		require.True(t, in.Equal(dec[0]))

		// The same bytes as a forged encrypted payload, of either format:
		// an error, never a panic nor a payload.
		for _, format := range []string{codec.EncodingEncrypted, codec.EncodingEncryptedV1} {
			forged := &commonpb.Payload{Metadata: map[string][]byte{"encoding": []byte(format), "encryption-key-id": []byte("k2")}, Data: data}
			_, err := c.Decode([]*commonpb.Payload{forged})
			require.Error(t, err)
		}
	})
}

func BenchmarkEncode(b *testing.B) {
	c, err := codec.FromString("k1=" + testKey(1))
	require.NoError(b, err)
	p := &commonpb.Payload{Metadata: map[string][]byte{"encoding": []byte("json/plain")}, Data: []byte(strings.Repeat("x", 300))}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Encode([]*commonpb.Payload{p}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecode(b *testing.B) {
	c, err := codec.FromString("k1=" + testKey(1))
	require.NoError(b, err)
	p := &commonpb.Payload{Metadata: map[string][]byte{"encoding": []byte("json/plain")}, Data: []byte(strings.Repeat("x", 300))}
	enc, err := c.Encode([]*commonpb.Payload{p})
	require.NoError(b, err)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Decode(enc); err != nil {
			b.Fatal(err)
		}
	}
}
