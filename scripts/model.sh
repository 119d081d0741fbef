#!/usr/bin/env bash
# The long version of the model-based test (tooling/e2e/model_test.go,
# TestModelRandomHistories): a seeded random history of every money path,
# PIX_MODEL_OPS operations (10,000 by default), run in small concurrent groups
# against a whole stack (API, dispatchers, worker, the PSP simulator, a
# Temporal dev server and a PostgreSQL schema of its own), every answer and
# the books held against a sequential model. `go test` runs a short version of
# it (400 operations) with every other test.
#
# A run prints its seed first; a failure prints the seed, the violations and
# the history. Reproduce one with the same PIX_MODEL_SEED and PIX_MODEL_OPS.
# Bounded: the test's own waits are bounded; the history ends early, loudly
# and with every final check, once PIX_MODEL_BUDGET (9m) is spent; go test
# stops the whole run after PIX_MODEL_TIMEOUT (15m). 10,000 operations took
# 7m43s on the project's 2-core machine. Arguments go to go test (e.g. -race).
#
# Then the history of one PIX that cautionary blocks and a MED race for
# (saga/med's TestBlocksAndMEDOnOnePIXAgainstAModel: on PostgreSQL only),
# `go test` running its six committed seeds: here PIX_HOLDS_MODEL_RUNS (5)
# more seeds from PIX_HOLDS_MODEL_SEED (time-based by default: seed, seed+1,
# ...), PIX_HOLDS_MODEL_STEPS (400) steps each; a failure prints its seed and
# step, reproduced with the same PIX_HOLDS_MODEL_SEED and
# PIX_HOLDS_MODEL_STEPS (PIX_HOLDS_MODEL_RUNS=1). PIX_MODEL_ONLY=holds runs
# it alone, PIX_MODEL_ONLY=e2e the whole stack's alone.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"

build_temporal_cli
build_nats_server
export TEMPORAL_CLI="$BIN/temporal" NATS_SERVER="$BIN/nats-server"
if [ -z "${PIX_TEST_DATABASE_URL:-}" ]; then
	PIX_TEST_DATABASE_URL=$(ensure_postgres test)
	export PIX_TEST_DATABASE_URL
fi
only="${PIX_MODEL_ONLY:-}"
if [ "$only" != holds ]; then
	export PIX_MODEL_OPS="${PIX_MODEL_OPS:-10000}"
	export PIX_MODEL_SEED="${PIX_MODEL_SEED:-$(date +%s%N)}"
	export PIX_MODEL_BUDGET="${PIX_MODEL_BUDGET:-9m}"
	log "model-based histories: PIX_MODEL_SEED=$PIX_MODEL_SEED PIX_MODEL_OPS=$PIX_MODEL_OPS PIX_MODEL_BUDGET=$PIX_MODEL_BUDGET"
	(cd tooling && go test -count=1 -timeout "${PIX_MODEL_TIMEOUT:-15m}" -run '^TestModelRandomHistories$' -v -tags "e2e,$GO_TAGS" "$@" ./e2e)
fi
if [ "$only" != e2e ]; then
	first="${PIX_HOLDS_MODEL_SEED:-$(date +%s)}"
	export PIX_HOLDS_MODEL_STEPS="${PIX_HOLDS_MODEL_STEPS:-400}"
	for ((i = 0; i < ${PIX_HOLDS_MODEL_RUNS:-5}; i++)); do
		export PIX_HOLDS_MODEL_SEED=$((first + i))
		log "blocks and a MED on one PIX: PIX_HOLDS_MODEL_SEED=$PIX_HOLDS_MODEL_SEED PIX_HOLDS_MODEL_STEPS=$PIX_HOLDS_MODEL_STEPS"
		go test -count=1 -timeout "${PIX_MODEL_TIMEOUT:-15m}" -run '^TestBlocksAndMEDOnOnePIXAgainstAModel$' "$@" ./saga/med
	done
fi
