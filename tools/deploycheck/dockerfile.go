package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/compose-spec/compose-go/v2/types"
	"github.com/moby/patternmatcher"
	"github.com/moby/patternmatcher/ignorefile"
)

// The images' binaries: the production image holds the first two, the
// simulator's image the last, and the build compiles them all.
var (
	productionBinaries = []string{"pixd", "pixctl"}
	simulatorBinary    = "pspsim"
	// productionStage is the Dockerfile's last stage (what `docker build .`
	// makes), and the compose file's build target for pixd.
	productionStage = "pixd"
)

// stage is one FROM of a Dockerfile and what it copies.
type stage struct {
	name, base string
	copies     []copyInstr
	// args are the build arguments the stage declares (ARG), which alone
	// its instructions see; labels its LABELs; lines its instructions.
	args   []string
	labels map[string]string
	lines  []string
}

type copyInstr struct {
	from string // a stage or image; "" copies from the build context
	srcs []string
}

// checkDockerfile checks root/Dockerfile against the build it must make:
// its base images pinned, every file of every package the binaries are
// compiled from (go list -deps) copied from the context and not excluded by
// .dockerignore, the production image holding pixd and pixctl and not
// the simulator, which has an image (stage) of its own, and the build's
// identity (checkBuildIdentity).
func checkDockerfile(ctx context.Context, root, file, dockerignore string) []error {
	raw, err := os.ReadFile(file)
	if err != nil {
		return []error{err}
	}
	stages, err := parseDockerfile(raw)
	if err != nil {
		return []error{fmt.Errorf("%s: %w", file, err)}
	}
	var errs []error
	fail := func(format string, a ...any) {
		errs = append(errs, fmt.Errorf("%s: "+format, append([]any{file}, a...)...))
	}

	names := map[string]*stage{}
	var contextSrcs []string
	for i := range stages {
		s := &stages[i]
		if names[s.base] == nil {
			if err := exactImage(s.base); err != nil {
				fail("FROM %s: %v", s.base, err)
			}
		}
		if s.name != "" {
			names[s.name] = s
		}
		for _, c := range s.copies {
			if c.from == "" {
				contextSrcs = append(contextSrcs, c.srcs...)
			}
		}
	}
	if last := stages[len(stages)-1]; last.name != productionStage {
		fail("the last stage (the default target) is %q, not the production image %q", last.name, productionStage)
	}
	if prod := names[productionStage]; prod == nil {
		fail("no stage %q (the production image)", productionStage)
	} else {
		copied := copiedBinaries(*prod)
		for _, b := range productionBinaries {
			if !slices.Contains(copied, b) {
				fail("the production image (stage %s) lacks %s", productionStage, b)
			}
		}
		if slices.Contains(copied, simulatorBinary) {
			fail("the production image (stage %s) ships the PSP simulator %s", productionStage, simulatorBinary)
		}
	}
	if sim := names[simulatorBinary]; sim == nil || !slices.Contains(copiedBinaries(*sim), simulatorBinary) {
		fail("no stage %q holding the PSP simulator", simulatorBinary)
	}
	for _, err := range checkBuildIdentity(stages) {
		fail("%v", err)
	}

	ignore, err := readDockerignore(dockerignore)
	if err != nil {
		return append(errs, err)
	}
	needed, err := buildInputs(ctx, root)
	if err != nil {
		return append(errs, err)
	}
	for _, f := range needed {
		if !coveredBy(f, contextSrcs) {
			fail("the build needs %s, which no COPY from the context brings", f)
			continue
		}
		if excluded, err := ignore.MatchesOrParentMatches(f); err != nil {
			errs = append(errs, err)
		} else if excluded {
			errs = append(errs, fmt.Errorf("%s keeps %s out of the build, which needs it", dockerignore, f))
		}
	}
	return errs
}

// checkBuildTargets checks that every build target the compose file names
// is a stage of the Dockerfile, and that every build passes the build
// arguments that name the build (ociLabels'), so that an image compose
// builds can carry its identity (make compose-build fills them from git).
func checkBuildTargets(p *types.Project, dockerfile string) []error {
	raw, err := os.ReadFile(dockerfile)
	if err != nil {
		return []error{err}
	}
	stages, err := parseDockerfile(raw)
	if err != nil {
		return nil // checkDockerfile reports it
	}
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(p.Services)) {
		b := p.Services[name].Build
		if b == nil || b.Target == "" {
			continue
		}
		if !slices.ContainsFunc(stages, func(s stage) bool { return s.name == b.Target }) {
			errs = append(errs, fmt.Errorf("docker-compose.yml: service %s builds target %q, which the Dockerfile lacks", name, b.Target))
		}
		for _, arg := range slices.Sorted(maps.Values(ociLabels)) {
			if _, ok := b.Args[arg]; !ok {
				errs = append(errs, fmt.Errorf("docker-compose.yml: service %s does not pass the build argument %s: its image would not name its build (docs/cli.md)", name, arg))
			}
		}
	}
	return errs
}

