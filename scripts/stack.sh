# Runs the service as separate processes for benchmarks and fault tests.
# Source after lib.sh; defines functions only.
# shellcheck shell=bash

# fresh_database NAME: drops and creates database NAME; prints its URL.
fresh_database() {
	local base url
	url=$(ensure_postgres postgres)
	base=${url%/*}
	psql "$base/postgres" -qc "DROP DATABASE IF EXISTS \"$1\" WITH (FORCE)" >&2
	psql "$base/postgres" -qc "CREATE DATABASE \"$1\"" >&2
	echo "$base/$1?sslmode=disable"
}

# start_dev_temporal PORT DIR [FLAG...]: a Temporal dev server (SQLite file
# in DIR), with the PIX search attributes (needs .bin/pixd) and any more
# flags given.
start_dev_temporal() {
	local port=$1 dir=$2
	shift 2
	mkdir -p "$dir"
	# shellcheck disable=SC2046 # the flags are words
	"$BIN/temporal" server start-dev --headless --ip 127.0.0.1 --port "$port" --http-port $((port + 10)) --metrics-port $((port + 11)) \
		--db-filename "$dir/temporal.db" --log-level error $("$BIN/pixd" search-attribute-flags) "$@" >>"$dir/temporal.log" 2>&1 &
	echo $!
}

# start_service LOGDIR: migrate, then pixd api and pixd worker as two
# processes (environment: DATABASE_URL, TEMPORAL_ADDRESS, HTTP_ADDR, ...).
# Prints the two pids.
start_service() {
	"$BIN/pixd" migrate >>"$1/migrate.log" 2>&1 || die "migrate failed; see $1/migrate.log"
	"$BIN/pixd" api >>"$1/api.log" 2>&1 &
	local api=$!
	"$BIN/pixd" worker >>"$1/worker.log" 2>&1 &
	echo "$api $!"
}

# start_replicas LOGPREFIX N PORT [METRICS_PORT]: migrate, then N pixd api processes (the
# first on 127.0.0.1:PORT, the next on PORT+1, ...) and N pixd worker
# processes, every worker with its dispatchers and outbox relay (claims are
# FOR UPDATE SKIP LOCKED with leases: they share the work, never a row).
# Logs go to LOGPREFIXapi-1.log, LOGPREFIXworker-1.log, ... The workers'
# relays publish to the broker at NATS_URL (use_nats), all to the same one.
# With METRICS_PORT, worker I serves its metrics on 127.0.0.1:METRICS_PORT+I-1.
# Prints two lines: the API pids, then the worker pids.
start_replicas() {
	local prefix=$1 n=$2 port=$3 metrics_port=${4:-} i apis=() workers=()
	"$BIN/pixd" migrate >>"${prefix}migrate.log" 2>&1 || die "migrate failed; see ${prefix}migrate.log"
	for ((i = 1; i <= n; i++)); do
		HTTP_ADDR="127.0.0.1:$((port + i - 1))" "$BIN/pixd" api >>"${prefix}api-$i.log" 2>&1 &
		apis+=($!)
	done
	for ((i = 1; i <= n; i++)); do
		if [ -n "$metrics_port" ]; then
			export WORKER_METRICS_ADDR="127.0.0.1:$((metrics_port + i - 1))"
		fi
		"$BIN/pixd" worker >>"${prefix}worker-$i.log" 2>&1 &
		workers+=($!)
	done
	echo "${apis[*]}"
	echo "${workers[*]}"
}

# stop_service PID...: SIGTERM, then until they have exited (at most 60 s).
# start_service's processes are not this shell's children (they start in a
# command substitution), so `wait` can't be used for them; without this, the
# next start_service could find the API's port still taken while it drains.
stop_service() {
	kill "$@" 2>/dev/null || true
	for _ in $(seq 1 120); do
		local alive=0 pid
		for pid in "$@"; do kill -0 "$pid" 2>/dev/null && alive=1; done
		[ "$alive" = 0 ] && return 0
		sleep 0.5
	done
	die "processes $* did not exit within 60 s of SIGTERM"
}

# wait_ready URL [PROBE]: until the API's /readyz (or /PROBE: healthz for
# an API run without Temporal) answers 200.
wait_ready() {
	for _ in $(seq 1 60); do
		curl -fs "$1/${2:-readyz}" >/dev/null 2>&1 && return 0
		sleep 0.5
	done
	die "the API at $1 is not ready"
}

# wait_namespace ADDRESS: until the default namespace exists there.
wait_namespace() {
	for _ in $(seq 1 60); do
		"$BIN/temporal" operator namespace describe -n default --address "$1" >/dev/null 2>&1 && return 0
		sleep 1
	done
	die "no default namespace at $1"
}
