#!/usr/bin/env bash
# The run command (README, `make run`): everything locally on one machine.
# PostgreSQL (DATABASE_URL, else 127.0.0.1:5432, else a throwaway cluster
# under .data/), the Temporal dev server with its Web UI (state kept in
# .data/temporal.db), the PSP simulator with OAuth 2.0 and mutual TLS both
# ways (unless PSP_URL is set), NATS for the
# outbox's events (NATS_URL, a local one, or the pinned nats-server started
# here), the
# migrations, the demo accounts, and the API and the worker in one process
# (`pixd dev`), whose customer routes take the bearer tokens of a development
# issuer kept in .data/auth (`.bin/pixctl token` mints them), and the DICT
# simulator MED calls, over mutual TLS with signed XML both ways (unless
# MED_DICT_URL names a DICT, or MED_DICT_DISABLED=true runs MED without
# one). Ctrl-C stops what it started.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"
mkdir -p "$DATA"

use_dev_credentials
build_tools
log "building pixd, pspsim and dictsim"
go build -buildvcs=auto -o "$BIN/pixd" ./cmd/pixd
go build -buildvcs=auto -o "$BIN/pspsim" ./cmd/pspsim
go build -buildvcs=auto -o "$BIN/dictsim" ./cmd/dictsim

# Two roles, as production: pix_migrator migrates, pix_service serves
# (use_two_roles). A DATABASE_URL given is used as it is (with
# MIGRATE_DATABASE_URL if given too: else one role, which pixd says at WARN).
if [ -z "${DATABASE_URL:-}" ]; then
	use_two_roles "$(ensure_postgres pix)"
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
# Each build (a rebuilt pixd: a new build id) becomes the current version
# of the workers' deployment as it starts: development has no operator to
# promote it. Production keeps the default, first (docs/operations.md).
export TEMPORAL_WORKER_PROMOTE="${TEMPORAL_WORKER_PROMOTE:-always}"

on_exit_stop_children

