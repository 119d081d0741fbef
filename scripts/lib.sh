# Shared helpers of the project's scripts. Source it; it defines functions only.
# shellcheck shell=bash

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BIN="$ROOT/.bin"
DATA="$ROOT/.data"

# GO_TAGS are the build tags of every build, test and check of the service
# (the Makefile and the Dockerfile set the same): nomsgpack builds gin
# without its MessagePack codec (github.com/ugorji/go/codec), which no
# handler reaches (they decode JSON themselves, never by the request's
# Content-Type) and which was one of the longest packages to compile (about
# 40 CPU-seconds under -race, 30 without, on a new machine:
# docs/architecture.md#tests). A command that names its own -tags names
# these too ("e2e,$GO_TAGS"): its -tags replaces GOFLAGS'. Added once: make
# test exports them already (the Makefile), as may a caller's GOFLAGS.
GO_TAGS=nomsgpack
case " ${GOFLAGS:-} " in
*" -tags=$GO_TAGS "*) export GOFLAGS ;;
*) export GOFLAGS="-tags=$GO_TAGS${GOFLAGS:+ $GOFLAGS}" ;;
esac

# CHILDREN are the background processes a script started; on_exit_stop_children
# makes the script stop them (and wait for them) however it ends.
CHILDREN=()

# use_nats [ADDR]: the broker of the outbox's events, exported as NATS_URL
# (pixd requires it): NATS_URL if set; else a NATS already answering at
# 127.0.0.1:4222; else the pinned nats-server (.bin/nats-server, built by
# build_tools from tools/nats) started here with JetStream at ADDR (default
# 127.0.0.1:4222; port 0: the first free from 14222), its streams in
# .data/nats, its log .data/nats.log, and stopped with the script's other
# children (on_exit_stop_children). Call it in the script's own shell, not
# in $(...): the server is a child of the shell that starts it.
use_nats() {
	[ -n "${NATS_URL:-}" ] && return 0
	if (exec 3<>/dev/tcp/127.0.0.1/4222) 2>/dev/null; then
		export NATS_URL=nats://127.0.0.1:4222
		return 0
	fi
	local addr=${1:-127.0.0.1:4222} host port
	host=${addr%:*} port=${addr##*:}
	[ "$port" = 0 ] && port=$(free_port 14222 14322)
	mkdir -p "$DATA/nats"
	log "starting NATS with JetStream at $host:$port (streams in .data/nats, log: .data/nats.log)"
	"$BIN/nats-server" -a "$host" -p "$port" -js -sd "$DATA/nats" >"$DATA/nats.log" 2>&1 &
	CHILDREN+=($!)
	for _ in $(seq 1 50); do
		if (exec 3<>"/dev/tcp/$host/$port") 2>/dev/null; then
			export NATS_URL="nats://$host:$port"
			return 0
		fi
		sleep 0.2
	done
	die "NATS at $host:$port did not answer within 10 s; see .data/nats.log"
}

# use_dev_credentials: the webhook secret, admin token and token issuer of a
# local run, the demo, the benchmarks and the fault suite, unless the
# environment sets its own. They are published here, so they protect nothing:
# production sets WEBHOOK_SECRETS and ADMIN_TOKEN from its secret store, and
# AUTH_* to the bank's identity provider.
use_dev_credentials() {
	export WEBHOOK_SECRETS="${WEBHOOK_SECRETS:-dev-psp=whsec_FxHdX8cWPPDNG0JAwVicsysuvTq2ilXZsBYGmFnV6KQ=}"
	export ADMIN_TOKEN="${ADMIN_TOKEN:-dev-admin-token-not-for-production}"
	use_dev_issuer
	use_dev_codec_keys
}

# use_med_without_dict: MED runs without the DICT (MED_DICT_DISABLED=true),
# its reports stopping at their first DICT step (docs/med.md), for the
# scripts that start no DICT simulator (make run starts one: use_dictsim);
# a DICT of the caller's (MED_DICT_URL and its certificates) is used as set.
use_med_without_dict() {
	[ -n "${MED_DICT_URL:-}" ] || export MED_DICT_DISABLED="${MED_DICT_DISABLED:-true}"
}

# use_dev_codec_keys: the key that encrypts Temporal payloads (the payer's
# name and document) on this machine, unless the environment sets its own:
# 32 random bytes made once into $DATA/codec-keys (never committed; .data/
# is ignored) and kept with the Temporal database they encrypt.
use_dev_codec_keys() {
	if [ -n "${TEMPORAL_CODEC_KEYS:-}" ] || [ -n "${TEMPORAL_CODEC_KEYS_FILE:-}" ]; then
		return
	fi
	local file="$DATA/codec-keys"
	if [ ! -s "$file" ]; then
		mkdir -p "$DATA"
		(umask 077 && printf 'dev-1=%s\n' "$(random_base64 32)" >"$file")
	fi
	export TEMPORAL_CODEC_KEYS_FILE="$file"
}

# random_base64 N: N random bytes in standard base64, on one line (a codec
# key takes 32, a webhook secret's whsec_ value too).
random_base64() { head -c "$1" /dev/urandom | base64 | tr -d '\n'; }

# random_hex N: N random bytes in hexadecimal (safe in a URL's userinfo).
random_hex() { head -c "$1" /dev/urandom | od -An -v -tx1 | tr -d ' \n'; }

# use_dev_issuer: the development token issuer that the customer routes'
# bearer tokens come from (pixctl token -account acc-0001 mints one): its key
# pair in AUTH_DEV_KEY_DIR (default .data/auth), created here on first use so
# that it exists before pixd starts, and the API's settings, unless the
# environment sets its own: AUTH_ISSUER (pix-dev-issuer), AUTH_AUDIENCE
# (pix-api) and AUTH_JWKS_FILE ($AUTH_DEV_KEY_DIR/jwks.json; none with
# AUTH_JWKS_URL). The defaults are pixctl's (internal/tooling/devauth), printed by
# `pixctl dev-issuer -env`. Builds .bin/pixctl.
use_dev_issuer() {
	export AUTH_DEV_KEY_DIR="${AUTH_DEV_KEY_DIR:-$DATA/auth}"
	build_pixctl
	local settings
	settings=$("$BIN/pixctl" dev-issuer -env) || die "could not set up the development token issuer in $AUTH_DEV_KEY_DIR"
	eval "$settings"
}

# use_dev_pki: the development certificates and OAuth 2.0 client secret of
# make run's PSP simulator, spoken to as a real PSP is (mutual TLS both
# ways): made once by `pixctl dev-pki` under $DATA/pki (never committed;
# .data/ is ignored) and kept while valid; DEV_PKI is their directory.
# Development only: a bank's certificates come from its PKI and its PSP.
# Builds .bin/pixctl.
use_dev_pki() {
	build_pixctl
	DEV_PKI=$("$BIN/pixctl" dev-pki -dir "$DATA/pki") || die "could not make the development certificates in $DATA/pki"
}

# build_pixctl: .bin/pixctl from the tree (the Go build cache makes it cheap).
build_pixctl() {
	mkdir -p "$BIN"
	(cd "$ROOT" && go build -buildvcs=auto -o "$BIN/pixctl" ./cmd/pixctl)
}
stop_children() {
	local pid
	for pid in "${CHILDREN[@]}"; do kill "$pid" 2>/dev/null || true; done
	wait 2>/dev/null || true
}
on_exit_stop_children() {
	trap stop_children EXIT
	trap 'exit 130' INT TERM
}

# log prints a step, with the seconds since the script began (bash's SECONDS):
# where a run's time goes.
log() { printf '\033[1m==> [%4ss] %s\033[0m\n' "$SECONDS" "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }

# failure_digest LOG prints, bounded, what the failed tests of a go test
# output said, without the services' logs the tests print beside: the
# failures and panics, then the model histories' verdicts (MODEL: and the
# violations under it, with the seed to rerun), then the other test lines.
failure_digest() {
	log "what failed, in $(basename "$1")"
	grep -E -- '^(--- FAIL|FAIL|panic:)|^\s+--- FAIL' "$1" | head -n 40 || true
	grep -E -A 24 -- ': MODEL: ' "$1" | grep -v '"time":' | head -n 50 || true
	grep -E -- '_test\.go:[0-9]+: ' "$1" | grep -v -E '"time":|: MODEL: ' | tail -n 30 || true
}

# build_pinned NAME MODFILE PKG [FLAG...] builds PKG into .bin/NAME from the
# pinned module file MODFILE (under tools/, so that tools' dependencies never
# meet the service's), unless the binary is newer than MODFILE; FLAGs go to
# go build. The Go build cache makes a rebuild cheap.
build_pinned() {
	local name=$1 modfile=$2 pkg=$3
	shift 3
	mkdir -p "$BIN"
	[ -x "$BIN/$name" ] && [ "$BIN/$name" -nt "$ROOT/$modfile" ] && return 0
	log "building $name (pinned in $modfile)"
	(cd "$ROOT" && go build -modfile="$modfile" "$@" -o "$BIN/$name" "$pkg")
}

# NO_DEBUG_INFO: go build's flags for a tool nobody debugs: no DWARF from the
# compiler (-dwarf=false) nor in the binary (-s -w), which makes the cold
# build cheaper (docs/architecture.md#tests); a panic's trace still names its
# lines. std= compiles the standard library as every other build does, so it
# still comes from the build cache.
NO_DEBUG_INFO=(-gcflags=all=-dwarf=false -gcflags=std= "-ldflags=-s -w")

# copy_pinned_module TOOL MODULE DIR: DIR (emptied first) holds a writable
# copy of MODULE as tools/TOOL/go.mod pins it, in DIR/<MODULE's last
# element>, and a copy of that go.mod and go.sum that replaces MODULE with
# it: a pinned tool built from a dependency edited there (build_temporal_cli,
# build_promtool), with every other module as pinned.
copy_pinned_module() {
	local tool=$1 module=$2 dir=$3 mod
	local copy=${module##*/}
	mod=$(cd "$ROOT/tools/$tool" && go mod download -json "$module" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
	[ -d "$mod" ] || die "$tool: the pinned module $module was not downloaded"
	rm -rf "$dir"
	mkdir -p "$dir"
	cp -R "$mod/." "$dir/$copy"
	chmod -R u+w "$dir/$copy"
	cp "$ROOT/tools/$tool/go.mod" "$ROOT/tools/$tool/go.sum" "$dir/"
	printf '\nreplace %s => ./%s\n' "$module" "$copy" >>"$dir/go.mod"
}

# build_temporal_cli: .bin/temporal, the pinned Temporal CLI (the tests' and
# make run's dev server), the longest of the tools' cold builds, built
# without the server's back ends that a dev server never runs. The server
# links its Google Cloud Storage and S3 archivers (the archival provider
# names them; the dev server archives nothing), whose SDKs pulled in gRPC's
# xDS stack and aws-sdk-go, and AWS request signing for Elasticsearch
# visibility (the dev server's is SQLite): about a fifth of the cold build
# (docs/architecture.md#tests). As for promtool (build_promtool), the pinned
# go.temporal.io/server is copied to $BIN/temporal-src/server, the provider's
# two cases taken out, both archivers' packages deleted (whatever else
# imported them would fail to compile) and the signing client replaced by
# one that refuses to be enabled; built through a copy of
# tools/temporal/go.mod that replaces the module with the copy. Each edit is
# checked, and so is the result (no such package left in the CLI's
# dependencies): a new server whose files differ fails here, not silently.
# Optimised: the tests run it. Rebuilt when the go.mod or this file changes.
build_temporal_cli() {
	local modfile="$ROOT/tools/temporal/go.mod" src="$BIN/temporal-src"
	[ -x "$BIN/temporal" ] && [ "$BIN/temporal" -nt "$modfile" ] && [ "$BIN/temporal" -nt "${BASH_SOURCE[0]}" ] && return 0
	log "building temporal (pinned in tools/temporal/go.mod, without the cloud archivers)"
	copy_pinned_module temporal go.temporal.io/server "$src"
	strip_temporal_archivers "$src/server"
	strip_temporal_es_signing "$src/server"
	local cli=github.com/temporalio/cli/cmd/temporal left
	left=$(cd "$src" && go list -modfile=go.mod -deps "$cli" |
		grep -E '^(github\.com/aws/aws-sdk-go|cloud\.google\.com/go/storage|google\.golang\.org/grpc/xds)(/|$)') &&
		die "temporal: the CLI still links $(echo "$left" | head -n 1) after the edits (a new server?)"
	(cd "$src" && go build -modfile=go.mod "${NO_DEBUG_INFO[@]}" -o "$BIN/temporal" "$cli")
}

# strip_temporal_archivers DIR: the Temporal server copy in DIR without its
# Google Cloud Storage (gcloud) and S3 (s3store) archivers: the archival
# provider's cases for them taken out and their packages deleted. An
# archival URI of theirs is then an unknown scheme, as any other.
strip_temporal_archivers() {
	local provider="$1/common/archiver/provider/provider.go"
	[ "$(grep -cE $'^\tcase (gcloud|s3store)\\.URIScheme:$' "$provider")" = 4 ] ||
		die "temporal: $provider does not have the four archiver cases expected (a new server?)"
	# Each case runs from its line to the call that makes its archiver. The
	# history cases leave two blank lines after filestore's; one goes (gofmt).
	sed -i -e '/^\t"go\.temporal\.io\/server\/common\/archiver\/\(gcloud\|s3store\)"$/d' \
		-e '/^\tcase \(gcloud\|s3store\)\.URIScheme:$/,/^\t\t[a-zA-Z]*, err = \(gcloud\|s3store\)\.New[A-Za-z]*(.*)$/d' "$provider"
	sed -i -e '/^\t\thistoryArchiver, err = filestore\.NewHistoryArchiver(.*)$/{n;/^$/d;}' "$provider"
	! grep -qE 'gcloud|s3store' "$provider" || die "temporal: $provider still names gcloud or s3store after the edit (a new server?)"
	rm -r "$1/common/archiver/gcloud" "$1/common/archiver/s3store"
}

# strip_temporal_es_signing DIR: the Temporal server copy in DIR without AWS
# request signing for Elasticsearch (the last user of aws-sdk-go once the S3
# archiver is gone): NewAwsHttpClient refuses a configuration that enables it.
strip_temporal_es_signing() {
	local aws="$1/common/persistence/visibility/store/elasticsearch/client/aws.go"
	grep -qx 'func NewAwsHttpClient(config ESAWSRequestSigningConfig) (\*http.Client, error) {' "$aws" ||
		die "temporal: $aws does not define NewAwsHttpClient as expected (a new server?)"
	cat >"$aws" <<'EOF'
// Replaced by pix's scripts/lib.sh (build_temporal_cli): a dev server
// signs no Elasticsearch request, and aws-sdk-go is not linked.
package client

import (
	"errors"
	"net/http"
)

func NewAwsHttpClient(config ESAWSRequestSigningConfig) (*http.Client, error) {
	if !config.Enabled {
		return nil, nil
	}
	return nil, errors.New("AWS request signing for Elasticsearch is not built into this Temporal CLI")
}
EOF
}

# build_nats_server: the pinned NATS server (the outbox's broker).
build_nats_server() {
	build_pinned nats-server tools/nats/go.mod github.com/nats-io/nats-server/v2
}

# build_linters: staticcheck and workflowcheck, pinned in tools/lint.
build_linters() {
	build_pinned staticcheck tools/lint/go.mod honnef.co/go/tools/cmd/staticcheck
	build_pinned workflowcheck tools/lint/go.mod go.temporal.io/sdk/contrib/tools/workflowcheck
}

# build_tools builds the tools every run and test needs: the Temporal CLI and
# the NATS server, which the tests start (TEMPORAL_CLI, NATS_SERVER) and make
# run too, and the linters.
build_tools() {
	build_temporal_cli
	build_nats_server
	build_linters
}

# check_deploy_files validates the deployment files: docker-compose.yml with
# a Compose CLI where one is installed (`docker compose`, else
# `docker-compose`; under CI, as root, Debian's docker-compose is installed
# when neither is), and always in-process with tools/deploycheck (the same
# loading by compose-go, the project's rules for the compose file, the
# Prometheus rules' fields and each alert's demands, the Dockerfile against
# what the build compiles), whose own tests prove each check fails on a
# broken file. deploycheck is a module of its own: its first build takes
# about a minute, then the Go build cache makes it cheap.
check_deploy_files() {
	if [ -n "${CI:-}" ] && ! docker compose version >/dev/null 2>&1 && ! command -v docker-compose >/dev/null 2>&1 &&
		[ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
		# CI validates with a Compose CLI too: Debian's docker-compose, from
		# the package registry (a developer's machine is left as it is).
		log "installing docker-compose (Debian's package) to validate docker-compose.yml"
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker-compose >/dev/null ||
			die "could not install docker-compose"
	fi
	if docker compose version >/dev/null 2>&1; then
		docker compose -f "$ROOT/docker-compose.yml" config -q
	elif command -v docker-compose >/dev/null 2>&1; then
		docker-compose -f "$ROOT/docker-compose.yml" config -q
	fi
	mkdir -p "$BIN"
	(cd "$ROOT/tools/deploycheck" && go build -o "$BIN/deploycheck" . && go vet ./... &&
		"$BIN/staticcheck" ./... && go test -count=1 ./...)
	"$BIN/deploycheck" -root "$ROOT"
	check_prometheus_rules
}

# check_prometheus_rules runs Prometheus's own promtool, pinned in
# tools/promtool (the compose image's Prometheus), over the rules: `check
# rules` (syntax, PromQL, templates, duplicates) and `test rules`, the unit
# tests of deploy/prometheus/tests (a firing and a quiet case per alert,
# the SLIs' recording rules; tools/deploycheck checks none is missing). It
# is built by build_promtool. Debian's promtool is no substitute:
# bookworm's is Prometheus 2.42, not the compose image's 3.5, and a test
# here fails under it (2.42 computes 21.33% where the test, and 3.5, expect
# 20%: Prometheus 3 changed which samples a range selector takes).
check_prometheus_rules() {
	build_promtool
	(cd "$ROOT/deploy/prometheus" && "$BIN/promtool" check rules rules/*.yml &&
		"$BIN/promtool" test rules tests/*.yml)
}

# build_promtool builds .bin/promtool from the pinned Prometheus source
# without its service-discovery plugins. Prometheus links every plugin
# (plugins/plugins.go: the Kubernetes client, the cloud SDKs) and promtool
# names the Kubernetes one for `check config`; rules never use them, and
# they were most of promtool's cold build (docs/architecture.md#tests).
# Prometheus has no build tag for them and go build's -overlay may not
# replace files of the module cache, so the pinned module is copied to
# $BIN/promtool-src, its plugins/plugins.go emptied (plugins/minimum.go,
# the file and HTTP discovery, stays) and the Kubernetes case taken out of
# promtool's main.go, and built through a copy of tools/promtool/go.mod
# that replaces the module with the copy. The edits are checked: a new
# Prometheus whose files no longer match fails here, not silently. Compiled
# without optimisations (-N -l) nor debug information: promtool runs here
# for seconds.
build_promtool() {
	local modfile="$ROOT/tools/promtool/go.mod" src="$BIN/promtool-src"
	[ -x "$BIN/promtool" ] && [ "$BIN/promtool" -nt "$modfile" ] && [ "$BIN/promtool" -nt "${BASH_SOURCE[0]}" ] && return 0
	log "building promtool (pinned in tools/promtool/go.mod, without the service-discovery plugins)"
	copy_pinned_module promtool github.com/prometheus/prometheus "$src"
	printf '// Emptied by scripts/lib.sh build_promtool: no service-discovery plugin.\npackage plugins\n' >"$src/prometheus/plugins/plugins.go"
	local main="$src/prometheus/cmd/promtool/main.go"
	sed -i -e '/"github.com\/prometheus\/prometheus\/discovery\/kubernetes"/d' \
		-e '/^\t\t\tcase \*kubernetes\.SDConfig:$/,/^\t\t\t\t}$/d' "$main"
	! grep -q kubernetes "$main" || die "promtool: $main still names Kubernetes after the edit (a new Prometheus?)"
	(cd "$src" && go build -modfile=go.mod "-gcflags=all=-N -l -dwarf=false" -gcflags=std= "-ldflags=-s -w" \
		-o "$BIN/promtool" github.com/prometheus/prometheus/cmd/promtool)
}

# temporal_up ADDRESS: does a Temporal server answer there?
temporal_up() { "$BIN/temporal" operator cluster health --address "$1" >/dev/null 2>&1; }

# wait_temporal ADDRESS: until the server answers (60 s at most).
wait_temporal() {
	for _ in $(seq 1 60); do
		temporal_up "$1" && return 0
		sleep 1
	done
	die "Temporal at $1 did not answer within 60 s"
}

# pg_ready URL: does a PostgreSQL answer at URL?
pg_ready() { pg_isready -q -d "$1" -t 3 >/dev/null 2>&1; }

# pg_bin_dir: the newest installed PostgreSQL server binaries, if any.
pg_bin_dir() {
	local d
	d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
	[ -n "$d" ] && [ -x "$d/initdb" ] && echo "$d"
}

# as_postgres CMD...: PostgreSQL refuses to run as root.
as_postgres() {
	if [ "$(id -u)" = 0 ]; then
		runuser -u postgres -- "$@"
	else
		"$@"
	fi
}

# cluster_dir DIR: where a throwaway cluster wanted in DIR really lives. As
# root the server runs as the postgres user, who may not be allowed into the
# checkout (a clone under a private temporary folder, say): then the cluster
# lives under /tmp, in a folder named after DIR.
cluster_dir() {
	local probe=$1
	while [ ! -e "$probe" ]; do probe=$(dirname "$probe"); done
	if [ "$(id -u)" = 0 ] && ! runuser -u postgres -- test -x "$probe" 2>/dev/null; then
		echo "/tmp/pix-pg-$(printf %s "$1" | md5sum | cut -c1-12)"
	else
		echo "$1"
	fi
}

# start_cluster DIR PORT: starts (creating it first if needed) a throwaway
# PostgreSQL cluster in cluster_dir DIR on 127.0.0.1:PORT; prints its base URL.
start_cluster() {
	local dir port=$2 bindir base="postgres://postgres@127.0.0.1:$2"
	dir=$(cluster_dir "$1")
	pg_ready "$base/postgres" && { echo "$base"; return 0; }
	bindir=$(pg_bin_dir) || die "no PostgreSQL server binaries to start a cluster with; set DATABASE_URL"
	mkdir -p "$dir"
	[ "$(id -u)" = 0 ] && chown postgres "$dir"
	if [ ! -f "$dir/PG_VERSION" ]; then
		log "creating a throwaway PostgreSQL cluster in $dir"
		as_postgres "$bindir/initdb" -D "$dir" -U postgres --auth=trust >/dev/null
	fi
	log "starting the PostgreSQL cluster in $dir on port $port"
	as_postgres "$bindir/pg_ctl" -D "$dir" -l "$dir/server.log" -o "-p $port -k /tmp -c listen_addresses=127.0.0.1" -w start >/dev/null
	echo "$base"
}

# pg_ctl_for DIR: the pg_ctl command of the throwaway cluster wanted in DIR
# (cluster_dir DIR), run as the postgres user when root.
pg_ctl_for() {
	local bindir dir
	bindir=$(pg_bin_dir) || return 1
	dir=$(cluster_dir "$1")
	if [ "$(id -u)" = 0 ]; then
		echo "runuser -u postgres -- $bindir/pg_ctl -D $dir"
	else
		echo "$bindir/pg_ctl -D $dir"
	fi
}

# stop_cluster DIR: a fast stop of the throwaway cluster in DIR, if one runs
# there (a run that was interrupted left it on the port it chose).
stop_cluster() {
	local cmd
	[ -f "$(cluster_dir "$1")/postmaster.pid" ] || return 0
	cmd=$(pg_ctl_for "$1") || return 0
	$cmd -m fast -w stop >/dev/null 2>&1 || true
}

# free_port FIRST LAST: prints the first port from FIRST to LAST on which
# nothing on 127.0.0.1 accepts a connection.
free_port() {
	local p
	for ((p = $1; p <= $2; p++)); do
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
			echo "$p"
			return 0
		fi
	done
	die "no free port on 127.0.0.1 from $1 to $2"
}

# ensure_postgres DBNAME: prints the URL of a PostgreSQL server that has the
# database DBNAME, creating the database if needed. In order: the server at
# PIX_PG_BASE_URL if set (postgres://user@host:port, nothing started; it must
# answer), the server
# at 127.0.0.1:5432 (starting the machine's cluster if it is stopped), else a
# throwaway cluster under .data/postgres on port 55432.
ensure_postgres() {
	local db=$1 base=${PIX_PG_BASE_URL:-postgres://postgres@127.0.0.1:5432}
	if [ -n "${PIX_PG_BASE_URL:-}" ]; then
		# The server asked for, or none: never another one in its place.
		pg_ready "$base/postgres" || die "PIX_PG_BASE_URL $PIX_PG_BASE_URL does not answer"
	elif ! pg_ready "$base/postgres" && command -v pg_ctlcluster >/dev/null 2>&1 && [ -d /etc/postgresql ]; then
		log "starting the machine's PostgreSQL cluster"
		pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | sort -V | tail -n 1)" main start >&2 || true
		for _ in $(seq 1 30); do pg_ready "$base/postgres" && break; sleep 1; done
	fi
	if ! pg_ready "$base/postgres"; then
		base=$(start_cluster "$DATA/postgres" 55432)
	fi
	if [ "$(psql "$base/postgres" -tAc "SELECT 1 FROM pg_database WHERE datname = '$db'")" != 1 ]; then
		psql "$base/postgres" -qc "CREATE DATABASE \"$db\"" >&2
	fi
	warn_postgres_major "$base/postgres"
	echo "$base/$db?sslmode=disable"
}

# use_two_roles URL: the database at URL (a superuser's, as ensure_postgres
# prints it) served as production serves it (docs/operations.md, "The
# database's roles"): deploy/postgres/roles.sql makes the migrator
# pix_migrator, which owns the database and what is in it, and the service
# role pix_service, which owns nothing (pixd migrate grants it what it
# needs). Both log in without a password: the local clusters trust
# 127.0.0.1. Exports MIGRATE_DATABASE_URL (the migrator's) and DATABASE_URL
# (the service's).
use_two_roles() {
	local url=$1 rest
	psql "$url" -q -o /dev/null -v ON_ERROR_STOP=1 -v migrator_password= -v service_password= \
		-f "$ROOT/deploy/postgres/roles.sql" || die "the database's roles in $url"
	rest=${url#*://}
	rest=${rest#*@}
	export MIGRATE_DATABASE_URL="postgres://pix_migrator@$rest"
	export DATABASE_URL="postgres://pix_service@$rest"
}

# warn_postgres_major URL: says so when the PostgreSQL at URL (the one the
# tests run, the machine's) is not of the major version docker-compose.yml
# runs (.env's POSTGRES_VERSION, checked there by tools/deploycheck): the
# tests then vouch for another major than the deployment's.
warn_postgres_major() {
	local declared here
	declared=$(sed -n 's/^POSTGRES_VERSION=//p' "$ROOT/.env")
	here=$(psql "$1" -tAc "SELECT current_setting('server_version_num')::int / 10000" 2>/dev/null) || return 0
	if [ -n "$declared" ] && [ "$here" != "${declared%%.*}" ]; then
		log "warning: these tests run PostgreSQL $here, docker-compose.yml runs $declared (.env POSTGRES_VERSION): the compose major is not the one tested"
	fi
}

# build_temporal_server builds the Temporal server and its SQL schema tool,
# used only by benchmarks (a long first build, then cached).
build_temporal_server() {
	build_pinned temporal-server tools/temporal-server/go.mod go.temporal.io/server/cmd/server
	build_pinned temporal-sql-tool tools/temporal-server/go.mod go.temporal.io/server/cmd/tools/sql
}
