package config_test

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"

	"github.com/pixbank/pix/internal/codec"
	"github.com/pixbank/pix/internal/config"
)

// TEMPORAL_CODEC_WRITE_FORMAT chooses what the processes' codec writes
// (v2 unless set); anything else stops the process at start.
func TestCodecWriteFormat(t *testing.T) {
	keys := "k1=" + base64.StdEncoding.EncodeToString([]byte(strings.Repeat("k", codec.KeySize)))
	written := func(env map[string]string) string {
		t.Helper()
		c, err := config.FromLookup(config.LookupIn(env))
		require.NoError(t, err)
		out, err := c.PayloadCodec().Encode([]*commonpb.Payload{{Data: []byte("x")}})
		require.NoError(t, err)
		return string(out[0].Metadata[codec.MetadataEncoding])
	}
	require.Equal(t, codec.EncodingEncrypted, written(map[string]string{"TEMPORAL_CODEC_KEYS": keys}))
	require.Equal(t, codec.EncodingEncryptedV1, written(map[string]string{"TEMPORAL_CODEC_KEYS": keys, "TEMPORAL_CODEC_WRITE_FORMAT": "v1"}))
	_, err := config.FromLookup(config.LookupIn(map[string]string{"TEMPORAL_CODEC_KEYS": keys, "TEMPORAL_CODEC_WRITE_FORMAT": "v3"}))
	require.ErrorContains(t, err, "TEMPORAL_CODEC_WRITE_FORMAT")

	c, err := config.FromLookup(config.LookupIn(nil))
	require.NoError(t, err)
	require.Nil(t, c.PayloadCodec(), "no keys: plain payloads")
}
