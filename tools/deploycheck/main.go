// Command deploycheck validates the deployment files of the PIX service,
// as `make test` runs it (scripts/test.sh) from the repository's root:
//
//   - docker-compose.yml, loaded as `docker compose config` loads it (the
//     Compose Specification's schema, interpolation, consistency), then held
//     to the project's rules: every long-running service has a healthcheck,
//     every depends_on waits for health or for a job's success, every
//     pulled image has an exact version, no replicated service publishes a
//     host port, every secret is a file of deploy/secrets read through a
//     *_FILE variable (none in the environment), no service depends on an
//     observability backend;
//   - the versions of Temporal, NATS and PostgreSQL, declared once in .env:
//     the compose file's images and the tests' go.mod pins are at them;
//   - the Prometheus rules (deploy/prometheus/rules), read with the fields
//     of Prometheus's rule format and no other (their PromQL and templates
//     are `promtool check rules`'s, run next by make test), each alert with a `for`, a severity, a summary, a description and a
//     runbook_url to its own section of docs/runbooks.md (one section per
//     alert, none of an alert that is gone, each with its symptom, impact,
//     query, fix and verification), each alert with a firing and a quiet
//     case and each recording rule queried in the promtool unit tests of
//     deploy/prometheus/tests, and loaded by deploy/prometheus/prometheus.yml
//     through the compose file's mount; and every alert, and only those, in
//     the alerts' table of docs/operations.md;
//   - the Dockerfile: base images pinned, every file the binaries are built
//     from copied into the build (and not kept out by .dockerignore), the
//     production image with pixd and pixctl and without the PSP simulator.
//
// It is a module of its own (tools/deploycheck): compose-go never enters
// the service's go.mod.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
)

func main() {
	root := flag.String("root", ".", "the repository's root")
	flag.Parse()
	errs := check(context.Background(), *root)
	for _, err := range errs {
		fmt.Fprintln(os.Stderr, "deploycheck:", err)
	}
	if len(errs) > 0 {
		os.Exit(1)
	}
	fmt.Println("deploycheck: docker-compose.yml, deploy/prometheus and the Dockerfile are valid")
}

// check runs every check on the repository at root.
func check(ctx context.Context, root string) []error {
	root, err := filepath.Abs(root)
	if err != nil {
		return []error{err}
	}
	project, errs := checkCompose(ctx, filepath.Join(root, "docker-compose.yml"), root)
	if project != nil {
		errs = append(errs, checkPrometheus(project, filepath.Join(root, "deploy/prometheus/prometheus.yml"), filepath.Join(root, "deploy/prometheus/rules"))...)
		errs = append(errs, checkBuildTargets(project, filepath.Join(root, "Dockerfile"))...)
		errs = append(errs, checkVersions(project, root)...)
	}
	errs = append(errs, checkRules(filepath.Join(root, "deploy/prometheus/rules"))...)
	errs = append(errs, checkRunbooks(filepath.Join(root, "deploy/prometheus/rules"), filepath.Join(root, "docs/runbooks.md"))...)
	errs = append(errs, checkAlertsTable(filepath.Join(root, "deploy/prometheus/rules"), filepath.Join(root, "docs/operations.md"))...)
	errs = append(errs, checkRuleTests(filepath.Join(root, "deploy/prometheus/rules"), filepath.Join(root, "deploy/prometheus/tests"))...)
	errs = append(errs, checkDockerfile(ctx, root, filepath.Join(root, "Dockerfile"), filepath.Join(root, ".dockerignore"))...)
	return errs
}
