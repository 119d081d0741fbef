package metrics_test

import (
	"testing"

	"github.com/pixbank/pix/internal/buildinfo"
	"github.com/pixbank/pix/internal/metrics"
)

// Every process's registry (the API's /metrics, the worker's) carries
// pix_build_info = 1, labelled with the build that runs.
func TestBuildInfo(t *testing.T) {
	families, err := metrics.New().Gather()
	if err != nil {
		t.Fatal(err)
	}
	info := buildinfo.Read()
	want := map[string]string{"version": info.Version, "revision": info.Revision, "goversion": info.GoVersion}
	for _, f := range families {
		if f.GetName() != "pix_build_info" {
			continue
		}
		if len(f.GetMetric()) != 1 {
			t.Fatalf("pix_build_info has %d series, want 1", len(f.GetMetric()))
		}
		m := f.GetMetric()[0]
		if m.GetGauge().GetValue() != 1 {
			t.Errorf("pix_build_info = %v, want 1", m.GetGauge().GetValue())
		}
		got := map[string]string{}
		for _, l := range m.GetLabel() {
			got[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("pix_build_info{%s=%q}, want %q", k, got[k], v)
			}
		}
		return
	}
	t.Fatal("no pix_build_info in the registry")
}
