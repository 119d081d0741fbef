package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"
)

// checkCompose loads the compose file as `docker compose config` does, with
// nothing set in the environment (every ${VAR:-default} at its default), in
// the project directory dir, then checks the project's rules. The project
// is nil when the file doesn't load.
func checkCompose(ctx context.Context, file, dir string) (*types.Project, []error) {
	opts, err := cli.NewProjectOptions([]string{file},
		cli.WithWorkingDirectory(dir),
		cli.WithName("pix"),
		cli.WithEnv(nil),
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
	return errs
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
	name, tag := ref, ""
	if i := strings.LastIndex(ref, ":"); i > strings.LastIndex(ref, "/") {
		name, tag = ref[:i], ref[i+1:]
	}
	base := name[strings.LastIndex(name, "/")+1:]
	if exactTag.MatchString(tag) || (twoPartImages[base] && twoPartTag.MatchString(tag)) {
		return nil
	}
	return fmt.Errorf("image %q: tag %q is %w (want a release such as 1.2.3, or a digest)", ref, tag, errNotAnExactTag)
}
