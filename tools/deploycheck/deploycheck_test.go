package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// root is the repository's root, whose real files every test starts from.
const root = "../.."

// The repository's own files pass every check.
func TestTheRepositoryPasses(t *testing.T) {
	for _, err := range check(context.Background(), root) {
		t.Error(err)
	}
}

// broken writes the repository's file rel into a temporary directory with
// each old string replaced by its new one (each must occur, so that a test
// can't pass on a mutation that changed nothing) and returns its path.
func broken(t *testing.T, rel string, oldNew ...string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(root, rel))
	if err != nil {
		t.Fatal(err)
	}
	s := string(raw)
	for i := 0; i < len(oldNew); i += 2 {
		if !strings.Contains(s, oldNew[i]) {
			t.Fatalf("%s holds no %q to break", rel, oldNew[i])
		}
		s = strings.Replace(s, oldNew[i], oldNew[i+1], 1)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, filepath.Base(rel))
	if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// wantError fails unless one of errs contains each of wants.
func wantError(t *testing.T, errs []error, wants ...string) {
	t.Helper()
	all := errors.Join(errs...)
	if all == nil {
		t.Fatalf("no error; want one saying %q", wants)
	}
	for _, w := range wants {
		if !strings.Contains(all.Error(), w) {
			t.Errorf("errors %q don't say %q", all, w)
		}
	}
}

func composeErrors(t *testing.T, oldNew ...string) []error {
	t.Helper()
	abs, err := filepath.Abs(root)
	if err != nil {
		t.Fatal(err)
	}
	_, errs := checkCompose(context.Background(), broken(t, "docker-compose.yml", oldNew...), abs)
	return errs
}

// docker compose's own checks, in-process: the specification's schema and
// the project's consistency.
func TestComposeSpecification(t *testing.T) {
	t.Run("a typo'd key", func(t *testing.T) {
		wantError(t, composeErrors(t, "    command: [\"-js\"", "    comand: [\"-js\""), "comand")
	})
	t.Run("a depends_on on no service", func(t *testing.T) {
		wantError(t, composeErrors(t, "      api:\n        condition: service_healthy", "      apii:\n        condition: service_healthy"), "apii")
	})
	t.Run("a condition that doesn't exist", func(t *testing.T) {
		wantError(t, composeErrors(t, "        condition: service_healthy", "        condition: service_ready"), "condition value must be one of")
	})
}

// The project's rules beyond the specification.
func TestComposePolicy(t *testing.T) {
	for _, c := range []struct {
		name    string
		oldNew  []string
		message string
	}{
		{"depends_on without a condition", []string{"    depends_on:\n      api:\n        condition: service_healthy\n", "    depends_on:\n      - api\n"},
			`service proxy: depends_on api with condition "service_started" waits for its start only`},
		{"depends_on that waits for the start only", []string{"      nats:\n        condition: service_healthy", "      nats:\n        condition: service_started"},
			`service worker: depends_on nats with condition "service_started"`},
		{"a long-running service without healthcheck", []string{
			"    healthcheck:\n      test: [\"CMD\", \"wget\", \"-q\", \"-O\", \"/dev/null\", \"http://127.0.0.1:13133/status\"]\n", "    x-no-healthcheck:\n      test: []\n"},
			"service jaeger: runs for good but has no healthcheck"},
		{"a healthcheck disabled", []string{"      test: [\"CMD\", \"nc\", \"-z\", \"127.0.0.1\", \"7233\"]", "      disable: true"},
			"service temporal: runs for good but has no healthcheck"},
		{"an image on latest", []string{"image: nginx:1.28.0-alpine", "image: nginx:latest"}, `image "nginx:latest": tag "latest" is not an exact version`},
		{"an image without a tag", []string{"image: jaegertracing/jaeger:2.19.0", "image: jaegertracing/jaeger"}, `image "jaegertracing/jaeger": tag ""`},
		{"an image on a series", []string{"image: nats:${NATS_VERSION:?set in .env}-alpine", "image: nats:2.11-alpine"}, `tag "2.11-alpine" is not an exact version`},
		{"PostgreSQL on its major version", []string{"image: postgres:${POSTGRES_VERSION:?set in .env}", "image: postgres:16"}, `tag "16" is not an exact version`},
		{"a job restarted for good", []string{"      db-roles:\n        condition: service_completed_successfully\n    restart: on-failure:5",
			"      db-roles:\n        condition: service_completed_successfully\n    restart: unless-stopped"},
			`service migrate: a job (others wait for it to complete) restarted "unless-stopped" would never complete`},
		{"replicas publishing a host port", []string{"    deploy:\n      replicas: 2\n    environment:\n      <<: *pix-env\n      HTTP_ADDR", "    deploy:\n      replicas: 2\n    ports:\n      - \"8080:8080\"\n    environment:\n      <<: *pix-env\n      HTTP_ADDR"},
			"service api: 2 replicas can't all publish host port 8080"},
	} {
		t.Run(c.name, func(t *testing.T) { wantError(t, composeErrors(t, c.oldNew...), c.message) })
	}
}

