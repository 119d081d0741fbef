package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/types"
)

// Secrets reach the services as files of deploy/secrets, never through the
// environment.
func TestComposeSecrets(t *testing.T) {
	for _, c := range []struct {
		name    string
		oldNew  []string
		message string
	}{
		{"a secret's value in the environment", []string{"ADMIN_TOKEN_FILE: /run/secrets/admin_token", "ADMIN_TOKEN: 7f3c0a4e9b1d2c8e5f6a"},
			"service api: ADMIN_TOKEN holds a secret in the environment"},
		{"a published default", []string{"WEBHOOK_SECRETS_FILE: /run/secrets/webhook_secrets", "WEBHOOK_SECRETS: ${WEBHOOK_SECRETS:-dev-psp=whsec_FxHdX8cWPPDNG0JAwVicsysuvTq2ilXZsBYGmFnV6KQ=}"},
			"service api: WEBHOOK_SECRETS holds a secret in the environment"},
		{"a secret passed from the host's environment", []string{"TEMPORAL_CODEC_KEYS_FILE: /run/secrets/temporal_codec_keys", "TEMPORAL_CODEC_KEYS:"},
			"service worker: TEMPORAL_CODEC_KEYS holds a secret in the environment"},
		{"the database's password in its image's variable", []string{"POSTGRES_PASSWORD_FILE: /run/secrets/postgres_password", "POSTGRES_PASSWORD: pix"},
			"service postgresql: POSTGRES_PASSWORD holds a secret in the environment"},
		{"a URL with a password", []string{"DATABASE_URL_FILE: /run/secrets/database_url", "DATABASE_URL: postgres://pix:pix@postgresql:5432/pix?sslmode=disable"},
			"service migrate: DATABASE_URL holds a URL with a password"},
		{"a secret's file not granted", []string{"    secrets:\n      - grafana_admin_password\n", ""},
			"service grafana: GF_SECURITY_ADMIN_PASSWORD__FILE points at /run/secrets/grafana_admin_password, a secret the service is not granted"},
		{"a secret's file elsewhere", []string{"POSTGRES_PASSWORD_FILE: /run/secrets/postgres_password", "POSTGRES_PASSWORD_FILE: /etc/postgres-password"},
			"service postgresql: POSTGRES_PASSWORD_FILE: want a secret's file, /run/secrets/<name>"},
		{"a secret from the environment", []string{"  admin_token:\n    file: ./deploy/secrets/admin_token", "  admin_token:\n    environment: ADMIN_TOKEN"},
			"secret admin_token: not a file"},
		{"a secret's file outside deploy/secrets", []string{"file: ./deploy/secrets/admin_token", "file: ./admin_token"},
			"is not in deploy/secrets"},
	} {
		t.Run(c.name, func(t *testing.T) { wantError(t, composeErrors(t, c.oldNew...), c.message) })
	}
}

// Traces and metrics never gate the service's start.
func TestComposeObservabilityNeverGates(t *testing.T) {
	t.Run("the API waiting for Jaeger", func(t *testing.T) {
		wantError(t, composeErrors(t,
			"      temporal:\n        condition: service_healthy\n    # Not Jaeger",
			"      temporal:\n        condition: service_healthy\n      jaeger:\n        condition: service_healthy\n    # Not Jaeger"),
			"service api: depends_on jaeger, an observability backend")
	})
	t.Run("the worker waiting for Prometheus", func(t *testing.T) {
		wantError(t, composeErrors(t,
			"      nats:\n        condition: service_healthy\n    # Not Jaeger",
			"      nats:\n        condition: service_healthy\n      prometheus:\n        condition: service_healthy\n    # Not Jaeger"),
			"service worker: depends_on prometheus, an observability backend")
	})
	t.Run("known by its image, whatever its name", func(t *testing.T) {
		wantError(t, composeErrors(t,
			"  jaeger:\n    image: jaegertracing/jaeger:2.19.0", "  jaeger:\n    image: nginx:1.28.0-alpine",
			"  grafana:\n    image: grafana/grafana:12.1.0", "  grafana:\n    image: jaegertracing/jaeger:2.19.0",
			"      temporal:\n        condition: service_healthy\n    # Not Jaeger",
			"      temporal:\n        condition: service_healthy\n      grafana:\n        condition: service_healthy\n    # Not Jaeger"),
			"service api: depends_on grafana, an observability backend")
	})
}

