package main

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/compose-spec/compose-go/v2/dotenv"
	"github.com/compose-spec/compose-go/v2/types"
)

// A pinned is one dependency that both the tests and docker-compose.yml run,
// its version declared once in .env (read by Compose for its ${VARIABLE}s).
type pinned struct {
	variable string // in .env
	form     *regexp.Regexp
	// images run it in the compose file: each service of one of these
	// images has a tag that is the version, alone or with a variant's
	// suffix (nats:2.15.2-alpine); at least one service runs it.
	images []string
	// goMods are the go.mod files (from the root) the tests build it from,
	// each pinning module at the same version.
	goMods []string
	module string
}

var (
	releaseForm = regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+$`)
	// postgresForm is a PostgreSQL release: major.minor since version 10.
	postgresForm = regexp.MustCompile(`^[0-9]+\.[0-9]+$`)
	// adminToolsForm is an admin-tools tag: the server's version, then
	// the versions of the tools built for it (-tctl-1.18.4-cli-1.5.0).
	adminToolsForm = regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$`)
)

var pins = []pinned{
	{variable: "TEMPORAL_VERSION", form: releaseForm, images: []string{"temporalio/server"},
		goMods: []string{"tools/temporal/go.mod", "tools/temporal-server/go.mod"}, module: "go.temporal.io/server"},
	{variable: "TEMPORAL_ADMINTOOLS_VERSION", form: adminToolsForm, images: []string{"temporalio/admin-tools"}},
	{variable: "NATS_VERSION", form: releaseForm, images: []string{"nats"},
		goMods: []string{"tools/nats/go.mod"}, module: "github.com/nats-io/nats-server/v2"},
	// The tests run the machine's PostgreSQL: scripts/lib.sh
	// (ensure_postgres) compares its major with this one.
	{variable: "POSTGRES_VERSION", form: postgresForm, images: []string{"postgres"}},
}

// checkVersions checks that the versions of .env (in root) are the ones the
// tests build (the go.mod pins) and the ones the compose project runs.
func checkVersions(p *types.Project, root string) []error {
	envFile := filepath.Join(root, ".env")
	declared, err := dotenv.Read(envFile)
	if err != nil {
		return []error{fmt.Errorf("%s: %w", envFile, err)}
	}
	var errs []error
	for _, pin := range pins {
		version := declared[pin.variable]
		if !pin.form.MatchString(version) {
			errs = append(errs, fmt.Errorf("%s: %s=%q: want a release's exact version (%s)", envFile, pin.variable, version, pin.form))
			continue
		}
		for _, rel := range pin.goMods {
			got, err := goModVersion(filepath.Join(root, rel), pin.module)
			if err != nil {
				errs = append(errs, err)
			} else if got != version {
				errs = append(errs, fmt.Errorf("%s: %s %s, but .env's %s=%s: the tests and compose would run different versions; raise them together",
					rel, pin.module, got, pin.variable, version))
			}
		}
		for _, err := range imagesAt(p, pin, version) {
			errs = append(errs, fmt.Errorf("%s: %w", strings.Join(p.ComposeFiles, ", "), err))
		}
	}
	if server, tools := declared["TEMPORAL_VERSION"], declared["TEMPORAL_ADMINTOOLS_VERSION"]; tools != server && !strings.HasPrefix(tools, server+"-") {
		errs = append(errs, fmt.Errorf("%s: TEMPORAL_ADMINTOOLS_VERSION=%s is not built for TEMPORAL_VERSION=%s (its schemas would not be the server's)", envFile, tools, server))
	}
	return errs
}

// imagesAt checks that every service of one of pin's images runs version.
func imagesAt(p *types.Project, pin pinned, version string) []error {
	var errs []error
	used := false
	for _, name := range slices.Sorted(maps.Keys(p.Services)) {
		image, tag := splitImage(p.Services[name].Image)
		if !slices.Contains(pin.images, image) {
			continue
		}
		used = true
		if tag != version && !strings.HasPrefix(tag, version+"-") {
			errs = append(errs, fmt.Errorf("service %s: image %s is not .env's %s=%s; write it %s:${%s}",
				name, p.Services[name].Image, pin.variable, version, image, pin.variable))
		}
	}
	if !used {
		errs = append(errs, fmt.Errorf("%s is declared in .env but no service runs %s", pin.variable, strings.Join(pin.images, " or ")))
	}
	return errs
}

// goModVersion is the version of module that the go.mod file requires.
func goModVersion(file, module string) (string, error) {
	raw, err := os.ReadFile(file)
	if err != nil {
		return "", err
	}
	m := regexp.MustCompile(`(?m)^\s*(?:require\s+)?` + regexp.QuoteMeta(module) + `\s+v(\S+)`).FindSubmatch(raw)
	if m == nil {
		return "", fmt.Errorf("%s: requires no %s", file, module)
	}
	return string(m[1]), nil
}
