package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/pixbank/pix/internal/buildinfo"
)

// registerBuildInfo registers pix_build_info, the conventional info gauge:
// always 1, its labels naming the build that runs, so that a query can join
// any series on them (which build raised the errors) and a dashboard can
// tell a rolling upgrade's processes apart.
func registerBuildInfo(r prometheus.Registerer, info buildinfo.Info) {
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "pix_build_info",
		Help: "The build of the running binary (always 1): its version, VCS revision and Go toolchain.",
		ConstLabels: prometheus.Labels{
			"version": info.Version, "revision": info.Revision, "goversion": info.GoVersion,
		},
	})
	g.Set(1)
	r.MustRegister(g)
}
