#!/usr/bin/env bash
# The test command (README, `make test`, .ci/run): formatting, vet,
# staticcheck, workflowcheck, the deployment files (check_deploy_files),
# every test against the real PostgreSQL and real Temporal dev servers that
# the tests start themselves, the smoke version of the fault suite beside
# them (correctness only, no timing asserted), then the fuzz targets.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"

# The servers the tests start (the Temporal CLI, the NATS server) are built
# beside the lint: on a new machine their modules' downloads (the network,
# not the CPUs) overlap the linters' build and the lint's compiling. The
# tests wait for them.
log "building the Temporal CLI and the NATS server (beside the lint)"
servers_log=$(mktemp)
(
	build_temporal_cli
	build_nats_server
) >"$servers_log" 2>&1 &
servers=$!
trap 'kill "$servers" 2>/dev/null || true' EXIT
build_linters
export TEMPORAL_CLI="$BIN/temporal" NATS_SERVER="$BIN/nats-server"
if [ -z "${PIX_TEST_DATABASE_URL:-}" ]; then
	PIX_TEST_DATABASE_URL=$(ensure_postgres test)
	export PIX_TEST_DATABASE_URL
fi

log "gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './.data/*'))
[ -z "$unformatted" ] || die "not gofmt'ed: $unformatted"
# Both modules: the service's (the root) and the tooling's (tooling/: the
# load and fault tools, the e2e tests), each checked in its own folder.
# With the tests' build flags (-race): the packages the checkers compile
# for their type information are then the ones the tests link, from the
# build cache, instead of a second compile of every dependency (minutes
# on a new machine).
for mod in . tooling; do
	log "go vet ($mod)"
	(cd "$mod" && GOFLAGS="$GOFLAGS -race" go vet -tags "e2e,$GO_TAGS" ./...)
done
# The binary as built from this checkout (make build, make run): help with
# no configuration at all, and the version naming the checkout's revision.
log "pixd: help with an empty environment, version names the revision"
pixd_bin=$(mktemp -d)/pixd
go build -buildvcs=auto -o "$pixd_bin" ./cmd/pixd
env -i "$pixd_bin" --help >/dev/null || die "pixd --help with an empty environment exited $?"
if revision=$(git rev-parse HEAD 2>/dev/null); then
	version=$(env -i "$pixd_bin" version)
	case "$version" in
	*"revision $revision"*) log "$version" ;;
	*) die "pixd version does not name the checkout's revision $revision: $version" ;;
	esac
fi
rm -rf "$(dirname "$pixd_bin")"
servers_status=0
wait "$servers" || servers_status=$?
cat "$servers_log"
rm -f "$servers_log"
[ "$servers_status" = 0 ] || die "building the Temporal CLI or the NATS server failed (exit $servers_status)"

