#!/usr/bin/env bash
# `make e2e`: the end-to-end test with a real Prometheus (internal/e2e, build
# tag e2e). Installs Prometheus (Debian's package) when missing, then builds
# llmprobe, starts the simulator, `llmprobe serve` and Prometheus on loopback
# and checks recording rules and an alert through Prometheus' HTTP API. Every
# process it starts is stopped by PID when the test ends.
#
# LLMPROBE_E2E_KEEP=1 keeps the temporary directory (configs, logs, TSDB).
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-prometheus.sh
go test -tags e2e -count=1 -timeout 10m -v ./internal/e2e/ "$@"
