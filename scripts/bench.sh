#!/usr/bin/env bash
# `make bench`: the load command against the service run as separate API and
# worker processes, in three configurations: one API and one worker on the
# Temporal dev server (SQLite); the same on a Temporal server with
# PostgreSQL persistence; two APIs and two workers on that server (the
# webhooks spread over both APIs, both workers dispatching and relaying),
# with the cost of the second replica against the run before. Each run
# measures its own ceilings and prints the targets block; a summary puts
# the runs side by side. Reports go to .data/bench/*.json, *.txt and the
# terminal; the figures are kept in docs/benchmarks.md.
#   BENCH_RATES   the sweep of arrival rates (default 1000,2000,4000,6000,8000:
#                 past saturation, where the API's memory peak is read)
#   BENCH_STEP    duration of each rate (default 2s)
#   BENCH_PAUSE_WORKER  1 (default): the rate steps run with the worker
#                 processes paused (SIGSTOP), so that the acknowledgement
#                 path is measured alone, as its ceiling is; the backlog is
#                 then drained (SIGCONT) for the credit rate. 0: the steps run
#                 while the workers drain, all on this machine's cores.
#   BENCH_ONLY    the configurations to run, comma-separated, of storm, dev,
#                 postgres, postgres-2x2 (default: all four), dev-2x2
#                 (two of each on the dev server, not run by default) and
#                 growth (below; run by default when BENCH_HISTORY is set)
#   BENCH_STORM_RATE, BENCH_STORM_CONNECTIONS, BENCH_STORM_FOR  the
#                 many-connections case (storm): webhooks/s offered
#                 (default 8000), the most connections (2000), how long
#                 (20s)
#   BENCH_DRAIN_TIMEOUT  how long a run waits for its backlog (default 30m)
#   BENCH_FLAGS   more pixload flags
#   BENCH_PG_URL  a PostgreSQL server to run on (postgres://user@host:port),
#                 instead of the benchmark's own cluster (.data/bench-postgres,
#                 the server's defaults)
#   BENCH_API_PORT, BENCH_WORKER_METRICS_PORT, BENCH_TEMPORAL_DEV_PORT,
#   BENCH_DATABASE  where the run lives (default 8480 and up, 8580 and up
#                 for the workers' metrics, 7433, pix_bench), for a run
#                 beside another
# growth: the cost of the service's work as the tables grow. The same
# figures on empty tables, then with BENCH_HISTORY done PIX of history in
# inbox_messages, pix_credits, outbox_events and idempotency_keys
# (scripts/history.sql, set-based; then VACUUM and ANALYZE), each case on a
# fresh database and a fresh Temporal dev server, one API and one worker, and
# the PSP simulator (`pixload growth`, side by side in growth.txt): webhook
# ingest at BENCH_GROWTH_RATE, credits/s over the drain, the
# reconciliation's runs, the catch-up of a window of BENCH_GROWTH_CATCHUP
# PIX, the retention run with webhooks beside it.
#   BENCH_HISTORY           PIX of history (default 10000000)
#   BENCH_HISTORY_ACCOUNTS  accounts they are spread over (default 100000)
#   BENCH_HISTORY_VACUUM    1 (default): VACUUM (ANALYZE) after the seed,
#                           the tables as autovacuum keeps them; 0: ANALYZE
#                           only, autovacuum then works on the new rows
#                           through the figures
#   BENCH_GROWTH_CASES      the cases, of empty,history (default both), in
#                           the order they are measured (each is seeded
#                           first)
#   BENCH_GROWTH_RATE, BENCH_GROWTH_STEP  the ingest (default 3000/s, 10s)
#   BENCH_GROWTH_RETENTION_ROWS  rows of each table past its retention, for
#                           the retention run (default 100000: as many as
#                           one run deletes, 100 batches of 1,000)
#   BENCH_GROWTH_RETENTION_RATE  webhooks/s beside the retention run (default
#                           1000: below saturation on this machine, so that
#                           the p99 shows the retention, not the queue)
#   BENCH_GROWTH_CATCHUP    PIX of the catch-up's window (default 100000)
#   BENCH_GROWTH_FLAGS      more `pixload growth` flags
#   BENCH_KEEP_DATABASE     1: the cases' databases (BENCH_DATABASE_empty,
#                           _history) are kept (default: dropped, they hold
#                           gigabytes)
#   BENCH_GROWTH_TEMPLATES  1: each case is seeded once into
#                           BENCH_DATABASE_<case>_template, kept, and each
#                           run measures a copy of it (CREATE DATABASE ...
#                           TEMPLATE, minutes where the seed takes a quarter
#                           of an hour; the copy's statistics counters start
#                           at zero, as after the seed's VACUUM). Drop the
#                           templates when done
#   BENCH_GROWTH_SEEDED     1: the cases' databases (BENCH_DATABASE_<case>)
#                           are measured as they are, not seeded nor copied:
#                           a copy of a template made by hand, and changed
#                           (a setting to compare), never one measured before
# `make soak` (BENCH_SOAK=N): instead of the benchmark, N webhooks (30%
# redeliveries, bursts of copies) through the whole pipeline on the
# PostgreSQL-backed Temporal, the workers crediting meanwhile; then the
# books (0 lost, 0 doubled, balances exact), the duration and the
# resources used.
#   BENCH_SOAK_RATE     arrivals per second (default 150)
#   BENCH_REPLICAS      APIs and workers of the soak (default 1)
set -euo pipefail
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/stack.sh"
cd "$ROOT"

