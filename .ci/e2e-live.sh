#!/usr/bin/env bash
# `make e2e-live`: the live end-to-end test of one page per incident
# (internal/e2e TestAlertmanagerLive, build tag e2e; issue 39): simulators,
# a live `llmprobe serve`, a real Prometheus with the shipped rules and a
# real Alertmanager with deploy/alertmanager/alertmanager.yml and a webhook
# receiver. A healthy stretch must give no notification, each fault (slow
# TTFT, a killed target, HTTP 500s on two probes with llmprobe restarted
# while the burn fires) exactly one firing and one resolved. What it
# shortens is in live_test.go and docs/runbook.md ("Live end-to-end").
#
# LLMPROBE_E2E_HEALTHY sets the healthy stretch (a Go duration, default 4m;
# 30m for the figure of docs/runbook.md); the run takes about 15 minutes
# plus the stretch beyond 4m, on a shared 2-core machine. go test's -timeout
# follows from it (LLMPROBE_E2E_TIMEOUT overrides). Not part of `make e2e`
# nor .ci/run: too long. Installs Prometheus and Alertmanager (Debian's
# packages) when missing, as .ci/e2e.sh does.
#
# Every process the test starts is stopped by PID: by the test's cleanups,
# and, when those do not run (a -timeout panic, a kill), by this script's
# EXIT trap of .ci/pidtrap.sh (shared with .ci/e2e.sh) from the PID file the
# test keeps ($LLMPROBE_E2E_PIDFILE). LLMPROBE_E2E_KEEP=1 keeps the
# temporary directory (configs, logs, TSDB). Extra arguments go to go test.
set -euo pipefail
cd "$(dirname "$0")/.."

bash .ci/install-prometheus.sh
bash .ci/install-alertmanager.sh

. .ci/pidtrap.sh
pidtrap_start e2e-live
export LLMPROBE_E2E_LIVE=1

# go test's -timeout: 35 minutes plus the healthy stretch (minutes, rounded
# up), read from the Go duration with hours, minutes and seconds.
timeout=${LLMPROBE_E2E_TIMEOUT:-}
if [ -z "$timeout" ]; then
  h=${LLMPROBE_E2E_HEALTHY:-4m}
  if ! [[ "$h" =~ ^(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?$ ]] || [ -z "$h" ]; then
    echo "e2e-live: LLMPROBE_E2E_HEALTHY=$h: want a duration in h, m and s (e.g. 30m, 1h30m)" >&2
    exit 2
  fi
  mins=$(( 10#${BASH_REMATCH[2]:-0} * 60 + 10#${BASH_REMATCH[4]:-0} + (10#${BASH_REMATCH[6]:-0} + 59) / 60 ))
  timeout="$((mins + 35))m"
fi

go test -tags e2e -count=1 -timeout "$timeout" -v -run '^TestAlertmanagerLive$' ./internal/e2e/ "$@"