func TestExactImage(t *testing.T) {
	for ref, ok := range map[string]bool{
		"temporalio/server:1.30.1":      true,
		"prom/prometheus:v3.5.0":        true,
		"nats:2.11.6-alpine":            true,
		"golang:1.26.8-bookworm":        true,
		"postgres:16.13":                true,
		"localhost:5000/pix/pixd:1.2.3": true,
		"gcr.io/distroless/static:nonroot@sha256:afa5c872c891853ca7fcf1f12c3edb23f7eeef36189728842dd51042ff57f7ab": true,
		"postgres:16":                      false,
		"postgres:latest":                  false,
		"nats:2.11":                        false,
		"golang:1.26-bookworm":             false,
		"gcr.io/distroless/static:nonroot": false,
		"localhost:5000/pix/pixd":          false,
		"grafana/grafana":                  false,
	} {
		if err := exactImage(ref); (err == nil) != ok {
			t.Errorf("exactImage(%q) = %v, want ok=%v", ref, err, ok)
		}
	}
}

func rulesErrors(t *testing.T, oldNew ...string) []error {
	t.Helper()
	path := broken(t, "deploy/prometheus/rules/pix.yml", oldNew...)
	return checkRules(filepath.Dir(path))
}

// The rules' fields as Prometheus reads them, and the project's demands of
// each alert. Their PromQL and templates are promtool's (`promtool check
// rules`, check_prometheus_rules), not checked here.
func TestRules(t *testing.T) {
	const outboxFor = "        expr: max(pix_outbox_oldest_unpublished_age_seconds) > 60\n        for: 2m\n"
	for _, c := range []struct {
		name    string
		oldNew  []string
		message string
	}{
		{"a typo'd field", []string{"        for: 2m\n        labels:\n          severity: warning\n        annotations:\n          summary: \"An event", "        fro: 2m\n        labels:\n          severity: warning\n        annotations:\n          summary: \"An event"}, "fro"},
		{"an alert without for", []string{outboxFor, "        expr: max(pix_outbox_oldest_unpublished_age_seconds) > 60\n"}, "alert PixOutboxStalled: no `for`"},
		{"an alert with for: 0s", []string{outboxFor, strings.Replace(outboxFor, "2m", "0s", 1)}, "alert PixOutboxStalled: no `for`"},
		{"a for Prometheus does not read", []string{outboxFor, strings.Replace(outboxFor, "2m", "2 minutes", 1)}, `not a valid duration string: "2 minutes"`},
		{"a for without its unit", []string{outboxFor, strings.Replace(outboxFor, "2m", "120", 1)}, `not a valid duration string: "120"`},
		{"a file that is no YAML", []string{"  - name: pix\n    rules:\n", "  - name: pix\n   rules:\n"}, "pix.yml: yaml: line"},
		{"a rule that is no mapping", []string{"  - name: pix\n    rules:\n", "  - name: pix\n    rules:\n      - PixOops\n"}, "pix.yml: yaml: unmarshal errors"},
		{"an alert without severity", []string{"        for: 20m\n        labels:\n          severity: warning\n", "        for: 20m\n        labels:\n          team: pix\n"}, `alert PixReconcileNotRunning: label severity ""`},
		{"a severity nobody routes", []string{"          severity: critical", "          severity: page"}, `label severity "page"`},
		{"an alert without description", []string{"          description: >-\n            Prometheus has not reached", "          descripton: >-\n            Prometheus has not reached"}, "alert PixProcessDown: no description annotation"},
	} {
		t.Run(c.name, func(t *testing.T) { wantError(t, rulesErrors(t, c.oldNew...), c.message) })
	}
	if errs := checkRules(t.TempDir()); len(errs) == 0 {
		t.Error("a rules directory without rules passes")
	}
}

