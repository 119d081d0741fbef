#!/bin/bash
# tooling/autovacuum/run.sh NAME CONFIG SECONDS RATE: one run of the
# autovacuum measurement (docs/benchmarks.md, "Autovacuum of the growing
# tables"). A copy of the seeded database AV_TEMPLATE (migrated, then
# scripts/history.sql, VACUUM (ANALYZE), ALLOW_CONNECTIONS false) as
# av_NAME on the cluster at AV_PG_URL (postgres://user@host:port, started
# with log_autovacuum_min_duration = 0), CONFIG settings (as migrated:
# 0065's storage parameters) or defaults (them reset: the server's), then
# pgbench at RATE transactions/s for SECONDS: pix.sql (half of them: RATE/2
# PIX/s), claim.sql and read.sql (a quarter each). Every 5 s the four
# tables' pg_stat_user_tables and pg_stat_progress_vacuum, every 30 s their
# visibility maps; at AV_VACUUM_AT seconds (default 780) a VACUUM of each
# as autovacuum runs it (cost delay 2 ms, limit 200): what is left to
# vacuum. Results in AV_OUT/NAME (default .data/autovacuum/NAME); then
# `analyze.py NAME SERVER_LOG`.
set -euo pipefail
name=$1 config=$2 secs=$3 rate=$4
base=${AV_PG_URL:?AV_PG_URL: the cluster, postgres://user@host:port}
here=$(cd "$(dirname "$0")" && pwd)
out=${AV_OUT:-$here/../../.data/autovacuum}/$name
tables="'inbox_messages','pix_credits','outbox_events','idempotency_keys'"
rm -rf "$out"
mkdir -p "$out"
db=av_$name
psql -X -q "$base/postgres" -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" -c "CREATE DATABASE $db TEMPLATE ${AV_TEMPLATE:-av_seed} STRATEGY FILE_COPY"
case $config in
settings) ;;
defaults)
	for t in inbox_messages outbox_events idempotency_keys pix_credits; do
		psql -X -q "$base/$db" -c "ALTER TABLE $t RESET (autovacuum_vacuum_scale_factor, autovacuum_vacuum_threshold, autovacuum_vacuum_insert_scale_factor, autovacuum_vacuum_insert_threshold, autovacuum_analyze_scale_factor, autovacuum_analyze_threshold)"
	done ;;
*) echo "run.sh: CONFIG is settings or defaults" >&2; exit 2 ;;
esac
psql -X -q "$base/$db" -c "CREATE EXTENSION IF NOT EXISTS pg_visibility"
sizes="SELECT c.relname, pg_relation_size(c.oid), pg_indexes_size(c.oid) FROM pg_class c WHERE relname IN ($tables)"
psql -X -At "$base/$db" -c "SELECT relname, reloptions FROM pg_class WHERE relname IN ($tables)" >"$out/reloptions.txt"
psql -X -At -F' ' "$base/$db" -c "$sizes" >"$out/sizes-before.txt"
date -u +%FT%T.%3NZ >"$out/start"
(
	n=0
	while :; do
		psql -X -At -F' ' "$base/$db" \
			-c "SELECT extract(epoch FROM now())::numeric(14,1), relname, n_live_tup, n_dead_tup, n_ins_since_vacuum, autovacuum_count, autoanalyze_count FROM pg_stat_user_tables WHERE relname IN ($tables)" \
			-c "SELECT extract(epoch FROM now())::numeric(14,1), 'progress', relid::regclass, phase, heap_blks_total, heap_blks_scanned, index_vacuum_count, num_dead_tuples FROM pg_stat_progress_vacuum WHERE datname = current_database()" >>"$out/samples.txt" 2>/dev/null || true
		if [ $((n % 6)) = 0 ]; then
			psql -X -At -F' ' "$base/$db" -c "SELECT extract(epoch FROM now())::numeric(14,1), c, (pg_visibility_map_summary(c::regclass)).all_visible, pg_relation_size(c::regclass) / 8192 FROM unnest(ARRAY[$tables]) c" >>"$out/vm.txt" 2>/dev/null || true
		fi
		n=$((n + 1))
		sleep 5
	done
) &
sampler=$!
(
	sleep "${AV_VACUUM_AT:-780}"
	for t in inbox_messages outbox_events pix_credits idempotency_keys; do
		echo "$t start $(date -u +%FT%T.%3NZ)"
		psql -X "$base/$db" -c "SET vacuum_cost_delay = '2ms'" -c "SET vacuum_cost_limit = 200" -c "VACUUM (VERBOSE) $t" 2>&1
		echo "$t end $(date -u +%FT%T.%3NZ)"
	done
) >"$out/vacuum-manual.txt" 2>&1 &
manual=$!
trap 'kill $sampler $manual 2>/dev/null || true' EXIT
port=${base##*:}
host=${base#*@}
host=${host%:*}
(cd "$out" && pgbench -n -h "$host" -p "$port" -U postgres -c 16 -j 2 -T "$secs" -R "$rate" \
	-f "$here/pix.sql@2" -f "$here/claim.sql@1" -f "$here/read.sql@1" -r --log --log-prefix=lat "$db" >pgbench.txt 2>&1) || true
date -u +%FT%T.%3NZ >"$out/end"
sleep 6
kill $sampler 2>/dev/null || true
wait $manual || true
psql -X -At -F' ' "$base/$db" -c "$sizes" >"$out/sizes-after.txt"
psql -X "$base/$db" -c "SELECT relname, n_live_tup, n_dead_tup, n_ins_since_vacuum, autovacuum_count, autoanalyze_count FROM pg_stat_user_tables WHERE relname IN ($tables)" \
	-c "SELECT i.indexrelid::regclass, pg_relation_size(i.indexrelid) FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid WHERE c.relname IN ($tables) ORDER BY 1" >"$out/final.txt" 2>&1
