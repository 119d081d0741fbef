package codec_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"

	"github.com/pixbank/pix/internal/codec"
)

// testKey is a fixed 32-byte key, base64, distinct per seed.
func testKey(seed byte) string {
	return base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{seed}, codec.KeySize))
}

func mustCodec(t *testing.T, keys string) *codec.Codec {
	t.Helper()
	c, err := codec.FromString(keys)
	require.NoError(t, err)
	return c
}

// memo is a memo like the one an incoming PIX's run carries.
var memo = map[string]any{"payer": map[string]any{"name": "Joana Dias", "document": "12345678901"}}

func plainPayload(t *testing.T, v any) *commonpb.Payload {
	t.Helper()
	p, err := converter.GetDefaultDataConverter().ToPayload(v)
	require.NoError(t, err)
	return p
}

func TestRoundTrip(t *testing.T) {
	c := mustCodec(t, "k1="+testKey(1))
	in := []*commonpb.Payload{plainPayload(t, memo), plainPayload(t, "second"), plainPayload(t, nil)}
	enc, err := c.Encode(in)
	require.NoError(t, err)
	require.Len(t, enc, 3)
	for _, p := range enc {
		require.Equal(t, codec.EncodingEncrypted, string(p.Metadata[codec.MetadataEncoding]))
		require.Equal(t, "k1", string(p.Metadata[codec.MetadataKeyID]))
	}
	// A fresh salt (so a fresh key) and nonce each time: the same
	// plaintext never encrypts the same.
	again, err := c.Encode(in[:1])
	require.NoError(t, err)
	require.NotEqual(t, enc[0].Data[:32], again[0].Data[:32], "the salts differ")
	require.NotEqual(t, enc[0].Data[32:44], again[0].Data[32:44], "the nonces differ")
	require.NotEqual(t, enc[0].Data[44:], again[0].Data[44:])
	plain, err := in[0].Marshal()
	require.NoError(t, err)
	require.Len(t, enc[0].Data, 32+12+len(plain)+16, "salt||nonce||ciphertext||tag")

	dec, err := c.Decode(enc)
	require.NoError(t, err)
	for i := range in {
		require.True(t, in[i].Equal(dec[i]), "payload %d: want %v, got %v", i, in[i], dec[i])
	}
}

// The memo the Temporal UI shows carries no payer data once encoded.
func TestEncodedMemoHidesPayer(t *testing.T) {
	c := mustCodec(t, "k1="+testKey(1))
	dc := codec.NewConverters(c).DataConverter
	p, err := dc.ToPayload(memo)
	require.NoError(t, err)
	raw, err := json.Marshal(p)
	require.NoError(t, err)
	wire, err := p.Marshal()
	require.NoError(t, err)
	for _, b := range [][]byte{raw, wire, p.Data} {
		require.NotContains(t, string(b), "Joana")
		require.NotContains(t, string(b), "12345678901")
	}
	var back map[string]any
	require.NoError(t, dc.FromPayload(p, &back))
	require.Equal(t, "Joana Dias", back["payer"].(map[string]any)["name"])
}

func TestRotation(t *testing.T) {
	old := mustCodec(t, "k1="+testKey(1))
	encOld, err := old.Encode([]*commonpb.Payload{plainPayload(t, "before rotation")})
	require.NoError(t, err)

	rotated := mustCodec(t, "k1="+testKey(1)+", k2="+testKey(2))
	require.Equal(t, "k2", rotated.Keys().NewestID())
	require.Equal(t, []string{"k1", "k2"}, rotated.Keys().IDs())
	dec, err := rotated.Decode(encOld)
	require.NoError(t, err, "a payload of the old key still reads")
	var s string
	require.NoError(t, converter.GetDefaultDataConverter().FromPayload(dec[0], &s))
	require.Equal(t, "before rotation", s)

	encNew, err := rotated.Encode([]*commonpb.Payload{plainPayload(t, "after rotation")})
	require.NoError(t, err)
	require.Equal(t, "k2", string(encNew[0].Metadata[codec.MetadataKeyID]), "the newest key encrypts")
	_, err = old.Decode(encNew)
	require.ErrorIs(t, err, codec.ErrUnknownKeyID, "the old ring lacks k2")
}