// Prometheus loads the rules that were checked, through the compose file's
// mount.
func TestPrometheusLoadsTheRules(t *testing.T) {
	abs, err := filepath.Abs(root)
	if err != nil {
		t.Fatal(err)
	}
	project, errs := checkCompose(context.Background(), filepath.Join(abs, "docker-compose.yml"), abs)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	config, rules := filepath.Join(abs, "deploy/prometheus/prometheus.yml"), filepath.Join(abs, "deploy/prometheus/rules")
	if errs := checkPrometheus(project, config, rules); len(errs) > 0 {
		t.Fatal(errs)
	}
	// A configuration whose rule_files load nothing of the rules directory.
	elsewhere := broken(t, "deploy/prometheus/prometheus.yml", "  - /etc/prometheus/rules/*.yml", "  - /etc/prometheus/alerts/*.yml")
	for i, v := range project.Services["prometheus"].Volumes {
		if v.Source == config {
			project.Services["prometheus"].Volumes[i].Source = elsewhere
		}
	}
	wantError(t, checkPrometheus(project, elsewhere, rules), "don't load", "rules/pix.yml")
	// A compose file that mounts another configuration.
	wantError(t, checkPrometheus(project, config, rules), "does not mount")
}

func dockerErrors(t *testing.T, dockerfile, dockerignore string) []error {
	t.Helper()
	abs, err := filepath.Abs(root)
	if err != nil {
		t.Fatal(err)
	}
	if dockerfile == "" {
		dockerfile = filepath.Join(abs, "Dockerfile")
	}
	if dockerignore == "" {
		dockerignore = filepath.Join(abs, ".dockerignore")
	}
	return checkDockerfile(context.Background(), abs, dockerfile, dockerignore)
}

func TestDockerfile(t *testing.T) {
	for _, c := range []struct {
		name    string
		oldNew  []string
		message string
	}{
		{"a Go image on a series", []string{"FROM golang:1.26.8-bookworm", "FROM golang:1.26-bookworm"}, `FROM golang:1.26-bookworm: image "golang:1.26-bookworm": tag "1.26-bookworm" is not an exact version`},
		{"distroless by its tag alone", []string{"static-debian12:nonroot@sha256:afa5c872c891853ca7fcf1f12c3edb23f7eeef36189728842dd51042ff57f7ab AS pixd", "static-debian12:nonroot AS pixd"}, `tag "nonroot" is not an exact version`},
		{"the simulator in the production image", []string{"COPY --from=build /out/pixd /out/pixctl /usr/local/bin/", "COPY --from=build /out/pixd /out/pixctl /usr/local/bin/\nCOPY --from=build-pspsim /out/pspsim /usr/local/bin/"}, "ships the PSP simulator pspsim"},
		{"the production image without pixctl", []string{"COPY --from=build /out/pixd /out/pixctl /usr/local/bin/", "COPY --from=build /out/pixd /usr/local/bin/"}, "lacks pixctl"},
		{"a package directory not copied", []string{"COPY internal ./internal\n", ""}, "the build needs internal/"},
		{"go.sum not copied", []string{"COPY go.mod go.sum ./", "COPY go.mod ./"}, "the build needs go.sum"},
		{"the production image not the default target", []string{"CMD [\"api\"]\n", "CMD [\"api\"]\n\nFROM scratch AS last\n"}, `the last stage (the default target) is "last"`},
	} {
		t.Run(c.name, func(t *testing.T) { wantError(t, dockerErrors(t, broken(t, "Dockerfile", c.oldNew...), ""), c.message) })
	}
	t.Run("the embedded migrations kept out by .dockerignore", func(t *testing.T) {
		wantError(t, dockerErrors(t, "", broken(t, ".dockerignore", "**/testdata/\n", "**/testdata/\ndb/migrations/\n")), "keeps db/migrations/", "out of the build")
	})
	t.Run("a package directory left out of the allowlist", func(t *testing.T) {
		wantError(t, dockerErrors(t, "", broken(t, ".dockerignore", "!workflows/\n", "")), "keeps workflows/")
	})
}

// The compose file's build targets are the Dockerfile's stages.
func TestBuildTargets(t *testing.T) {
	abs, err := filepath.Abs(root)
	if err != nil {
		t.Fatal(err)
	}
	project, errs := checkCompose(context.Background(), filepath.Join(abs, "docker-compose.yml"), abs)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if errs := checkBuildTargets(project, filepath.Join(abs, "Dockerfile")); len(errs) > 0 {
		t.Fatal(errs)
	}
	wantError(t, checkBuildTargets(project, broken(t, "Dockerfile", " AS pspsim\n", " AS simulator\n")), `service pspsim builds target "pspsim"`)

	t.Run("a build without the build's identity", func(t *testing.T) {
		for _, oldNew := range [][]string{
			{"      target: pspsim\n      args: *build-identity\n", "      target: pspsim\n"},
			{"  CREATED: ${PIX_CREATED:-}\n", ""},
		} {
			file := broken(t, "docker-compose.yml", oldNew...)
			broke, errs := checkCompose(context.Background(), file, abs)
			if len(errs) > 0 {
				t.Fatal(errs)
			}
			wantError(t, checkBuildTargets(broke, filepath.Join(abs, "Dockerfile")), "does not pass the build argument")
		}
	})
}
