package buildinfo

import (
	"cmp"
	"fmt"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
)

// Info is what a binary knows of its own build.
type Info struct {
	// Version is the main module's version: a release tag (v1.4.0) or Go's
	// pseudo-version, or, for a build from a work tree, "devel" followed
	// by the revision (see Read).
	Version string
	// Revision is the VCS commit the binary was built from, or "unknown"
	// when the build carried no VCS stamp (go run, -buildvcs=false).
	Revision string
	// Modified tells that the work tree had uncommitted changes.
	Modified bool
	// GoVersion is the toolchain that built the binary.
	GoVersion string
}

// Override, when set at link time (-ldflags "-X
// github.com/pixbank/pix/internal/buildinfo.Override=v1.4.0"), is the
// version: a release pipeline that builds outside a tagged module names the
// build it is making. The image build passes the release version this way.
var Override string

// Revision, set at link time like Override (-X
// github.com/pixbank/pix/internal/buildinfo.Revision=<commit>), is the
// revision of a build that carries no VCS stamp: the image's, whose build
// context has no .git. A VCS stamp, when there is one, wins.
var Revision string

var read = sync.OnceValue(func() Info {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return Info{Version: cmp.Or(Override, "unknown"), Revision: cmp.Or(Revision, "unknown")}
	}
	return FromBuildInfo(WithRevision(bi, Revision), Override)
})

// WithRevision is bi stamped with revision rev when it carries no VCS
// revision of its own (rev "": bi as it is).
func WithRevision(bi *debug.BuildInfo, rev string) *debug.BuildInfo {
	if rev == "" || slices.ContainsFunc(bi.Settings, func(s debug.BuildSetting) bool { return s.Key == "vcs.revision" }) {
		return bi
	}
	stamped := *bi
	stamped.Settings = append(slices.Clone(bi.Settings), debug.BuildSetting{Key: "vcs.revision", Value: rev})
	return &stamped
}

// Read returns this binary's identity.
func Read() Info { return read() }

// FromBuildInfo derives an Info from Go's build information and a link-time
// override (empty when none).
func FromBuildInfo(bi *debug.BuildInfo, override string) Info {
	info := Info{Revision: "unknown", GoVersion: bi.GoVersion}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			info.Revision = s.Value
		case "vcs.modified":
			info.Modified = s.Value == "true"
		}
	}
	switch v := bi.Main.Version; {
	case override != "":
		info.Version = override
	case v != "" && v != "(devel)":
		info.Version = v
	case info.Revision != "unknown":
		// A build from a work tree has no module version: the revision
		// names it, so two different builds never share a version.
		info.Version = "devel-" + shortRevision(info.Revision)
		if info.Modified {
			info.Version += "-dirty"
		}
	default:
		info.Version = "devel"
	}
	return info
}

func shortRevision(rev string) string {
	if len(rev) > 12 {
		return rev[:12]
	}
	return rev
}

// String is the one-line form `pixd version` and `pixctl version` print.
func (i Info) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "version %s revision %s", i.Version, i.Revision)
	if i.Modified {
		b.WriteString(" (modified)")
	}
	fmt.Fprintf(&b, " %s", i.GoVersion)
	return b.String()
}
