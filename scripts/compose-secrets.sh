#!/usr/bin/env bash
# make compose-secrets: the secrets docker-compose.yml hands its services
# (top-level `secrets:`), made here as random values, one file each, in
# deploy/secrets (COMPOSE_SECRETS_DIR elsewhere; ignored by git). Run it
# once before the first `docker compose up`: Compose refuses to start a
# service whose secret file is missing.
#
# A secret already made is kept, never regenerated: PostgreSQL takes its
# password only when the pgdata volume is first initialised, and Temporal's
# database holds payloads encrypted with the codec key. To replace one,
# delete its file and the state that depends on it (for the password:
# `docker compose down -v`), then run this again. database_url and
# migrate_database_url are derived from the roles' passwords, so they are
# rewritten every time.
#
# The directory is private to its owner (0700); the files in it are
# readable by all (0644) because Compose bind-mounts them as they are, and
# the services read them as their own users (pixd as nonroot, Grafana as
# grafana, ...), not as the host user who made them.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

dir=${COMPOSE_SECRETS_DIR:-$ROOT/deploy/secrets}
mkdir -p "$dir"
chmod 700 "$dir"

# put NAME VALUE: writes the secret NAME (through a temporary file, so that
# an interrupted run leaves no half-written secret).
put() {
	printf '%s\n' "$2" >"$dir/.$1.tmp"
	chmod 644 "$dir/.$1.tmp"
	mv "$dir/.$1.tmp" "$dir/$1"
}

# make_once NAME VALUE: writes the secret NAME unless it exists.
make_once() {
	if [ -s "$dir/$1" ]; then
		log "compose secret $1: kept"
	else
		put "$1" "$2"
		log "compose secret $1: made"
	fi
}

make_once postgres_password "$(random_hex 24)"
# The migrator's and the service's roles (docker-compose.yml's db-roles
# sets their passwords at every start: these two may be replaced, then
# `docker compose up` again).
make_once pix_migrator_password "$(random_hex 24)"
make_once pix_service_password "$(random_hex 24)"
put migrate_database_url "postgres://pix_migrator:$(cat "$dir/pix_migrator_password")@postgresql:5432/pix?sslmode=disable"
put database_url "postgres://pix_service:$(cat "$dir/pix_service_password")@postgresql:5432/pix?sslmode=disable"
make_once temporal_codec_keys "compose-1=$(random_base64 32)"
make_once webhook_secrets "dev-psp=whsec_$(random_base64 32)"
make_once admin_token "$(random_hex 32)"
make_once grafana_admin_password "$(random_hex 16)"
log "compose secrets in $dir; now: make compose-build && docker compose up"