only=${BENCH_ONLY:-storm,dev,postgres,postgres-2x2${BENCH_HISTORY:+,growth}}
soak=${BENCH_SOAK:-}
[ -n "$soak" ] && only=soak
wants() { [[ ",$only," == *",$1,"* ]]; }
wants_postgres() { wants postgres || wants postgres-2x2 || wants soak; }
api_port=${BENCH_API_PORT:-8480}
metrics_port=${BENCH_WORKER_METRICS_PORT:-$((api_port + 100))}
dev_port=${BENCH_TEMPORAL_DEV_PORT:-7433}

use_dev_credentials
use_med_without_dict
build_tools
# Built before anything is measured (the first build takes minutes): the
# PostgreSQL-backed server's start is then only waited for.
wants_postgres && build_temporal_server
go build -buildvcs=auto -o "$BIN/pixd" ./cmd/pixd
(cd tooling && go build -o "$BIN/pixload" ./cmd/pixload)
wants growth && go build -buildvcs=auto -o "$BIN/pspsim" ./cmd/pspsim
out="$DATA/bench"
rm -rf "$out"
mkdir -p "$out"
reports=()

on_exit_stop_children
use_nats 127.0.0.1:0 # nobody consumes here: any free port

# The benchmark's own PostgreSQL cluster (BENCH_PG_URL: a server of yours
# instead), with the server's defaults, autovacuum on, as production runs:
# this machine's server has autovacuum off (a CI setting), and there the
# dead entries of the queue tables' partial indexes (the inbox's pending
# rows, the outbox's unpublished events) are never cleaned, so every claim
# and every relay read walks more of them as a run goes on. The runs before
# 2026-12-01's last were measured on it (their figures are in docs/benchmarks.md's git history). The service's
# database and Temporal's are both on the benchmark's cluster.
if [ -n "${BENCH_PG_URL:-}" ]; then
	export PIX_PG_BASE_URL=${BENCH_PG_URL%/}
else
	pg_bin_dir >/dev/null || die "no PostgreSQL server binaries for the benchmark's cluster; set BENCH_PG_URL"
	stop_cluster "$DATA/bench-postgres"
	PIX_PG_BASE_URL=$(start_cluster "$DATA/bench-postgres" "$(free_port 55534 55634)")
	export PIX_PG_BASE_URL
	trap 'stop_children; stop_cluster "$DATA/bench-postgres"' EXIT
