package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"
)

// checkCompose loads the compose file as `docker compose config` does in
// the project directory dir, with nothing set in the environment but dir's
// .env (the versions; every other ${VAR:-default} at its default), then
// checks the project's rules. The project is nil when the file doesn't load.
func checkCompose(ctx context.Context, file, dir string) (*types.Project, []error) {
	opts, err := cli.NewProjectOptions([]string{file},
		cli.WithWorkingDirectory(dir),
		cli.WithName("pix"),
		cli.WithEnv(nil),
		cli.WithEnvFiles(), // dir/.env, as docker compose reads it
		cli.WithDotEnv,
		cli.WithInterpolation(true),
		cli.WithNormalization(true),
		cli.WithConsistency(true),
		cli.WithResolvedPaths(true),
	)
	if err != nil {
		return nil, []error{fmt.Errorf("%s: %w", file, err)}
	}
	project, err := opts.LoadProject(ctx)
	if err != nil {
		return nil, []error{fmt.Errorf("%s: %w", file, err)}
	}
	var errs []error
	for _, err := range composePolicy(project) {
		errs = append(errs, fmt.Errorf("%s: %w", file, err))
	}
	return project, errs
}

// composePolicy is what the project asks of its compose file beyond the
// specification.
func composePolicy(p *types.Project) []error {
	// A job is a service another waits for to complete; every other
	// service runs for good.
	jobs := map[string]bool{}
	for _, s := range p.Services {
		for name, dep := range s.DependsOn {
			if dep.Condition == types.ServiceConditionCompletedSuccessfully {
				jobs[name] = true
			}
		}
	}
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(p.Services)) {
		s := p.Services[name]
		if jobs[name] {
			if s.Restart != "" && s.Restart != types.RestartPolicyNo && !strings.HasPrefix(s.Restart, types.RestartPolicyOnFailure) {
				errs = append(errs, fmt.Errorf("service %s: a job (others wait for it to complete) restarted %q would never complete", name, s.Restart))
			}
		} else if !hasHealthcheck(s) {
			errs = append(errs, fmt.Errorf("service %s: runs for good but has no healthcheck", name))
		}
		for _, depName := range slices.Sorted(maps.Keys(s.DependsOn)) {
			switch c := s.DependsOn[depName].Condition; c {
			case types.ServiceConditionHealthy, types.ServiceConditionCompletedSuccessfully:
			default:
				errs = append(errs, fmt.Errorf("service %s: depends_on %s with condition %q waits for its start only; "+
					"give it condition service_healthy (or service_completed_successfully for a job)", name, depName, c))
			}
		}
		if s.Build == nil {
			if err := exactImage(s.Image); err != nil {
				errs = append(errs, fmt.Errorf("service %s: %w", name, err))
			}
		}
		errs = append(errs, secretsPolicy(s)...)
		if !isObservability(s) {
			for _, depName := range slices.Sorted(maps.Keys(s.DependsOn)) {
				if dep, ok := p.Services[depName]; ok && isObservability(dep) {
					errs = append(errs, fmt.Errorf("service %s: depends_on %s, an observability backend: it would gate the service's start "+
						"(and its restarts) on traces or metrics; the exporters drop what they can't send, so drop the dependency", name, depName))
				}
			}
		}
		if s.Deploy != nil && s.Deploy.Replicas != nil && *s.Deploy.Replicas > 1 {
			if s.ContainerName != "" {
				errs = append(errs, fmt.Errorf("service %s: %d replicas can't share container_name %q", name, *s.Deploy.Replicas, s.ContainerName))
			}
			for _, port := range s.Ports {
				if port.Published != "" {
					errs = append(errs, fmt.Errorf("service %s: %d replicas can't all publish host port %s; put a proxy in front", name, *s.Deploy.Replicas, port.Published))
				}
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(p.Secrets)) {
		if err := secretSource(p, name); err != nil {
			errs = append(errs, fmt.Errorf("secret %s: %w", name, err))
		}
	}
	return errs
}

// secretsDir is where the compose file's secrets are, as files that `make
// compose-secrets` makes and git ignores.
const secretsDir = "deploy/secrets"

// secretSource checks that the secret comes from a file in secretsDir:
// never a value in the compose file or an environment variable (which
// would need a published value, or a default, to start).
func secretSource(p *types.Project, name string) error {
	s := p.Secrets[name]
	dir := filepath.Join(p.WorkingDir, secretsDir)
	switch {
	case bool(s.External) || s.Environment != "" || s.Content != "" || s.File == "":
		return fmt.Errorf("not a file: want file: ./%s/%s (made by make compose-secrets)", secretsDir, name)
	case filepath.Dir(s.File) != dir:
		return fmt.Errorf("file %s is not in %s (the directory git ignores and make compose-secrets fills)", s.File, secretsDir)
	}
	return nil
}

var (
	// secretVariable names an environment variable that holds a secret.
	secretVariable = regexp.MustCompile(`(?i)(PASSWORD|PASSWD|PWD|SECRETS?|TOKEN|KEYS?)$`)
	// fileVariable is the same variable's file form: NAME_FILE, or
	// Grafana's NAME__FILE.
	fileVariable = regexp.MustCompile(`_?_FILE$`)
	// urlPassword is a URL with a password in it (postgres://user:pw@host).
	urlPassword = regexp.MustCompile(`://[^/\s:@]+:[^/\s@]+@`)
)

// runSecrets is where a container finds the secrets it is granted.
const runSecrets = "/run/secrets/"

// secretsPolicy checks that service s takes its secrets as files: no
// secret in an environment variable (neither a value, a default, nor one
// passed from the host's environment), and every /run/secrets file it is
// pointed at granted to it.
func secretsPolicy(s types.ServiceConfig) []error {
	granted := map[string]bool{}
	for _, g := range s.Secrets {
		target := cmp.Or(g.Target, g.Source)
		if !path.IsAbs(target) {
			target = runSecrets + target
		}
		granted[target] = true
	}
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(s.Environment)) {
		v := s.Environment[name]
		switch {
		case fileVariable.MatchString(name):
			if v != nil && strings.HasPrefix(*v, runSecrets) && !granted[*v] {
				errs = append(errs, fmt.Errorf("service %s: %s points at %s, a secret the service is not granted (add it to its secrets:)", s.Name, name, *v))
			} else if secretVariable.MatchString(fileVariable.ReplaceAllString(name, "")) && (v == nil || !strings.HasPrefix(*v, runSecrets)) {
				errs = append(errs, fmt.Errorf("service %s: %s: want a secret's file, %s<name>", s.Name, name, runSecrets))
			}
		case secretVariable.MatchString(name):
			errs = append(errs, fmt.Errorf("service %s: %s holds a secret in the environment; grant a secret (top-level secrets:) and set %s_FILE to its %s<name>", s.Name, name, name, runSecrets))
		case v != nil && urlPassword.MatchString(*v):
			errs = append(errs, fmt.Errorf("service %s: %s holds a URL with a password; grant a secret with the URL and set %s_FILE to its %s<name>", s.Name, name, name, runSecrets))
		}
	}
	return errs
}

