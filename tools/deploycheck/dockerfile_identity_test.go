package main

import (
	"slices"
	"testing"
)

// The images carry their build's identity: the OCI labels from the build
// arguments, declared where they are used, and the binaries linked with the
// same version and revision.
func TestDockerfileBuildIdentity(t *testing.T) {
	for _, c := range []struct {
		name    string
		oldNew  []string
		message string
	}{
		{"a label missing", []string{`      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.created="${CREATED}" \
      org.opencontainers.image.source="${SOURCE}"
COPY --from=build /out/pixd`, `      org.opencontainers.image.created="${CREATED}" \
      org.opencontainers.image.source="${SOURCE}"
COPY --from=build /out/pixd`}, "stage pixd: no LABEL org.opencontainers.image.revision"},
		{"a label not from its build argument", []string{`org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.created="${CREATED}" \
      org.opencontainers.image.source="${SOURCE}"
COPY --from=build /out/pixd`, `org.opencontainers.image.version="latest" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.created="${CREATED}" \
      org.opencontainers.image.source="${SOURCE}"
COPY --from=build /out/pixd`}, "stage pixd: LABEL org.opencontainers.image.version=latest, not the build argument ${VERSION}"},
		{"a build argument not declared in the stage", []string{"AS pixd\nARG VERSION\n", "AS pixd\n"},
			"stage pixd: LABEL org.opencontainers.image.version uses ${VERSION}, which the stage does not declare"},
		{"the simulator's image without its date", []string{`      org.opencontainers.image.created="${CREATED}" \
      org.opencontainers.image.source="${SOURCE}"
COPY --from=build-pspsim`, `      org.opencontainers.image.source="${SOURCE}"
COPY --from=build-pspsim`}, "stage pspsim: no LABEL org.opencontainers.image.created"},
		{"the version not linked", []string{"-X github.com/pixbank/pix/internal/buildinfo.Override=${VERSION} ", ""},
			"does not link -X github.com/pixbank/pix/internal/buildinfo.Override=${VERSION}"},
		{"the revision's argument not declared in the build", []string{"ARG VERSION\nARG REVISION\nENV BUILDINFO", "ARG VERSION\nENV BUILDINFO"},
			"stage build: links ${REVISION}, which the stage does not declare"},
	} {
		t.Run(c.name, func(t *testing.T) {
			wantError(t, dockerErrors(t, broken(t, "Dockerfile", c.oldNew...), ""), c.message)
		})
	}
}

func TestSplitQuoted(t *testing.T) {
	got := splitQuoted(`a="b c" d=e  "f g"=h`)
	if want := []string{`a="b c"`, `d=e`, `"f g"=h`}; !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}
