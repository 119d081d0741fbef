#!/usr/bin/env bash
# `make demo`: the demo scenario against a running `make run`, signing its
# webhooks with the same development credentials.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"
use_dev_credentials
go run ./cmd/pixctl demo