fi
export TEMPORAL_PG_URL="$PIX_PG_BASE_URL/postgres"
pg_settings=$(psql "$TEMPORAL_PG_URL" -tAc "SELECT 'PostgreSQL ' || current_setting('server_version') || ', autovacuum ' || current_setting('autovacuum') || ', shared_buffers ' || current_setting('shared_buffers') || ', synchronous_commit ' || current_setting('synchronous_commit')") ||
	die "the benchmark's PostgreSQL at $PIX_PG_BASE_URL does not answer"
log "PostgreSQL for the benchmark: $PIX_PG_BASE_URL ($pg_settings)"

# bench NAME LABEL TEMPORAL_ADDRESS TEMPORAL_PID REPLICAS PIXLOAD_FLAGS...:
# a fresh database, REPLICAS APIs (ports 8480, 8481, ...) and workers, and
# pixload against them; the report is $out/NAME.json (.txt).
bench() {
	local name=$1 label=$2 address=$3 temporal_pid=$4 n=$5 i pid
	shift 5
	log "$name: $n API + $n worker on $label"
	export DATABASE_URL TEMPORAL_ADDRESS="$address" LOG_LEVEL=warn
	DATABASE_URL=$(fresh_database "${BENCH_DATABASE:-pix_bench}")
	local apis workers
	{
		read -r -a apis
		read -r -a workers
	} < <(start_replicas "$out/$name-" "$n" "$api_port" "$metrics_port")
	CHILDREN+=("${apis[@]}" "${workers[@]}")
	local urls=() watch=() worker_metrics=()
	for ((i = 0; i < n; i++)); do
		urls+=("http://127.0.0.1:$((api_port + i))")
		wait_ready "${urls[-1]}"
		worker_metrics+=("http://127.0.0.1:$((metrics_port + i))/metrics")
	done
	for pid in "${apis[@]}"; do watch+=("api=$pid"); done
	for pid in "${workers[@]}"; do watch+=("worker=$pid"); done
	[ -n "$temporal_pid" ] && watch+=("temporal=$temporal_pid")
	local pause=()
	if [ "${BENCH_PAUSE_WORKER:-1}" = 1 ] && [ -z "$soak" ]; then
		pause=(-pause-cmd "kill -STOP ${workers[*]}" -resume-cmd "kill -CONT ${workers[*]}")
	fi
	# shellcheck disable=SC2086 # BENCH_FLAGS are words
	"$BIN/pixload" -api "$(IFS=,; echo "${urls[*]}")" -label "$label" -topology "$n+$n" -watch "$(IFS=,; echo "${watch[*]}")" \
		-rates "${BENCH_RATES:-1000,2000,4000,6000,8000}" -step "${BENCH_STEP:-2s}" -drain-timeout "${BENCH_DRAIN_TIMEOUT:-30m}" \
		-worker-metrics "$(IFS=,; echo "${worker_metrics[*]}")" -json "$out/$name.json" "${pause[@]}" "$@" ${BENCH_FLAGS:-} | tee "$out/$name.txt"
	reports+=("$out/$name.json")
	kill -CONT "${workers[@]}" 2>/dev/null || true
	stop_service "${apis[@]}" "${workers[@]}"
}

# storm: the independent many-connections case. One API alone on a fresh
# database (no worker, no Temporal: the webhooks wait in the inbox), and
# vegeta (`pixload storm`) offering BENCH_STORM_RATE signed webhooks/s over
# up to BENCH_STORM_CONNECTIONS connections, an open model as a PSP fleet
# or a retry storm would, for BENCH_STORM_FOR. The figure is the API's
# peak resident memory (VmHWM) against 100 MB; the caps
# (HTTP_MAX_CONNECTIONS, HTTP_MAX_IN_FLIGHT) are the API's defaults unless
# the environment sets them.
storm() {
	local url="http://127.0.0.1:$api_port" api
	log "storm: ${BENCH_STORM_RATE:-8000} webhooks/s over up to ${BENCH_STORM_CONNECTIONS:-2000} connections, one API"
	export DATABASE_URL LOG_LEVEL=warn
	DATABASE_URL=$(fresh_database "${BENCH_DATABASE:-pix_bench}")
	"$BIN/pixd" migrate >>"$out/storm-migrate.log" 2>&1 || die "migrate failed; see $out/storm-migrate.log"
	HTTP_ADDR="127.0.0.1:$api_port" "$BIN/pixd" api >>"$out/storm-api.log" 2>&1 &
	api=$!
	CHILDREN+=("$api")
	wait_ready "$url" healthz
	"$BIN/pixload" storm -api "$url" -watch "api=$api" -label storm -rate "${BENCH_STORM_RATE:-8000}" \
		-connections "${BENCH_STORM_CONNECTIONS:-2000}" -duration "${BENCH_STORM_FOR:-20s}" -json "$out/storm.json" | tee "$out/storm.txt"
	stop_service "$api"
}

