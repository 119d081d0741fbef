package config_test

import (
	"crypto/x509"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/pixbank/pix/internal/config"
	"github.com/pixbank/pix/internal/tooling/testpki"
)

func temporalOptions(t *testing.T, env map[string]string) (config.Config, client.Options) {
	t.Helper()
	c, err := config.FromLookup(config.LookupIn(env))
	require.NoError(t, err)
	opts, err := c.TemporalClientOptions()
	require.NoError(t, err)
	return c, opts
}

// Without TEMPORAL_* settings the client speaks plain gRPC to the
// development server, as it always did.
func TestTemporalClientDefaultsToAPlainConnection(t *testing.T) {
	c, opts := temporalOptions(t, nil)
	require.Equal(t, "127.0.0.1:7233", opts.HostPort)
	require.Equal(t, "default", opts.Namespace)
	require.Nil(t, opts.ConnectionOptions.TLS)
	require.Nil(t, opts.Credentials)
	require.Equal(t, c.TemporalAddress, opts.HostPort)

	// A test sets the address on the struct; the options follow it.
	c.TemporalAddress, c.TemporalNamespace = "127.0.0.1:7999", "pix"
	opts, err := c.TemporalClientOptions()
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1:7999", opts.HostPort)
	require.Equal(t, "pix", opts.Namespace)
}

// Temporal Cloud: an API key turns TLS on (system roots), unless told
// otherwise, and sending the key in clear is refused.
func TestTemporalCloudAPIKey(t *testing.T) {
	c, opts := temporalOptions(t, map[string]string{
		"TEMPORAL_ADDRESS":   "eu-west-1.aws.api.temporal.io:7233",
		"TEMPORAL_NAMESPACE": "pix.a1b2c",
		"TEMPORAL_API_KEY":   "cloud-api-key",
	})
	require.Equal(t, "eu-west-1.aws.api.temporal.io:7233", c.TemporalAddress)
	require.Equal(t, "pix.a1b2c", c.TemporalNamespace)
	require.Equal(t, "eu-west-1.aws.api.temporal.io:7233", opts.HostPort)
	require.Equal(t, "pix.a1b2c", opts.Namespace)
	require.NotNil(t, opts.Credentials, "the API key is the client's credentials")
	require.NotNil(t, opts.ConnectionOptions.TLS, "an API key turns TLS on")
	require.Nil(t, opts.ConnectionOptions.TLS.RootCAs, "the system's roots verify Temporal Cloud")
	require.False(t, opts.ConnectionOptions.TLS.InsecureSkipVerify)

	_, err := config.FromLookup(config.LookupIn(map[string]string{"TEMPORAL_API_KEY": "cloud-api-key", "TEMPORAL_TLS": "false"}))
	require.ErrorContains(t, err, "in clear")
}

// The API key can come from a file (a Docker or Kubernetes secret), like
// the service's other secrets; never both, never empty.
func TestTemporalAPIKeyFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "temporal-api-key")
	require.NoError(t, os.WriteFile(path, []byte("key-from-file\n"), 0o600))
	c, opts := temporalOptions(t, map[string]string{"TEMPORAL_API_KEY_FILE": path})
	require.Equal(t, "key-from-file", c.TemporalConnection.APIKey)
	require.NotNil(t, opts.Credentials)
	require.NotNil(t, opts.ConnectionOptions.TLS)

	_, err := config.FromLookup(config.LookupIn(map[string]string{"TEMPORAL_API_KEY_FILE": path, "TEMPORAL_API_KEY": "inline"}))
	require.ErrorContains(t, err, "set one, not both")
	_, err = config.FromLookup(config.LookupIn(map[string]string{"TEMPORAL_API_KEY": ""}))
	require.ErrorContains(t, err, "TEMPORAL_API_KEY: must not be empty")
}

