// Package buildinfo owns the identity of the running binary: its version and
// the VCS revision it was built from, read once from debug.ReadBuildInfo.
//
// Every place that names the build reads it here: `pixd version` and
// `pixctl version`, the pix_build_info metric, the OpenTelemetry resource
// and the Temporal worker's build id. One source, so the binary, its
// metrics, its traces and its workflows can never disagree on which build
// is running.
package buildinfo