# growth_seed NAME N: the database of one case of the growth figures (see
# the top), BENCH_DATABASE_NAME, fresh: migrated, N PIX of history and the
# fixtures both cases share (the accounts, the rows past their retention,
# the catch-up's window), vacuumed (or analysed) and checkpointed. Every
# case is seeded before any is measured, so that the cases' figures are
# taken one after the other, not an hour of seeding apart.
growth_seed() {
	local name=$1 n=$2 dir="$out/growth-$1" db="${BENCH_DATABASE:-pix_bench}_$1" url seed=(psql -X -q -v ON_ERROR_STOP=1)
	mkdir -p "$dir"
	if [ "${BENCH_GROWTH_SEEDED:-0}" = 1 ]; then
		log "growth $name: $db as it is (BENCH_GROWTH_SEEDED)"
		return
	fi
	if [ "${BENCH_GROWTH_TEMPLATES:-0}" = 1 ]; then
		url=$(ensure_postgres postgres)
		if [ "$(psql -X -tA "$url" -c "SELECT 1 FROM pg_database WHERE datname = '${db}_template'")" = 1 ]; then
			log "growth $name: a copy of the seeded ${db}_template"
			psql -X -q "$url" -c "DROP DATABASE IF EXISTS \"$db\" WITH (FORCE)" -c "CREATE DATABASE \"$db\" TEMPLATE \"${db}_template\" STRATEGY FILE_COPY"
			return
		fi
		db=${db}_template
	fi
	url=$(fresh_database "$db")
	DATABASE_URL=$url "$BIN/pixd" migrate >>"$dir/migrate.log" 2>&1 || die "migrate failed; see $dir/migrate.log"
	seed+=("$url" -v accounts="${BENCH_HISTORY_ACCOUNTS:-100000}" -f scripts/history.sql)
	log "growth $name: seeding $n PIX of history, ${BENCH_GROWTH_RETENTION_ROWS:-100000} past their retention, ${BENCH_GROWTH_CATCHUP:-100000} of the catch-up's window"
	local began=$SECONDS
	if [ "$n" -gt 0 ]; then
		"${seed[@]}" -v n="$n" -v tag=H >>"$dir/seed.log"
	fi
	"${seed[@]}" -v n="${BENCH_GROWTH_RETENTION_ROWS:-100000}" -v tag=R -v lo=1.02 -v hi=1.10 >>"$dir/seed.log"
	"${seed[@]}" -v n="${BENCH_GROWTH_CATCHUP:-100000}" -v tag=C -v source=api_pix -v lo=0.40 -v hi=0.41 >>"$dir/seed.log"
	local tables="inbox_messages, pix_credits, outbox_events, idempotency_keys, accounts, pix_keys"
	if [ "${BENCH_HISTORY_VACUUM:-1}" = 1 ]; then
		psql -X -q "$url" -c "VACUUM (ANALYZE) $tables"
	else
		psql -X -q "$url" -c "ANALYZE $tables"
	fi
	# The seed's pages written out now, not by a checkpoint spread over
	# the first figures (gigabytes of them with history).
	psql -X -q "$url" -c CHECKPOINT
	log "growth $name: seeded in $((SECONDS - began)) s ($(psql -X -tA "$url" -c "SELECT pg_size_pretty(pg_database_size(current_database()))"))"
	if [ "${BENCH_GROWTH_TEMPLATES:-0}" = 1 ]; then
		growth_seed "$name" "$n" # the first copy
	fi
}