// copiedBinaries are the base names of what a stage copies from other
// stages.
func copiedBinaries(s stage) []string {
	var out []string
	for _, c := range s.copies {
		if c.from == "" {
			continue
		}
		for _, src := range c.srcs {
			out = append(out, path.Base(src))
		}
	}
	return out
}

// parseDockerfile reads the FROM, ARG, LABEL and COPY instructions of a
// Dockerfile, and keeps each stage's instructions (continuation lines
// joined; comments skipped).
func parseDockerfile(raw []byte) ([]stage, error) {
	var stages []stage
	var logical []string
	var cur strings.Builder
	for _, line := range strings.Split(string(raw), "\n") {
		trimmed := strings.TrimSpace(line)
		if cur.Len() == 0 && (trimmed == "" || strings.HasPrefix(trimmed, "#")) {
			continue
		}
		if strings.HasSuffix(trimmed, "\\") {
			cur.WriteString(strings.TrimSuffix(trimmed, "\\") + " ")
			continue
		}
		cur.WriteString(trimmed)
		logical = append(logical, cur.String())
		cur.Reset()
	}
	for _, l := range logical {
		fields := strings.Fields(l)
		if len(stages) > 0 {
			stages[len(stages)-1].lines = append(stages[len(stages)-1].lines, l)
		}
		switch strings.ToUpper(fields[0]) {
		case "FROM":
			args := withoutFlags(fields[1:])
			if len(args) != 1 && (len(args) != 3 || !strings.EqualFold(args[1], "AS")) {
				return nil, fmt.Errorf("can't read %q", l)
			}
			s := stage{base: args[0]}
			if len(args) == 3 {
				s.name = args[2]
			}
			stages = append(stages, s)
		case "ARG":
			if len(stages) > 0 {
				s := &stages[len(stages)-1]
				for _, a := range fields[1:] {
					name, _, _ := strings.Cut(a, "=")
					s.args = append(s.args, name)
				}
			}
		case "LABEL":
			if len(stages) == 0 {
				return nil, fmt.Errorf("%q before any FROM", l)
			}
			s := &stages[len(stages)-1]
			if s.labels == nil {
				s.labels = map[string]string{}
			}
			for _, kv := range splitQuoted(strings.TrimSpace(l[len(fields[0]):])) {
				k, v, ok := strings.Cut(kv, "=")
				if !ok {
					return nil, fmt.Errorf("can't read %q: %q is not key=value", l, kv)
				}
				s.labels[unquote(k)] = unquote(v)
			}
		case "COPY", "ADD":
			if len(stages) == 0 {
				return nil, fmt.Errorf("%q before any FROM", l)
			}
			var from string
			for _, f := range fields[1:] {
				if v, ok := strings.CutPrefix(f, "--from="); ok {
					from = v
				}
			}
			args := withoutFlags(fields[1:])
			if len(args) < 2 {
				return nil, fmt.Errorf("can't read %q", l)
			}
			s := &stages[len(stages)-1]
			s.copies = append(s.copies, copyInstr{from: from, srcs: args[:len(args)-1]})
		}
	}
	if len(stages) == 0 {
		return nil, errors.New("no FROM")
	}
	return stages, nil
}

// splitQuoted splits a LABEL's key=value pairs on blanks outside double
// quotes.
func splitQuoted(v string) []string {
	var out []string
	var cur strings.Builder
	quoted := false
	for _, r := range v {
		switch {
		case r == '"':
			quoted = !quoted
			cur.WriteRune(r)
		case (r == ' ' || r == '\t') && !quoted:
			if cur.Len() > 0 {
				out = append(out, cur.String())
				cur.Reset()
			}
		default:
			cur.WriteRune(r)
		}
	}
	if cur.Len() > 0 {
		out = append(out, cur.String())
	}
	return out
}

func unquote(v string) string {
	if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
		return v[1 : len(v)-1]
	}
	return v
}

