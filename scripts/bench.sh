#!/usr/bin/env bash
# `make bench`: the load command against the service run as separate API and
# worker processes, first on the Temporal dev server (SQLite), then on a
# Temporal server with PostgreSQL persistence; each run measures its own
# ceilings. Reports go to .data/bench/*.json and the terminal; the figures
# are kept in docs/benchmarks.md.
#   BENCH_RATES   the sweep of arrival rates (default 1000,2000,4000,6000)
#   BENCH_STEP    duration of each rate (default 2s)
#   BENCH_PAUSE_WORKER  1 (default): the rate steps run with the worker
#                 process paused (SIGSTOP), so that the acknowledgement path is
#                 measured alone, as its ceiling is; the backlog is then
#                 drained (SIGCONT) for the credit rate. 0: the steps run
#                 while the worker drains, both on this machine's 2 cores.
#   BENCH_ONLY    dev | postgres to run one of the two
#   BENCH_FLAGS   more pixload flags
set -euo pipefail
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/stack.sh"
cd "$ROOT"

use_dev_credentials
use_nats 127.0.0.1:0 # nobody consumes here: any free port
build_tools
# Built before anything is measured (the first build takes minutes): the
# PostgreSQL-backed server's start is then only waited for.
[ "${BENCH_ONLY:-postgres}" = dev ] || build_temporal_server
go build -o "$BIN/pixd" ./cmd/pixd
go build -o "$BIN/pixload" ./cmd/pixload
out="$DATA/bench"
rm -rf "$out"
mkdir -p "$out"

on_exit_stop_children

bench() { # LABEL TEMPORAL_ADDRESS
	log "benchmark on $1"
	export DATABASE_URL TEMPORAL_ADDRESS="$2" HTTP_ADDR=127.0.0.1:8480 LOG_LEVEL=warn
	DATABASE_URL=$(fresh_database pix_bench)
	read -r api worker < <(start_service "$out")
	CHILDREN+=("$api" "$worker")
	wait_ready "http://$HTTP_ADDR"
	local pause=()
	if [ "${BENCH_PAUSE_WORKER:-1}" = 1 ]; then
		pause=(-pause-cmd "kill -STOP $worker" -resume-cmd "kill -CONT $worker")
	fi
	"$BIN/pixload" -api "http://$HTTP_ADDR" -label "$1" -rates "${BENCH_RATES:-1000,2000,4000,6000}" \
		-step "${BENCH_STEP:-2s}" -json "$out/$1.json" "${pause[@]}" ${BENCH_FLAGS:-} | tee "$out/$1.txt"
	kill -CONT "$worker" 2>/dev/null || true
	stop_service "$api" "$worker"
}

if [ "${BENCH_ONLY:-dev}" != postgres ]; then
	CHILDREN+=("$(start_dev_temporal 7433 "$out/temporal-dev")")
	wait_temporal 127.0.0.1:7433
	bench temporal-dev-sqlite 127.0.0.1:7433
fi
if [ "${BENCH_ONLY:-postgres}" != dev ]; then
	./scripts/temporal-postgres.sh >"$out/temporal-postgres.log" 2>&1 &
	CHILDREN+=($!)
	wait_temporal 127.0.0.1:7633
	wait_namespace 127.0.0.1:7633
	TEMPORAL_ADDRESS=127.0.0.1:7633 "$BIN/pixd" temporal-setup # the PIX search attributes
	bench temporal-postgres 127.0.0.1:7633
fi
log "reports in $out"