# growth_measure NAME: the figures of one case on its database: a fresh
# Temporal dev server, the PSP simulator, one API and one worker, and
# `pixload growth`, its report $out/growth-NAME.json (.txt).
growth_measure() {
	local name=$1 dir="$out/growth-$1" api worker maintenance temporal sim sim_port pg_pid=0
	export DATABASE_URL TEMPORAL_ADDRESS="127.0.0.1:$dev_port" LOG_LEVEL=warn
	DATABASE_URL="$(ensure_postgres postgres | sed 's|/postgres?|/'"${BENCH_DATABASE:-pix_bench}_$name"'?|')"
	temporal=$(start_dev_temporal "$dev_port" "$dir/temporal" --dynamic-config-value system.forceSearchAttributesCacheRefreshOnRead=false)
	CHILDREN+=("$temporal")
	wait_temporal "127.0.0.1:$dev_port"
	sim_port=$(free_port 18090 18190)
	PSP_SIM_ADDR="127.0.0.1:$sim_port" "$BIN/pspsim" >>"$dir/pspsim.log" 2>&1 &
	sim=$!
	CHILDREN+=("$sim")
	# The Schedules are triggered by pixload, never by their clocks: no
	# retention or reconciliation of their own in the middle of a figure,
	# no scheduled catch-up (an operator's window is what is measured).
	local settings=(PSP_URL="http://127.0.0.1:$sim_port" PSP_CATCHUP_INTERVAL=0 RETENTION_INTERVAL=8760h RECONCILE_INTERVAL=8760h)
	{
		read -r api
		read -r worker
	} < <(export "${settings[@]}" && start_replicas "$dir/" 1 "$api_port" "$metrics_port")
	# A second worker without dispatchers: the retention runs on it while
	# webhooks arrive and the first worker is stopped, so that its credits
	# (the engine's ceiling, far below the arrivals) are no part of that
	# figure.
	env "${settings[@]}" DISPATCHER_ENABLED=false WORKER_METRICS_ADDR="127.0.0.1:$((metrics_port + 1))" "$BIN/pixd" worker >>"$dir/worker-2.log" 2>&1 &
	maintenance=$!
	CHILDREN+=("$api" "$worker" "$maintenance")
	wait_ready "http://127.0.0.1:$api_port"
	# The server's postmaster, whose process tree is its CPU (a server on
	# this machine, BENCH_PG_URL's too; 0, not reported, when it can't be
	# read).
	pg_pid=$(head -n 1 "$(psql -X -tA "$DATABASE_URL" -c 'SHOW data_directory')/postmaster.pid" 2>/dev/null || echo 0)
	# shellcheck disable=SC2086 # BENCH_GROWTH_FLAGS are words
	"$BIN/pixload" growth -api "http://127.0.0.1:$api_port" -label "$name" -rate "${BENCH_GROWTH_RATE:-3000}" -step "${BENCH_GROWTH_STEP:-10s}" \
		-pause-cmd "kill -STOP $worker" -resume-cmd "kill -CONT $worker" -pg-pid "$pg_pid" \
		-before-retention-cmd "kill $worker; while kill -0 $worker 2>/dev/null; do sleep 0.2; done" \
		-watch "api=$api,worker=$worker,temporal=$temporal" -psp-control "http://127.0.0.1:$sim_port" -pixctl "$BIN/pixctl" \
		-retention-rate "${BENCH_GROWTH_RETENTION_RATE:-1000}" -drain-timeout "${BENCH_DRAIN_TIMEOUT:-30m}" \
		-json "$out/growth-$name.json" ${BENCH_GROWTH_FLAGS:-} | tee "$out/growth-$name.txt"
	kill -CONT "$worker" 2>/dev/null || true
	# The dev server too, and waited for: the next case starts its own on
	# the same port.
	stop_service "$api" "$worker" "$maintenance" "$sim" "$temporal"
}