// observabilityImages are the trace, metrics and dashboard backends: the
// services of these images must never gate the service (depends_on).
var observabilityImages = map[string]bool{
	"jaegertracing/jaeger":                 true,
	"jaegertracing/all-in-one":             true,
	"otel/opentelemetry-collector":         true,
	"otel/opentelemetry-collector-contrib": true,
	"prom/prometheus":                      true,
	"grafana/grafana":                      true,
	"grafana/tempo":                        true,
	"grafana/loki":                         true,
}

// isObservability reports whether s runs an observability backend, known
// by its image (whatever the service is named).
func isObservability(s types.ServiceConfig) bool {
	name, _ := splitImage(s.Image)
	return observabilityImages[name]
}

// splitImage splits an image reference into the image's name (docker.io/
// dropped) and its tag ("" without one); a digest is dropped.
func splitImage(ref string) (name, tag string) {
	name, _, _ = strings.Cut(ref, "@")
	if i := strings.LastIndex(name, ":"); i > strings.LastIndex(name, "/") {
		name, tag = name[:i], name[i+1:]
	}
	return strings.TrimPrefix(name, "docker.io/"), tag
}

func hasHealthcheck(s types.ServiceConfig) bool {
	h := s.HealthCheck
	return h != nil && !h.Disable && len(h.Test) > 0 && h.Test[0] != "NONE"
}

var (
	// exactTag is a release's full version: major.minor.patch, a
	// variant's suffix allowed (2.11.6-alpine, v3.5.0).
	exactTag = regexp.MustCompile(`^v?[0-9]+\.[0-9]+\.[0-9]+([-+.][0-9A-Za-z.-]+)?$`)
	// twoPartTag is a release of an image whose versions have two parts
	// (PostgreSQL's 16.13 is a release; 16 is the series).
	twoPartTag       = regexp.MustCompile(`^[0-9]+\.[0-9]+([-+][0-9A-Za-z.-]+)?$`)
	twoPartImages    = map[string]bool{"postgres": true}
	digestSuffix     = regexp.MustCompile(`@sha256:[0-9a-f]{64}$`)
	errNotAnExactTag = errors.New("not an exact version")
)

// exactImage checks that ref names one build of an image: a digest, or a
// release's exact version tag (never latest, never a series like 16 or
// 2.11).
func exactImage(ref string) error {
	if ref == "" {
		return errors.New("no image and no build")
	}
	if ref == "scratch" { // the empty image: nothing to pin
		return nil
	}
	if digestSuffix.MatchString(ref) {
		return nil
	}
	name, tag := splitImage(ref)
	base := name[strings.LastIndex(name, "/")+1:]
	if exactTag.MatchString(tag) || (twoPartImages[base] && twoPartTag.MatchString(tag)) {
		return nil
	}
	return fmt.Errorf("image %q: tag %q is %w (want a release such as 1.2.3, or a digest)", ref, tag, errNotAnExactTag)
}