# The PSP that outgoing PIX, devoluções and the catch-up go through: the
# simulator, unless PSP_URL names a PSP already (then nothing of this is
# set: that PSP's settings are the caller's). The simulator speaks the API
# Pix as a real PSP does, so this is the path production takes:
# - its API (under /api/v2, as the spec's servers) and its OAuth 2.0 token
#   endpoint over TLS requiring our client certificate (pix-bank); pixd's
#   PSP client takes a token with the client secret and presents the
#   certificate;
# - its webhooks, unsigned as the API Pix's, over mutual TLS with its own
#   client certificate (pspsim) to pixd's webhook listener, which requires
#   one and names the PSP by it (WEBHOOK_MTLS_PSPS); the main listener stays
#   plain HTTP on loopback for the customer API, the demo and the Temporal
#   UI's codec endpoint (TLS_LISTENERS=webhooks). The demo's own webhooks
#   come as the PSP dev-psp, signed and with its certificate;
# - its control routes (behaviours, POST /sim/pix), which the demo drives,
#   on a plain listener of their own (PSP_SIM_CONTROL_ADDR).
# The certificates and the client secret are development ones, made once
# under .data/pki by pixctl dev-pki, as the development issuer's keys are.
sim_control_url=""
if [ -z "${PSP_URL:-}" ]; then
	use_dev_pki
	pki=$DEV_PKI
	export PSP_SIM_ADDR="${PSP_SIM_ADDR:-127.0.0.1:8090}"
	export PSP_SIM_CONTROL_ADDR="${PSP_SIM_CONTROL_ADDR:-127.0.0.1:8091}"
	export PSP_SIM_API_BASE_PATH="${PSP_SIM_API_BASE_PATH:-/api/v2}"
	sim_control_url="http://$PSP_SIM_CONTROL_ADDR"
	export PSP_URL="https://$PSP_SIM_ADDR$PSP_SIM_API_BASE_PATH"
	export PSP_OAUTH_TOKEN_URL="https://$PSP_SIM_ADDR/oauth/token"
	export PSP_CLIENT_ID=pix-bank
	export PSP_CLIENT_SECRET_FILE="$pki/psp-client-secret"
	export PSP_TLS_CERT_FILE="$pki/bank-client.pem" PSP_TLS_KEY_FILE="$pki/bank-client-key.pem"
	export PSP_CA_FILE="$pki/ca.pem"
	export WEBHOOK_HTTP_ADDR="${WEBHOOK_HTTP_ADDR:-127.0.0.1:8443}"
	export TLS_LISTENERS=webhooks
	export TLS_CERT_FILE="$pki/webhook-server.pem" TLS_KEY_FILE="$pki/webhook-server-key.pem"
	export TLS_CLIENT_CA_FILE="$pki/ca.pem"
	# The PSPs the listener knows by their certificate's CN: the simulator,
	# which posts unsigned, and the demo's PSP (the first of
	# WEBHOOK_SECRETS, whose secret it signs with), which must pass both.
	export WEBHOOK_MTLS_PSPS="pspsim=pspsim;${WEBHOOK_SECRETS%%=*}=dev-psp"
	# The PSP at PSP_URL is the simulator: a PIX its catch-up finds is its,
	# and its MED notices about it are taken.
	export PSP_NAME="${PSP_NAME:-pspsim}"
	# The catch-up lists the simulator's record every 10 s rather than every
	# minute, so that make demo's PIX that is never notified is credited
	# within seconds. (A Schedule an earlier run made keeps its interval:
	# .bin/temporal schedule delete -s pix-psp-catchup:pix-credit, and
	# start again, to change it.)
	export PSP_CATCHUP_INTERVAL="${PSP_CATCHUP_INTERVAL:-10s}"
	# A listing ends this long before now (production: 1m, so that a webhook
	# a little late is not counted as lost); locally the demo's PIX shows
	# within seconds.
	export PSP_CATCHUP_GRACE="${PSP_CATCHUP_GRACE:-5s}"
	log "starting the PSP simulator at $PSP_URL (OAuth 2.0 and mutual TLS; control: $sim_control_url; log: .data/pspsim.log)"
	PSP_SIM_TLS_CERT_FILE="$pki/psp-server.pem" PSP_SIM_TLS_KEY_FILE="$pki/psp-server-key.pem" \
		PSP_SIM_TLS_CLIENT_CA_FILE="$pki/ca.pem" \
		PSP_SIM_OAUTH_CLIENT_ID="$PSP_CLIENT_ID" PSP_SIM_OAUTH_CLIENT_SECRET_FILE="$PSP_CLIENT_SECRET_FILE" \
		PSP_SIM_WEBHOOK_URL="https://$WEBHOOK_HTTP_ADDR/webhooks/api-pix/pix" \
		PSP_SIM_MED_WEBHOOK_URL="https://$WEBHOOK_HTTP_ADDR/webhooks/med" \
		PSP_SIM_WEBHOOK_TLS_CERT_FILE="$pki/psp-client.pem" PSP_SIM_WEBHOOK_TLS_KEY_FILE="$pki/psp-client-key.pem" \
		PSP_SIM_WEBHOOK_CA_FILE="$pki/ca.pem" \
		"$BIN/pspsim" >"$DATA/pspsim.log" 2>&1 &
	CHILDREN+=($!)
fi

# MED's DICT: the simulator (cmd/dictsim), unless MED_DICT_URL names a DICT
# already (its settings are the caller's) or MED_DICT_DISABLED=true runs MED
# without one. The simulator is the DICT as pixd meets it in production:
# its API over mutual TLS (the bank's client certificate, the one it
# presents to the PSP, names it: BANK_ISPB), every answer signed by the
# DICT's certificate, which pixd verifies (MED_DICT_VERIFY_CERT_FILE), every
# write signed by the bank's and verified there. Its control routes, on a
# plain listener of their own, open the reports and refund requests make
# demo plays (as the payer's participant, 99999010). The certificates are
# the development PKI's (.data/pki, pixctl dev-pki). MED lists the DICT
# every 5 s (MED_DICT_LIST_INTERVAL; production: 1m), so that a report
# opened there is taken within seconds.
dict_control_url=""
if [ -z "${MED_DICT_URL:-}" ] && [ "${MED_DICT_DISABLED:-}" != true ]; then
	use_dev_pki
	export DICT_SIM_ADDR="${DICT_SIM_ADDR:-127.0.0.1:8092}"
	export DICT_SIM_CONTROL_ADDR="${DICT_SIM_CONTROL_ADDR:-127.0.0.1:8093}"
	dict_control_url="http://$DICT_SIM_CONTROL_ADDR"
	export BANK_ISPB="${BANK_ISPB:-12345678}"
	export MED_DICT_URL="https://$DICT_SIM_ADDR/api/v1"
	export MED_DICT_CERT_FILE="$DEV_PKI/bank-client.pem" MED_DICT_KEY_FILE="$DEV_PKI/bank-client-key.pem"
	export MED_DICT_CA_FILE="$DEV_PKI/ca.pem" MED_DICT_VERIFY_CERT_FILE="$DEV_PKI/dict-signer.pem"
	export MED_DICT_LIST_INTERVAL="${MED_DICT_LIST_INTERVAL:-5s}"
	log "starting the DICT simulator at $MED_DICT_URL (mutual TLS, signed XML; control: $dict_control_url; log: .data/dictsim.log)"
	DICT_SIM_TLS_CERT_FILE="$DEV_PKI/dict-server.pem" DICT_SIM_TLS_KEY_FILE="$DEV_PKI/dict-server-key.pem" \
		DICT_SIM_TLS_CLIENT_CA_FILE="$DEV_PKI/ca.pem" \
		DICT_SIM_SIGNING_CERT_FILE="$DEV_PKI/dict-signer.pem" DICT_SIM_SIGNING_KEY_FILE="$DEV_PKI/dict-signer-key.pem" \
		DICT_SIM_PARTICIPANTS="$BANK_ISPB=$DEV_PKI/bank-client.pem;99999010=$DEV_PKI/dict-payer.pem" \
		"$BIN/dictsim" >"$DATA/dictsim.log" 2>&1 &
	CHILDREN+=($!)