// versionsRoot copies .env and the tests' go.mod files into a temporary
// root, the file rel with each old string replaced by its new one.
func versionsRoot(t *testing.T, rel string, oldNew ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range []string{".env", "tools/temporal/go.mod", "tools/temporal-server/go.mod", "tools/nats/go.mod"} {
		src := filepath.Join(root, f)
		if f == rel {
			src = broken(t, f, oldNew...)
		}
		raw, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), raw, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// The versions of .env are the ones the tests build and compose runs.
func TestVersionsDeclaredOnce(t *testing.T) {
	abs, project := repositoryProject(t)
	if errs := checkVersions(project, versionsRoot(t, "")); len(errs) > 0 {
		t.Fatalf("the repository's versions: %v", errs)
	}
	for _, c := range []struct {
		name, rel string
		oldNew    []string
		message   string
	}{
		{"the tests on another NATS", "tools/nats/go.mod", []string{"nats-server/v2 v2.15.2", "nats-server/v2 v2.11.6"},
			"tools/nats/go.mod: github.com/nats-io/nats-server/v2 2.11.6, but .env's NATS_VERSION=2.15.2"},
		{"the tests' dev server on another Temporal", "tools/temporal/go.mod", []string{"go.temporal.io/server v1.29.1", "go.temporal.io/server v1.30.1"},
			"tools/temporal/go.mod: go.temporal.io/server 1.30.1, but .env's TEMPORAL_VERSION=1.29.1"},
		{"compose on another Temporal", ".env", []string{"TEMPORAL_VERSION=1.29.1", "TEMPORAL_VERSION=1.30.1"},
			"tools/temporal-server/go.mod: go.temporal.io/server 1.29.1, but .env's TEMPORAL_VERSION=1.30.1"},
		{"admin tools of another server", ".env", []string{"TEMPORAL_ADMINTOOLS_VERSION=1.29.1-", "TEMPORAL_ADMINTOOLS_VERSION=1.30.1-"},
			"is not built for TEMPORAL_VERSION=1.29.1"},
		{"PostgreSQL on a series", ".env", []string{"POSTGRES_VERSION=15.20", "POSTGRES_VERSION=15"},
			`POSTGRES_VERSION="15": want a release's exact version`},
	} {
		t.Run(c.name, func(t *testing.T) {
			wantError(t, checkVersions(project, versionsRoot(t, c.rel, c.oldNew...)), c.message)
		})
	}
	t.Run("an image's tag written in the compose file", func(t *testing.T) {
		wantError(t, composeAndVersionErrors(t, "image: nats:${NATS_VERSION:?set in .env}-alpine", "image: nats:2.11.6-alpine"),
			"service nats: image nats:2.11.6-alpine is not .env's NATS_VERSION=2.15.2")
	})
	t.Run("a declared version no service runs", func(t *testing.T) {
		// Both services on the postgres image (the server and the db-roles
		// job, which runs its psql) moved off it.
		wantError(t, composeAndVersionErrors(t, "image: postgres:${POSTGRES_VERSION:?set in .env}", "image: bitnami/postgresql:17.6.0",
			"image: postgres:${POSTGRES_VERSION:?set in .env}", "image: bitnami/postgresql:17.6.0"),
			"POSTGRES_VERSION is declared in .env but no service runs postgres")
	})
	t.Run("no .env", func(t *testing.T) {
		_, errs := checkCompose(context.Background(), filepath.Join(abs, "docker-compose.yml"), t.TempDir())
		wantError(t, errs, "set in .env")
	})
}

// composeAndVersionErrors loads the compose file, broken, and checks its
// images against the repository's .env.
func composeAndVersionErrors(t *testing.T, oldNew ...string) []error {
	t.Helper()
	abs, _ := repositoryProject(t)
	project, errs := checkCompose(context.Background(), broken(t, "docker-compose.yml", oldNew...), abs)
	if project == nil {
		t.Fatal(errs)
	}
	return checkVersions(project, abs)
}

// make compose-secrets makes every secret the compose file declares, in the
// form the service reads, once: a second run keeps them.
func TestComposeSecretsScript(t *testing.T) {
	abs, project := repositoryProject(t)
	dir := filepath.Join(t.TempDir(), "secrets")
	run := func() map[string]string {
		cmd := exec.Command("bash", filepath.Join(abs, "scripts/compose-secrets.sh"))
		cmd.Env = append(os.Environ(), "COMPOSE_SECRETS_DIR="+dir)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("compose-secrets.sh: %v\n%s", err, out)
		}
		made := map[string]string{}
		for name, s := range project.Secrets {
			file := filepath.Join(dir, filepath.Base(s.File))
			raw, err := os.ReadFile(file)
			if err != nil {
				t.Fatalf("secret %s: %v", name, err)
			}
			if fi, _ := os.Stat(file); fi.Mode().Perm() != 0o644 {
				t.Errorf("secret %s: mode %v; the services read it as their own users", name, fi.Mode().Perm())
			}
			made[name] = strings.TrimRight(string(raw), "\n")
		}
		return made
	}
	first := run()
	if fi, _ := os.Stat(dir); fi.Mode().Perm() != 0o700 {
		t.Errorf("%s: mode %v, want 0700", dir, fi.Mode().Perm())
	}
	for name, form := range map[string]string{
		"postgres_password":      `^[0-9a-f]{48}$`,
		"pix_migrator_password":  `^[0-9a-f]{48}$`,
		"pix_service_password":   `^[0-9a-f]{48}$`,
		"migrate_database_url":   `^postgres://pix_migrator:` + first["pix_migrator_password"] + `@postgresql:5432/pix\?sslmode=disable$`,
		"database_url":           `^postgres://pix_service:` + first["pix_service_password"] + `@postgresql:5432/pix\?sslmode=disable$`,
		"temporal_codec_keys":    `^[A-Za-z0-9._-]+=[A-Za-z0-9+/]{43}=$`,
		"webhook_secrets":        `^[a-z0-9-]+=whsec_[A-Za-z0-9+/]{43}=$`,
		"admin_token":            `^[0-9a-f]{64}$`,
		"grafana_admin_password": `^[0-9a-f]{32}$`,
	} {
		if !regexp.MustCompile(form).MatchString(first[name]) {
			t.Errorf("secret %s: %q is not %s", name, first[name], form)
		}
	}
	again := run()
	for name, v := range first {
		if again[name] != v {
			t.Errorf("secret %s: changed by a second run", name)
		}
	}
}

// repositoryProject is the repository's root, absolute, and its compose
// project as deploycheck loads it.
func repositoryProject(t *testing.T) (string, *types.Project) {
	t.Helper()
	abs, err := filepath.Abs(root)
	if err != nil {
		t.Fatal(err)
	}
	project, errs := checkCompose(context.Background(), filepath.Join(abs, "docker-compose.yml"), abs)
	if project == nil {
		t.Fatal(errs)
	}
	return abs, project
}
