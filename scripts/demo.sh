#!/usr/bin/env bash
# `make demo`: the demo scenario against a running `make run`, signing its
# webhooks with the same development credentials, and its customers' calls
# with tokens of the same development issuer (.data/auth).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"
use_dev_credentials # builds .bin/pixctl
"$BIN/pixctl" demo
