#!/usr/bin/env bash
# Starts a Temporal server with PostgreSQL persistence on this machine, for
# benchmarks: go.temporal.io/server v1.29.1 (pinned in tools/temporal-server),
# its schemas set up by its own SQL tool, on the local PostgreSQL, with the
# frontend at 127.0.0.1:7633 (ports 76xx/66xx, clear of the dev server's).
# Runs in the foreground until stopped; state in the databases
# temporal_bench and temporal_bench_visibility.
#   TEMPORAL_PG_URL   PostgreSQL for Temporal (default: the local server)
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"

build_temporal_server
pg_url=${TEMPORAL_PG_URL:-$(ensure_postgres postgres)}
# postgres://user[:password]@host:port/db?...
hostport=$(sed -E 's#^[a-z]+://([^@]*@)?([^/?]+).*#\2#' <<<"$pg_url")
host=${hostport%:*}
port=${hostport##*:}
user=$(sed -E 's#^[a-z]+://([^:@]*).*#\1#' <<<"$pg_url")

src=$(go list -modfile=tools/temporal-server/go.mod -m -f '{{.Dir}}' go.temporal.io/server)
dir="$DATA/temporal-pg"
mkdir -p "$dir/config/dynamicconfig"
sed -e "s/databaseName: \"temporal\"/databaseName: \"temporal_bench\"/" \
	-e "s/databaseName: \"temporal_visibility\"/databaseName: \"temporal_bench_visibility\"/" \
	-e "s/connectAddr: \"127.0.0.1:5432\"/connectAddr: \"$host:$port\"/" \
	-e "s/user: \"temporal\"/user: \"$user\"/" -e "s/password: \"temporal\"/password: \"\"/" \
	-e "s/grpcPort: 72/grpcPort: 76/" -e "s/membershipPort: 69/membershipPort: 66/" -e "s/httpPort: 7243/httpPort: 7643/" \
	-e "s/port: 7936/port: 7636/" -e "s/127.0.0.1:8000/127.0.0.1:8600/" -e "s/localhost:7233/localhost:7633/" \
	-e "s#filepath: \"config/dynamicconfig/#filepath: \"$dir/config/dynamicconfig/#" -e "s/level: info/level: warn/" \
	"$src/config/development-postgres12.yaml" >"$dir/config/development-postgres12.yaml"
cp "$src/config/dynamicconfig/development-sql.yaml" "$dir/config/dynamicconfig/"

sqltool() { "$BIN/temporal-sql-tool" --plugin postgres12 --ep "$host" -p "$port" -u "$user" "$@" >>"$dir/schema.log" 2>&1; }
for db in temporal_bench temporal_bench_visibility; do
	schema=temporal
	[ "$db" = temporal_bench_visibility ] && schema=visibility
	if [ "$(psql "${pg_url%/*}/postgres" -tAc "SELECT 1 FROM pg_database WHERE datname = '$db'")" != 1 ]; then
		log "creating $db with Temporal's $schema schema"
		sqltool --db "$db" create-database
		sqltool --db "$db" setup-schema -v 0.0
	fi
	sqltool --db "$db" update-schema -d "$src/schema/postgresql/v12/$schema/versioned" || die "schema update failed; see $dir/schema.log"
done

log "Temporal server (PostgreSQL persistence) at 127.0.0.1:7633 (log: $dir/server.log)"
on_exit_stop_children
"$BIN/temporal-server" --root "$dir" --config config --env development-postgres12 --allow-no-auth start >>"$dir/server.log" 2>&1 &
CHILDREN+=($!)
wait_temporal 127.0.0.1:7633
"$BIN/temporal" operator namespace describe -n default --address 127.0.0.1:7633 >/dev/null 2>&1 ||
	"$BIN/temporal" operator namespace create -n default --address 127.0.0.1:7633 >/dev/null
go build -buildvcs=auto -o "$BIN/pixd" ./cmd/pixd
TEMPORAL_ADDRESS=127.0.0.1:7633 "$BIN/pixd" temporal-setup # the PIX search attributes
log "ready"
wait "${CHILDREN[-1]}"
