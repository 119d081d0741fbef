package config_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/pixbank/pix/internal/config"
)

// DATABASE_URL holds the database password, so it comes from a file like
// the other secrets (docker-compose.yml mounts it from deploy/secrets).
func TestDatabaseURLFromFile(t *testing.T) {
	const url = "postgres://pix:s3cret@postgresql:5432/pix?sslmode=disable"
	file := filepath.Join(t.TempDir(), "database_url")
	require.NoError(t, os.WriteFile(file, []byte(url+"\n"), 0o600))
	c, err := config.FromLookup(config.LookupIn(map[string]string{"DATABASE_URL_FILE": file}))
	require.NoError(t, err)
	require.Equal(t, url, c.DatabaseURL, "the file's trailing newline is not part of the URL")

	c, err = config.FromLookup(config.LookupIn(map[string]string{"DATABASE_URL": url}))
	require.NoError(t, err)
	require.Equal(t, url, c.DatabaseURL, "the variable itself still works")

	for name, env := range map[string]map[string]string{
		"both set":     {"DATABASE_URL": url, "DATABASE_URL_FILE": file},
		"empty":        {"DATABASE_URL": ""},
		"missing file": {"DATABASE_URL_FILE": filepath.Join(t.TempDir(), "nope")},
	} {
		_, err := config.FromLookup(config.LookupIn(env))
		require.Error(t, err, name)
		require.ErrorContains(t, err, "DATABASE_URL", name)
	}
}