// A ring not built by ParseKeyRing holds no key: an error, not a panic.
func TestEmptyKeyRing(t *testing.T) {
	_, err := codec.New(&codec.KeyRing{}).Encode([]*commonpb.Payload{plainPayload(t, "x")})
	require.ErrorContains(t, err, "holds no key")
	enc, err := mustCodec(t, "k1="+testKey(1)).Encode([]*commonpb.Payload{plainPayload(t, "x")})
	require.NoError(t, err)
	_, err = codec.New(&codec.KeyRing{}).Decode(enc)
	require.ErrorIs(t, err, codec.ErrUnknownKeyID)
	require.Equal(t, "KeyRing(none)", (*codec.KeyRing)(nil).String())
}

func TestUnknownKeyID(t *testing.T) {
	enc, err := mustCodec(t, "prod-2024="+testKey(1)).Encode([]*commonpb.Payload{plainPayload(t, "x")})
	require.NoError(t, err)
	_, err = mustCodec(t, "other="+testKey(1)).Decode(enc)
	require.ErrorIs(t, err, codec.ErrUnknownKeyID)
	require.Contains(t, err.Error(), `"prod-2024"`, "the error names the id")
}

func TestTamperedPayloadFails(t *testing.T) {
	c := mustCodec(t, "k1="+testKey(1)+",k2="+testKey(2))
	fresh := func() *commonpb.Payload {
		enc, err := c.Encode([]*commonpb.Payload{plainPayload(t, memo)})
		require.NoError(t, err)
		return enc[0]
	}
	// A bit flipped anywhere: in the salt (another derived key), the
	// nonce, the ciphertext or the tag.
	for _, at := range []struct {
		name string
		i    int
	}{{"salt", 0}, {"salt's end", 31}, {"nonce", 32}, {"ciphertext", 44}, {"tag", -1}} {
		flipped := fresh()
		i := at.i
		if i < 0 {
			i += len(flipped.Data)
		}
		flipped.Data[i] ^= 0x01
		_, err := c.Decode([]*commonpb.Payload{flipped})
		require.ErrorContains(t, err, "authentication failed", at.name)
	}

	// Relabeled to the first format: its key is the configured one, not
	// the derived one, so it fails too (the reverse: TestV1PayloadsStillDecrypt).
	downgraded := fresh()
	downgraded.Metadata[codec.MetadataEncoding] = []byte(codec.EncodingEncryptedV1)
	_, err := c.Decode([]*commonpb.Payload{downgraded})
	require.ErrorContains(t, err, "authentication failed")

	// Relabeled to another key the ring holds: the key id is bound as
	// additional data, so even the right key under the wrong label fails.
	relabeled := fresh()
	relabeled.Metadata[codec.MetadataKeyID] = []byte("k1")
	_, err = c.Decode([]*commonpb.Payload{relabeled})
	require.ErrorContains(t, err, "authentication failed")

	for _, n := range []int{0, 10, 32, 32 + 12 + 15} {
		short := fresh()
		short.Data = short.Data[:n]
		_, err = c.Decode([]*commonpb.Payload{short})
		require.ErrorContains(t, err, "too short to be salt||nonce||ciphertext", "%d bytes", n)
	}

	unnamed := fresh()
	delete(unnamed.Metadata, codec.MetadataKeyID)
	_, err = c.Decode([]*commonpb.Payload{unnamed})
	require.ErrorContains(t, err, codec.MetadataKeyID)
}

// Histories written before encryption was turned on still read.
func TestUnencryptedPassesThrough(t *testing.T) {
	c := mustCodec(t, "k1="+testKey(1))
	plain := []*commonpb.Payload{plainPayload(t, memo), {Metadata: map[string][]byte{"encoding": []byte("binary/null")}}, {}}
	dec, err := c.Decode(plain)
	require.NoError(t, err)
	for i := range plain {
		require.Same(t, plain[i], dec[i])
	}
	// Mixed: one encrypted, one not.
	enc, err := c.Encode(plain[:1])
	require.NoError(t, err)
	dec, err = c.Decode([]*commonpb.Payload{enc[0], plain[0]})
	require.NoError(t, err)
	require.True(t, plain[0].Equal(dec[0]))
	require.Same(t, plain[0], dec[1])
}