fi
use_med_without_dict

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

use_nats

if [ -n "$sim_control_url" ]; then
	webhooks_line="https://$WEBHOOK_HTTP_ADDR   (POST /webhooks/api-pix/pix, POST /webhooks/pix): mutual TLS, the PSPs by their
                   certificate, WEBHOOK_MTLS_PSPS=$WEBHOOK_MTLS_PSPS; ${WEBHOOK_SECRETS%%=*} signs too (WEBHOOK_SECRETS, development only)"
	psp_lines="$PSP_URL   (API Pix: OAuth 2.0 at $PSP_OAUTH_TOKEN_URL as $PSP_CLIENT_ID, and mutual TLS;
                   development certificates and client secret in $pki: pixctl dev-pki)
  PSP control    $sim_control_url   (PUT /behaviors/{pix_key}: accept, reject, reject_later, fail, timeout;
                   PUT /refund-behaviors/{e2eid}: return, not_done, reject, ...; PUT /webhook-behaviors/{chave}: never;
                   POST /sim/pix: a PIX received, to its webhook; PUT /sim/token-endpoint, /sim/webhook-drop: faults)
  Catch-up       every $PSP_CATCHUP_INTERVAL (PSP_CATCHUP_INTERVAL): the PSP's GET /pix into the inbox"
else
	webhooks_line="http://${WEBHOOK_HTTP_ADDR:-$HTTP_ADDR}   (POST /webhooks/api-pix/pix, POST /webhooks/pix; signed with WEBHOOK_SECRETS=$WEBHOOK_SECRETS)"
	psp_lines="$PSP_URL   (PSP_URL: yours; no simulator started)"
fi
if [ -n "$dict_control_url" ]; then
	med_line="$MED_DICT_URL   (the DICT simulator: mutual TLS, signed XML; listed every $MED_DICT_LIST_INTERVAL;
                   control $dict_control_url: POST /sim/infraction-reports, POST /sim/refunds, ...)"
elif [ -n "${MED_DICT_URL:-}" ]; then
	med_line="$MED_DICT_URL   (MED_DICT_URL: yours; no simulator started)"
else
	med_line="without the DICT (MED_DICT_DISABLED=true): reports stop at their first DICT step"
fi
cat >&2 <<MSG

  PIX API        http://$HTTP_ADDR   (GET /readyz, POST /pix, GET /accounts/{id}, /admin/..., /codec, /metrics)
  Webhooks       $webhooks_line
  Customer API   Authorization: Bearer <token> of the development issuer (AUTH_ISSUER=$AUTH_ISSUER, keys in $AUTH_DEV_KEY_DIR):
                   export TOKEN=\$(.bin/pixctl token -account acc-0001)    (-scope "pix:read pix:write", -ttl 1h)
                   curl -H "Authorization: Bearer \$TOKEN" http://$HTTP_ADDR/accounts/acc-0001
  Admin          Authorization: Bearer $ADMIN_TOKEN   (or a token of scope pix:admin)
  PSP            $psp_lines
  MED            $med_line
  NATS           $NATS_URL   (make events: pixctl events tail)
  Temporal UI    $TEMPORAL_UI_URL
  Database       $DATABASE_URL (migrations: ${MIGRATE_DATABASE_URL:-the same role})
  Demo           make demo   (in another terminal)

MSG
"$BIN/pixd" dev &
CHILDREN+=($!)
wait "${CHILDREN[-1]}"