# What runs beside the tests, each into a log printed when the tests end:
# - the fault suite's smoke version (21 cases on a stack of its own): its
#   cases mostly wait on the service's recoveries, and its faults are timed,
#   so it keeps the machine's priority and what runs beside it yields
#   (nice): the tests, whose timeouts are generous, take the CPU it leaves;
# - staticcheck and workflowcheck of both modules (after go vet, which
#   compiled what they load: the tests' packages, from the build cache);
# - the deployment files' checks (a Compose CLI to install, deploycheck's
#   module, promtool's build: minutes on a cold cache).
# docs/architecture.md#tests has the measurements behind this order.
BESIDE=()
beside() { # beside NAME CMD...: run CMD in the background, logged for report_beside
	local name=$1
	shift
	log "$name (beside the tests)"
	"$@" >"$beside_dir/$name.log" 2>&1 &
	BESIDE+=("$name:$!")
}
beside_dir=$(mktemp -d)
trap 'kill "$servers" 2>/dev/null || true; for b in "${BESIDE[@]}"; do kill "${b#*:}" 2>/dev/null || true; done' EXIT
beside faults ./scripts/faults.sh -smoke
# yield: the calling (sub)shell and what it starts yield the CPU to the fault
# suite (nice 10).
yield() { renice -n 10 -p "$BASHPID" >/dev/null; }
static_checks() {
	yield
	for mod in . tooling; do
		log "staticcheck ($mod)"
		(cd "$mod" && GOFLAGS="$GOFLAGS -race" "$BIN/staticcheck" -tags "e2e,$GO_TAGS" ./...)
		log "workflowcheck ($mod)"
		(cd "$mod" && GOFLAGS="$GOFLAGS -race" "$BIN/workflowcheck" ./...)
	done
}
beside static static_checks
beside deploy eval 'yield; check_deploy_files'
# The two modules' tests side by side, each with half the CPUs (-p): one
# `go test ./...` ran all the packages so before the tooling had a module of
# its own, and the e2e package, the longest, still starts at once. The
# service's output is printed when it ends. -vet=off: the go vet above ran
# all its analyzers (go test's are some of them) on these packages with these
# flags, and go test's would type-check every package once more.
# -ldflags=-w: the test binaries are linked without DWARF debug information
# (a quarter of each link's CPU, measured on api.test: 7.4 → 5.4
# CPU-seconds; 61 test binaries and the fuzz targets' are linked per run).
# Tracebacks and the race detector's reports read the function tables, not
# DWARF, so a failure reads the same; a debugger needs a binary built apart.
TEST_LDFLAGS=-ldflags=-w
half=$((($(nproc) + 1) / 2))
log "go test, the service's module and the tooling's side by side (-p $half each, nice 10)"
service_log=$(mktemp)
nice -n 10 go test -p "$half" -count=1 -race -vet=off "$TEST_LDFLAGS" -timeout 25m -tags "e2e,$GO_TAGS" "$@" ./... >"$service_log" 2>&1 &
service=$!
tooling_status=0
tooling_log=$(mktemp)
(cd tooling && nice -n 10 go test -p "$half" -count=1 -race -vet=off "$TEST_LDFLAGS" -timeout 25m -tags "e2e,$GO_TAGS" "$@" ./...) 2>&1 | tee "$tooling_log" || tooling_status=$?
service_status=0
wait "$service" || service_status=$?
log "go test, the service's module"
cat "$service_log"
# Each fuzz target briefly, beyond its committed seed corpus (which the run
# above replays): go test fuzzes one target of one package at a time.
# A count, not a duration: with a duration, Go 1.26's fuzz coordinator can
# report "context deadline exceeded" at the deadline with no failing input
# (golang/go#75804, fixed in Go 1.27); a count has no deadline to race.
# 20000 executions take about 10 s here. After the tests (fuzzing takes
# every CPU), beside what remains of the fault suite. -vet=off as above.
log "fuzz, ${FUZZTIME:-20000x} per target"
fuzz_status=0
for target in ./internal/notification:FuzzDecodeNotification ./internal/notification:FuzzDecodeAPIPix ./internal/notification:FuzzStoreWhatTheDecodersAccept ./internal/webhooksig:FuzzVerify; do
	nice -n 10 go test -run='^$' -vet=off "$TEST_LDFLAGS" -fuzz="^${target#*:}\$" -fuzztime="${FUZZTIME:-20000x}" "${target%%:*}" || fuzz_status=$?
done
failed=()
for b in "${BESIDE[@]}"; do
	status=0
	wait "${b#*:}" || status=$?
	log "${b%%:*} (ran beside the tests): exit $status"
	cat "$beside_dir/${b%%:*}.log"
	[ "$status" = 0 ] || failed+=("${b%%:*} exit $status")
done
rm -rf "$beside_dir"
# A failed test's own lines once more, last: a CI page that shows only the
# head and the tail of a long run still shows what failed and how to rerun it.
[ "$service_status" = 0 ] || { failure_digest "$service_log"; failed+=("go test of the service's module exit $service_status"); }
[ "$tooling_status" = 0 ] || { failure_digest "$tooling_log"; failed+=("go test of the tooling's module exit $tooling_status"); }
rm -f "$service_log" "$tooling_log"
[ "$fuzz_status" = 0 ] || failed+=("fuzzing exit $fuzz_status")
[ ${#failed[@]} = 0 ] || die "failed: ${failed[*]}"
