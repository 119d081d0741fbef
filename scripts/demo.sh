#!/usr/bin/env bash
# `make demo`: the demo scenario against a running `make run`, signing its
# webhooks with the same development credentials and posting them to the
# webhook listener over mutual TLS with the demo's development certificate
# (.data/pki, made by make run), its customers' calls with tokens of the
# same development issuer (.data/auth), and the PSP simulator configured
# through its control listener. pixctl demo's defaults are make run's; its
# flags (pixctl help demo) point it elsewhere.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"
use_dev_credentials # builds .bin/pixctl
"$BIN/pixctl" demo