if wants storm; then
	storm
fi
if wants growth; then
	cases=$(echo "${BENCH_GROWTH_CASES:-empty,history}" | tr , ' ')
	for c in $cases; do
		case $c in
		empty) growth_seed empty 0 ;;
		history) growth_seed history "${BENCH_HISTORY:-10000000}" ;;
		*) die "BENCH_GROWTH_CASES: $c is neither empty nor history" ;;
		esac
	done
	for c in $cases; do
		growth_measure "$c"
	done
	if [ -f "$out/growth-empty.json" ] && [ -f "$out/growth-history.json" ]; then
		log "growth: empty tables beside $(printf "%'d" "${BENCH_HISTORY:-10000000}") PIX of history"
		"$BIN/pixload" growth compare "$out/growth-empty.json" "$out/growth-history.json" | tee "$out/growth.txt"
	fi
	if [ "${BENCH_KEEP_DATABASE:-0}" != 1 ]; then
		for c in $cases; do
			psql -X -q "${DATABASE_URL%/*}/postgres" -c "DROP DATABASE IF EXISTS \"${BENCH_DATABASE:-pix_bench}_$c\" WITH (FORCE)"
		done
	fi
fi
if wants dev || wants dev-2x2; then
	# The search attribute cache on, as on every server but start-dev's
	# default (which reads the cluster metadata and the namespace on every
	# lookup so that new attributes show at once; ours are registered by the
	# flags before the first run): see docs/benchmarks.md, "What a credit
	# costs the engine".
	temporal_dev=$(start_dev_temporal "$dev_port" "$out/temporal-dev" \
		--dynamic-config-value system.forceSearchAttributesCacheRefreshOnRead=false)
	CHILDREN+=("$temporal_dev")
	wait_temporal "127.0.0.1:$dev_port"
	if wants dev; then
		bench temporal-dev-sqlite temporal-dev-sqlite "127.0.0.1:$dev_port" "$temporal_dev" 1
	fi
	if wants dev-2x2; then
		baseline=()
		[ -f "$out/temporal-dev-sqlite.json" ] && baseline=(-baseline "$out/temporal-dev-sqlite.json")
		bench temporal-dev-sqlite-2x2 temporal-dev-sqlite "127.0.0.1:$dev_port" "$temporal_dev" 2 "${baseline[@]}"
	fi
	kill "$temporal_dev" 2>/dev/null || true # its CPU and memory are no part of the next runs
fi
if wants_postgres; then
	./scripts/temporal-postgres.sh >"$out/temporal-postgres.log" 2>&1 &
	temporal_script=$!
	CHILDREN+=("$temporal_script")
	wait_temporal 127.0.0.1:7633
	wait_namespace 127.0.0.1:7633
	TEMPORAL_ADDRESS=127.0.0.1:7633 "$BIN/pixd" temporal-setup # the PIX search attributes
	temporal_pg=$(pgrep -P "$temporal_script" -x temporal-server || true)
	if wants postgres; then
		bench temporal-postgres temporal-postgres 127.0.0.1:7633 "$temporal_pg" 1
	fi
	if wants postgres-2x2; then
		baseline=()
		[ -f "$out/temporal-postgres.json" ] && baseline=(-baseline "$out/temporal-postgres.json")
		bench temporal-postgres-2x2 temporal-postgres 127.0.0.1:7633 "$temporal_pg" 2 "${baseline[@]}"
	fi
	if wants soak; then
		bench temporal-postgres-soak temporal-postgres-soak 127.0.0.1:7633 "$temporal_pg" "${BENCH_REPLICAS:-1}" \
			-soak "$soak" -soak-rate "${BENCH_SOAK_RATE:-150}" -drain-timeout "${BENCH_DRAIN_TIMEOUT:-60m}"
	fi
fi
if [ "${#reports[@]}" -gt 0 ]; then
	log "summary"
	"$BIN/pixload" summary "${reports[@]}" | tee "$out/summary.txt"
fi
log "reports in $out"