// Failure messages and stack traces are encoded with the codec too.
func TestFailureConverterEncodesMessages(t *testing.T) {
	cv := codec.NewConverters(mustCodec(t, "k1="+testKey(1)))
	f := cv.FailureConverter.ErrorToFailure(temporal.NewApplicationError("payer Joana Dias refused", "Refused"))
	raw, err := f.Marshal()
	require.NoError(t, err)
	require.NotContains(t, string(raw), "Joana")
	require.Equal(t, codec.EncodingEncrypted, string(f.GetEncodedAttributes().GetMetadata()[codec.MetadataEncoding]))
	back := cv.FailureConverter.FailureToError(f)
	require.ErrorContains(t, back, "payer Joana Dias refused")
	// Decoding leaves the failure it was given encoded: the SDK records
	// a local activity's failure proto after the workflow has read it.
	require.Equal(t, "Encoded failure", f.GetMessage())
	require.NoError(t, cv.FailureConverter.FailureToError(nil))
}

func TestParseKeyRingRefusals(t *testing.T) {
	k1, k2 := testKey(1), testKey(2)
	short := base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 16))
	for _, tc := range []struct {
		name, keys, want string
	}{
		{"nothing", "", "no keys"},
		{"blank", "  ", "no keys"},
		{"empty entry", "k1=" + k1 + ",", "entry 2 is empty"},
		{"no equals", "k1" + strings.TrimRight(k1, "="), "entry 1 is not keyid=base64key"},
		{"empty id", "=" + k1, "entry 1 has an empty key id"},
		{"duplicate id", "k1=" + k1 + ",k1=" + k2, `key id "k1" appears twice`},
		{"short key", "k1=" + short, "the key is 16 bytes, want 32"},
		{"not base64", "k1=not*base64!", "not standard base64"},
		{"url-safe base64 is not std", "k1=" + base64.URLEncoding.EncodeToString(bytes.Repeat([]byte{0xfb}, 32)), "not standard base64"},
		{"bad id characters", "key one=" + k1, "entry 1: the key id may hold only"},
		{"bad id slash", "a/b=" + k1, "entry 1: the key id may hold only"},
		{"bare key", k1, "entry 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := codec.ParseKeyRing(tc.keys)
			require.ErrorContains(t, err, tc.want)
			// Never any key material in the message.
			for _, secret := range []string{k1, strings.TrimRight(k1, "="), k2, short, "not*base64"} {
				require.NotContains(t, err.Error(), secret)
			}
		})
	}
}

func TestParseKeyRingAccepts(t *testing.T) {
	raw := base64.RawStdEncoding.EncodeToString(bytes.Repeat([]byte{3}, 32))
	ring, err := codec.ParseKeyRing(" old.2024_a-1=" + testKey(1) + " ,\nnew=" + raw + "\n")
	require.NoError(t, err)
	require.Equal(t, []string{"old.2024_a-1", "new"}, ring.IDs())
	require.Equal(t, "new", ring.NewestID())
}

// A ring printed or logged by mistake shows its ids, not its keys.
func TestKeyRingPrintsNoKeys(t *testing.T) {
	ring, err := codec.ParseKeyRing("k1=" + testKey(1))
	require.NoError(t, err)
	var logged bytes.Buffer
	slog.New(slog.NewTextHandler(&logged, nil)).Info("config", "keys", ring)
	for _, s := range []string{fmt.Sprintf("%v", ring), fmt.Sprintf("%+v", ring), fmt.Sprintf("%#v", ring), fmt.Sprint(struct{ K *codec.KeyRing }{ring}), logged.String()} {
		require.Contains(t, s, "k1")
		require.NotContains(t, s, "0x1") // no cipher internals
		require.NotContains(t, s, "ciphers")
		require.NotContains(t, s, "secret")
		require.NotContains(t, s, "[1 1 1") // no key bytes
	}
}
