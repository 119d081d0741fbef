package buildinfo

import (
	"runtime/debug"
	"testing"
)

func TestFromBuildInfo(t *testing.T) {
	settings := func(rev, modified string) []debug.BuildSetting {
		return []debug.BuildSetting{{Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: modified}}
	}
	const rev = "0123456789abcdef0123456789abcdef01234567"
	for _, c := range []struct {
		name     string
		bi       debug.BuildInfo
		override string
		want     Info
	}{
		{"a tagged module", debug.BuildInfo{Main: debug.Module{Version: "v1.4.0"}, Settings: settings(rev, "false")}, "",
			Info{Version: "v1.4.0", Revision: rev}},
		{"a work tree", debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: settings(rev, "false")}, "",
			Info{Version: "devel-0123456789ab", Revision: rev}},
		{"a dirty work tree", debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: settings(rev, "true")}, "",
			Info{Version: "devel-0123456789ab-dirty", Revision: rev, Modified: true}},
		{"no VCS stamp", debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "",
			Info{Version: "devel", Revision: "unknown"}},
		{"the link-time override wins", debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: settings(rev, "false")}, "v2.0.0-rc1",
			Info{Version: "v2.0.0-rc1", Revision: rev}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := FromBuildInfo(&c.bi, c.override); got != c.want {
				t.Errorf("got %+v, want %+v", got, c.want)
			}
		})
	}
}

// The image's build has no .git: the revision comes at link time, and a
// VCS stamp, when there is one, wins over it.
func TestWithRevision(t *testing.T) {
	const rev = "0123456789abcdef0123456789abcdef01234567"
	unstamped := &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}
	if got := FromBuildInfo(WithRevision(unstamped, rev), ""); got != (Info{Version: "devel-0123456789ab", Revision: rev}) {
		t.Errorf("unstamped: got %+v", got)
	}
	if got := FromBuildInfo(WithRevision(unstamped, rev), "v1.4.0"); got != (Info{Version: "v1.4.0", Revision: rev}) {
		t.Errorf("unstamped with a version: got %+v", got)
	}
	if len(unstamped.Settings) != 0 {
		t.Error("WithRevision changed the build information it was given")
	}
	stamped := &debug.BuildInfo{Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "fedcba"}}}
	if got := FromBuildInfo(WithRevision(stamped, rev), ""); got.Revision != "fedcba" {
		t.Errorf("the VCS stamp lost to the link-time revision: %+v", got)
	}
	if got := WithRevision(unstamped, ""); got != unstamped {
		t.Error("no revision given: not the same build information")
	}
}
