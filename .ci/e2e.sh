#!/usr/bin/env bash
# `make e2e`: the end-to-end tests with a real Prometheus and a real
# Alertmanager (internal/e2e, build tag e2e). Installs Prometheus and
# Alertmanager (Debian's prometheus and prometheus-alertmanager packages)
# when missing, then builds llmprobe, starts the simulator, `llmprobe serve`
# and Prometheus on loopback and checks recording rules and an alert through
# Prometheus' HTTP API; and replays the alerts the rules raise for eleven
# injected incidents (evaluated by promtool over simulated series) into
# Alertmanager with deploy/alertmanager/alertmanager.yml, counting one
# notification per incident (about four minutes). TestTracingWithJaeger runs
# llmprobe serve with tracing on against Jaeger all-in-one (built here from
# .ci/tools/jaeger) and finds a probe's span by the trace id of its exemplar.
#
# Every process the test starts is stopped by PID: by the test's cleanups
# when it ends normally or fails, and, when those do not run (go test's
# -timeout panic, a kill), by the EXIT trap of .ci/pidtrap.sh from the PID
# file the test keeps ($LLMPROBE_E2E_PIDFILE: "<pid> <binary>" per running
# process). The trap signals a PID only while it still runs that binary.
#
# LLMPROBE_E2E_KEEP=1 keeps the temporary directory (configs, logs, TSDB).
# Extra arguments go to go test (e.g. -run, -timeout; the last -timeout wins).
set -euo pipefail
cd "$(dirname "$0")/.."

bash .ci/install-prometheus.sh
bash .ci/install-alertmanager.sh

# The PID file and the EXIT trap (.ci/pidtrap.sh); remove_jaeger runs after
# the leftover processes are stopped.
remove_jaeger() { if [ -n "${jaeger_dir:-}" ]; then rm -rf "$jaeger_dir"; fi; }
. .ci/pidtrap.sh
pidtrap_start e2e remove_jaeger

# Jaeger all-in-one for TestTracingWithJaeger, built from its own module
# (.ci/tools/jaeger: the main module's graph stays lean). The first build
# takes long: 118 s to download its modules and 935 s to compile on the
# shared 2-core machine (a 121 MB binary); later ones come from Go's
# module and build caches in seconds.
jaeger_dir=$(mktemp -d "${TMPDIR:-/tmp}/llmprobe-e2e-jaeger.XXXXXX")
(cd .ci/tools/jaeger && go build -o "$jaeger_dir/jaeger" github.com/jaegertracing/jaeger/cmd/jaeger)
export LLMPROBE_E2E_JAEGER="$jaeger_dir/jaeger"

go test -tags e2e -count=1 -timeout 10m -v ./internal/e2e/ "$@"
