#!/usr/bin/env bash
# `make faults`: the fault suite (tooling/cmd/pixfaults) against the service run as
# separate processes under load, on a PostgreSQL cluster of its own (case 4
# stops and restarts it) and a Temporal dev server of its own; pixfaults runs
# the PSP simulator in its process and a NATS server of its own (the pinned
# .bin/nats-server; the outgoing cases stop and start them). Loopback only, bounded in time. Arguments go to
# pixfaults (-smoke: the short CI version; -only 1,3: some cases). PIXD names
# a pixd binary to test instead of building one from the tree.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"

use_dev_credentials
use_med_without_dict
# The service's bearer tokens are pixfaults' own: it sets up a development
# issuer in its run directory and gives the API its AUTH_* settings.
# No use_nats: the broker is pixfaults' own, whose NATS_URL it gives the
# service (never the machine's shared NATS, which case 13 would stop).
build_tools
export NATS_SERVER="$BIN/nats-server"
if [ -z "${PIXD:-}" ]; then
	go build -buildvcs=auto -o "$BIN/pixd" ./cmd/pixd
	PIXD="$BIN/pixd"
fi
(cd tooling && go build -o "$BIN/pixfaults" ./cmd/pixfaults)

dir="$DATA/faults"
mkdir -p "$dir"
# One run per checkout at a time: the cluster and the run folder are the
# checkout's. Runs of other checkouts (a clean clone's CI beside a working
# tree) take a port of their own, so neither ever reaches the other's
# cluster (and drops its database).
exec 9>"$dir/lock"
flock -n 9 || die "another fault run is using $dir; wait for it to end"
rm -rf "$dir/run"
mkdir -p "$dir/run"
pgdir=$(cluster_dir "$dir/pg")
pg_ctl_cmd=$(pg_ctl_for "$dir/pg") || die "no PostgreSQL server binaries for the fault suite's cluster"
# A cluster an interrupted run of this checkout left running listens on the
# port that run chose: stop it, and start it again on this run's.
stop_cluster "$dir/pg"
port=$(free_port 55433 55533)
# (The lock is not handed to the servers and tools started below: a cluster
# that outlived its run must not hold it.)
base=$(start_cluster "$dir/pg" "$port" 9>&-)
trap 'stop_cluster "$dir/pg"' EXIT

psql "$base/postgres" -qc "DROP DATABASE IF EXISTS pix_faults WITH (FORCE)"
psql "$base/postgres" -qc "CREATE DATABASE pix_faults"
# The migrator and the service role, as production (docs/operations.md).
use_two_roles "$base/pix_faults?sslmode=disable"
export PIXD TEMPORAL_CLI="$BIN/temporal"
# An immediate stop is a crash: no checkpoint, connections cut.
export PIX_FAULTS_PG_STOP="$pg_ctl_cmd -m immediate -w stop"
export PIX_FAULTS_PG_START="$pg_ctl_cmd -l $pgdir/server.log -o '-p $port -k /tmp -c listen_addresses=127.0.0.1' -w start"
"$BIN/pixfaults" -dir "$dir/run" "$@" 9>&-