// The build's identity (docs/cli.md): the build arguments that name it,
// the OCI labels each image carries from them, and the link-time variables
// of internal/buildinfo the binaries get from them.
var (
	// ociLabels are the labels each image sets from a build argument.
	ociLabels = map[string]string{
		"org.opencontainers.image.version":  "VERSION",
		"org.opencontainers.image.revision": "REVISION",
		"org.opencontainers.image.created":  "CREATED",
		"org.opencontainers.image.source":   "SOURCE",
	}
	// linkedIdentity are the -X settings the binaries' build passes, from
	// build arguments: the build context has no .git to stamp a revision.
	linkedIdentity = map[string]string{
		"github.com/pixbank/pix/internal/buildinfo.Override": "VERSION",
		"github.com/pixbank/pix/internal/buildinfo.Revision": "REVISION",
	}
)

// checkBuildIdentity checks that the production and simulator images
// carry the OCI labels from the build arguments, each declared in the
// stage (a build argument not declared again after FROM is empty there),
// and that the stage compiling the binaries links the version and the
// revision in from the same arguments.
func checkBuildIdentity(stages []stage) []error {
	var errs []error
	declares := func(s stage, arg string) bool { return slices.Contains(s.args, arg) }
	for _, s := range stages {
		if s.name != productionStage && s.name != simulatorBinary {
			continue
		}
		for _, label := range slices.Sorted(maps.Keys(ociLabels)) {
			arg := ociLabels[label]
			v, ok := s.labels[label]
			switch {
			case !ok:
				errs = append(errs, fmt.Errorf("stage %s: no LABEL %s (from the build argument %s)", s.name, label, arg))
			case v != "${"+arg+"}" && v != "$"+arg:
				errs = append(errs, fmt.Errorf("stage %s: LABEL %s=%s, not the build argument ${%s}", s.name, label, v, arg))
			case !declares(s, arg):
				errs = append(errs, fmt.Errorf("stage %s: LABEL %s uses ${%s}, which the stage does not declare (ARG %s after its FROM): it would be empty", s.name, label, arg, arg))
			}
		}
	}
	built := false
	for _, s := range stages {
		text := strings.Join(s.lines, "\n")
		if !strings.Contains(text, "-o /out/"+productionBinaries[0]+" ") {
			continue
		}
		built = true
		for _, variable := range slices.Sorted(maps.Keys(linkedIdentity)) {
			arg := linkedIdentity[variable]
			switch {
			case !strings.Contains(text, "-X "+variable+"=${"+arg+"}"):
				errs = append(errs, fmt.Errorf("stage %s: the build does not link -X %s=${%s} (the binaries would not know their build)", s.name, variable, arg))
			case !declares(s, arg):
				errs = append(errs, fmt.Errorf("stage %s: links ${%s}, which the stage does not declare (ARG %s): it would be empty", s.name, arg, arg))
			}
		}
	}
	if !built {
		errs = append(errs, fmt.Errorf("no stage builds -o /out/%s", productionBinaries[0]))
	}
	return errs
}

func withoutFlags(fields []string) []string {
	return slices.DeleteFunc(slices.Clone(fields), func(f string) bool { return strings.HasPrefix(f, "--") })
}

// coveredBy reports whether a COPY of one of srcs (paths in the context)
// brings file.
func coveredBy(file string, srcs []string) bool {
	for _, src := range srcs {
		src = strings.TrimSuffix(strings.TrimPrefix(path.Clean(src), "./"), "/")
		if src == "." || file == src || strings.HasPrefix(file, src+"/") {
			return true
		}
	}
	return false
}

func readDockerignore(file string) (*patternmatcher.PatternMatcher, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	patterns, err := ignorefile.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return patternmatcher.New(patterns)
}

// buildInputs are the files, relative to root, that building the three
// binaries reads: go.mod, go.sum, and the Go and embedded files of every
// package of the module they import.
func buildInputs(ctx context.Context, root string) ([]string, error) {
	cmd := exec.CommandContext(ctx, "go", "list", "-deps", "-json=Dir,Module,GoFiles,CgoFiles,EmbedFiles",
		"./cmd/"+productionBinaries[0], "./cmd/"+productionBinaries[1], "./cmd/"+simulatorBinary)
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list: %w: %s", err, stderr.String())
	}
	files := []string{"go.mod", "go.sum"}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var pkg struct {
			Dir                           string
			Module                        *struct{ Main bool }
			GoFiles, CgoFiles, EmbedFiles []string
		}
		if err := dec.Decode(&pkg); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("go list: %w", err)
		}
		if pkg.Module == nil || !pkg.Module.Main {
			continue
		}
		rel, err := filepath.Rel(root, pkg.Dir)
		if err != nil {
			return nil, err
		}
		for _, f := range slices.Concat(pkg.GoFiles, pkg.CgoFiles, pkg.EmbedFiles) {
			files = append(files, filepath.ToSlash(filepath.Join(rel, f)))
		}
	}
	return files, nil
}