// A self-hosted cluster with mutual TLS: the client certificate, the
// cluster's own CA and the name its certificate carries.
func TestTemporalMutualTLS(t *testing.T) {
	dir := t.TempDir()
	ca := testpki.NewAuthority(t, "temporal CA")
	cert, key := ca.Issue(t, "pix-worker", x509.ExtKeyUsageClientAuth)
	env := map[string]string{
		"TEMPORAL_ADDRESS":                 "temporal.internal:7233",
		"TEMPORAL_TLS_CLIENT_CERT_PATH":    testpki.WriteFile(t, dir, "client.pem", cert),
		"TEMPORAL_TLS_CLIENT_KEY_PATH":     testpki.WriteFile(t, dir, "client-key.pem", key),
		"TEMPORAL_TLS_SERVER_CA_CERT_PATH": testpki.WriteFile(t, dir, "ca.pem", ca.PEM),
		"TEMPORAL_TLS_SERVER_NAME":         "frontend.temporal.internal",
	}
	_, opts := temporalOptions(t, env)
	tlsCfg := opts.ConnectionOptions.TLS
	require.NotNil(t, tlsCfg)
	require.Len(t, tlsCfg.Certificates, 1, "the client certificate")
	require.NotNil(t, tlsCfg.RootCAs, "the cluster's CA, not the system's roots")
	require.Equal(t, "frontend.temporal.internal", tlsCfg.ServerName)
	require.Nil(t, opts.Credentials)

	// A certificate that can't be read fails the start, not the first call.
	for name, change := range map[string]map[string]string{
		"missing key":       {"TEMPORAL_TLS_CLIENT_KEY_PATH": filepath.Join(dir, "nope.pem")},
		"no key at all":     {"TEMPORAL_TLS_CLIENT_KEY_PATH": ""},
		"CA that isn't PEM": {"TEMPORAL_TLS_SERVER_CA_CERT_PATH": testpki.WriteFile(t, dir, "junk.pem", []byte("junk"))},
	} {
		broken := map[string]string{}
		for k, v := range env {
			broken[k] = v
		}
		for k, v := range change {
			if v == "" {
				delete(broken, k)
			} else {
				broken[k] = v
			}
		}
		_, err := config.FromLookup(config.LookupIn(broken))
		require.ErrorContains(t, err, "TEMPORAL_TLS", name)
	}
}

// A boolean envconfig can't read is an error here, not TLS silently left
// as it was.
func TestTemporalTLSBooleansAreChecked(t *testing.T) {
	for _, name := range []string{"TEMPORAL_TLS", "TEMPORAL_TLS_DISABLE_HOST_VERIFICATION"} {
		_, err := config.FromLookup(config.LookupIn(map[string]string{name: "yes"}))
		require.ErrorContains(t, err, name+`: "yes" is not true or false`)
	}
	_, opts := temporalOptions(t, map[string]string{"TEMPORAL_TLS": "TRUE"})
	require.NotNil(t, opts.ConnectionOptions.TLS, "TEMPORAL_TLS=true without certificates: TLS with the system's roots")
	require.Empty(t, opts.ConnectionOptions.TLS.Certificates)
}

// A profile of a TOML file (the temporal CLI's format), read only when
// TEMPORAL_CONFIG_FILE or TEMPORAL_PROFILE asks; the variables win over
// the file, and a key the format doesn't know is an error.
func TestTemporalProfileFile(t *testing.T) {
	dir := t.TempDir()
	file := testpki.WriteFile(t, dir, "temporal.toml", []byte(`
[profile.default]
address = "should-not-be-used:7233"

[profile.prod]
address = "temporal.prod.internal:7233"
namespace = "pix-file"
api_key = "key-from-profile"
`))
	c, opts := temporalOptions(t, map[string]string{
		"TEMPORAL_CONFIG_FILE": file,
		"TEMPORAL_PROFILE":     "prod",
		"TEMPORAL_NAMESPACE":   "pix-env",
	})
	require.Equal(t, "temporal.prod.internal:7233", c.TemporalAddress)
	require.Equal(t, "pix-env", c.TemporalNamespace, "the variable wins over the file")
	require.Equal(t, "temporal.prod.internal:7233", opts.HostPort)
	require.NotNil(t, opts.Credentials)
	require.NotNil(t, opts.ConnectionOptions.TLS)

	_, err := config.FromLookup(config.LookupIn(map[string]string{"TEMPORAL_CONFIG_FILE": file, "TEMPORAL_PROFILE": "staging"}))
	require.ErrorContains(t, err, "staging")

	typo := testpki.WriteFile(t, dir, "typo.toml", []byte("[profile.default]\naddres = \"x:7233\"\n"))
	_, err = config.FromLookup(config.LookupIn(map[string]string{"TEMPORAL_CONFIG_FILE": typo}))
	require.ErrorContains(t, err, "addres")
}

// The temporal CLI reads ~/.config/temporalio/temporal.toml by itself; the
// service doesn't, unless a variable asks: what a server connects to never
// depends on what happens to lie in its account's home directory.
func TestTemporalNoFileUnlessAsked(t *testing.T) {
	home := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", home)
	require.NoError(t, os.MkdirAll(filepath.Join(home, "temporalio"), 0o700))
	testpki.WriteFile(t, filepath.Join(home, "temporalio"), "temporal.toml", []byte("[profile.default]\naddress = \"from-home:7233\"\n"))

	c, _ := temporalOptions(t, nil)
	require.Equal(t, "127.0.0.1:7233", c.TemporalAddress)
	c, _ = temporalOptions(t, map[string]string{"TEMPORAL_PROFILE": "default"})
	require.Equal(t, "from-home:7233", c.TemporalAddress, "asked for: the CLI's default file")
}
