#!/usr/bin/env bash
# The run command (README, `make run`): everything locally on one machine.
# PostgreSQL (DATABASE_URL, else 127.0.0.1:5432, else a throwaway cluster
# under .data/), the Temporal dev server with its Web UI (state kept in
# .data/temporal.db), the PSP simulator (unless PSP_URL is set), NATS for the
# outbox's events (NATS_URL, a local one, or one embedded in pixd), the
# migrations, the demo accounts, and the API and the worker in one process
# (`pixd dev`), whose customer routes take the bearer tokens of a development
# issuer kept in .data/auth (`.bin/pixctl token` mints them). Ctrl-C stops
# what it started.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"
mkdir -p "$DATA"

use_dev_credentials
build_tools
log "building pixd and pspsim"
go build -o "$BIN/pixd" ./cmd/pixd
go build -o "$BIN/pspsim" ./cmd/pspsim

if [ -z "${DATABASE_URL:-}" ]; then
	DATABASE_URL=$(ensure_postgres pix)
	export DATABASE_URL
fi

export TEMPORAL_ADDRESS="${TEMPORAL_ADDRESS:-127.0.0.1:7233}"
temporal_port="${TEMPORAL_ADDRESS##*:}"
ui_port=$((temporal_port + 1000))
export TEMPORAL_UI_URL="${TEMPORAL_UI_URL:-http://127.0.0.1:$ui_port}"
export HTTP_ADDR="${HTTP_ADDR:-127.0.0.1:8080}"
# The dev server's UI shows decrypted payloads through the API's codec
# server. That UI has no login to send, so here the codec server answers
# without one (loopback only; pixd warns at start). Production keeps
# TEMPORAL_CODEC_AUTH_REQUIRED=true: operators authenticate.
export TEMPORAL_CODEC_CORS_ORIGINS="${TEMPORAL_CODEC_CORS_ORIGINS:-$TEMPORAL_UI_URL}"
export TEMPORAL_CODEC_AUTH_REQUIRED="${TEMPORAL_CODEC_AUTH_REQUIRED:-false}"

on_exit_stop_children

if temporal_up "$TEMPORAL_ADDRESS"; then
	log "using the Temporal server already at $TEMPORAL_ADDRESS"
else
	log "starting the Temporal dev server at $TEMPORAL_ADDRESS (log: .data/temporal.log)"
	# shellcheck disable=SC2046 # the flags are words
	"$BIN/temporal" server start-dev --ip 127.0.0.1 --port "$temporal_port" --ui-port "$ui_port" \
		--ui-codec-endpoint "http://$HTTP_ADDR/codec" --db-filename "$DATA/temporal.db" --log-level warn $("$BIN/pixd" search-attribute-flags) >"$DATA/temporal.log" 2>&1 &
	CHILDREN+=($!)
	wait_temporal "$TEMPORAL_ADDRESS"
fi
# The PIX search attributes the Temporal UI finds a PIX by: the flags above
# register them on a server started here; this, on one that was running.
"$BIN/pixd" temporal-setup

# The PSP that outgoing PIX and devoluções go through: the simulator, unless
# PSP_URL names a PSP already. It notifies the API as an API Pix PSP does (the
# PIX told to its POST /sim/pix, and the outcomes of their devoluções): to the
# API Pix webhook route, signed with the development webhook secret (the first
# key of WEBHOOK_SECRETS), unless PSP_SIM_WEBHOOK_* say otherwise. Not over
# TLS (the simulator speaks plain HTTP, without a client certificate): there
# the refund sagas poll the simulator, and the demo delivers its PIX itself.
if [ -z "${PSP_URL:-}" ]; then
	export PSP_SIM_ADDR="${PSP_SIM_ADDR:-127.0.0.1:8090}"
	export PSP_URL="http://$PSP_SIM_ADDR"
	sim_webhook_url="${PSP_SIM_WEBHOOK_URL:-}"
	if [ -z "$sim_webhook_url" ] && [ -z "${TLS_CERT_FILE:-}" ]; then
		sim_webhook_url="http://${WEBHOOK_HTTP_ADDR:-$HTTP_ADDR}/webhooks/api-pix/pix"
	fi
	sim_env=()
	if [ -n "$sim_webhook_url" ]; then
		sim_env+=(PSP_SIM_WEBHOOK_URL="$sim_webhook_url")
		if [ -z "${PSP_SIM_WEBHOOK_SECRET_FILE:-}" ]; then
			sim_env+=(PSP_SIM_WEBHOOK_SECRET="${PSP_SIM_WEBHOOK_SECRET:-$WEBHOOK_SECRETS}")
		fi
	fi
	log "starting the PSP simulator at $PSP_URL, its webhooks to ${sim_webhook_url:-nowhere} (log: .data/pspsim.log)"
	env "${sim_env[@]}" "$BIN/pspsim" >"$DATA/pspsim.log" 2>&1 &
	CHILDREN+=($!)
fi

use_nats

cat >&2 <<MSG

  PIX API        http://$HTTP_ADDR   (GET /readyz, POST /webhooks/pix, POST /webhooks/api-pix/pix, POST /pix, ...)
  Webhooks       signed with WEBHOOK_SECRETS=$WEBHOOK_SECRETS (development only)
  Customer API   Authorization: Bearer <token> of the development issuer (AUTH_ISSUER=$AUTH_ISSUER, keys in $AUTH_DEV_KEY_DIR):
                   export TOKEN=\$(.bin/pixctl token -account acc-0001)    (-scope "pix:read pix:write", -ttl 1h)
                   curl -H "Authorization: Bearer \$TOKEN" http://$HTTP_ADDR/accounts/acc-0001
  Admin          Authorization: Bearer $ADMIN_TOKEN   (or a token of scope pix:admin)
  PSP            $PSP_URL   (PUT /behaviors/{pix_key}: accept, reject, reject_later, fail, timeout;
                   PUT /refund-behaviors/{e2eid}: return, not_done, reject, ...; POST /sim/pix: a PIX received, to its webhook)
  NATS           ${NATS_URL:-nats://127.0.0.1:4222 (embedded in pixd, JetStream in .data/nats)}   (make events: pixctl events tail)
  Temporal UI    $TEMPORAL_UI_URL
  Database       $DATABASE_URL
  Demo           make demo   (in another terminal)

MSG
"$BIN/pixd" dev &
CHILDREN+=($!)
wait "${CHILDREN[-1]}"
