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
# -timeout panic, a kill), by this script's EXIT trap from the PID file the
# test keeps ($LLMPROBE_E2E_PIDFILE: "<pid> <binary>" per running process).
# The trap signals a PID only while it still runs that binary.
#
# LLMPROBE_E2E_KEEP=1 keeps the temporary directory (configs, logs, TSDB).
# Extra arguments go to go test (e.g. -run, -timeout; the last -timeout wins).
set -euo pipefail
cd "$(dirname "$0")/.."

bash .ci/install-prometheus.sh
bash .ci/install-alertmanager.sh

pidfile=$(mktemp "${TMPDIR:-/tmp}/llmprobe-e2e-pids.XXXXXX")
export LLMPROBE_E2E_PIDFILE="$pidfile"

# started PID BINARY: whether PID is still a process running BINARY.
started() {
  local exe
  if [ -d /proc/self ]; then
    exe=$(readlink "/proc/$1/exe" 2>/dev/null) || return 1
    exe=${exe% (deleted)}
    [ "$exe" = "$2" ]
  else
    exe=$(ps -o comm= -p "$1" 2>/dev/null) || return 1
    [ "$(basename -- "$exe")" = "$(basename -- "$2")" ]
  fi
}

# signal_left SIG: sends SIG to every process of the PID file still running
# its binary (and to its process group: the test makes each one a group
# leader); prints how many there were.
signal_left() {
  local n=0 pid bin
  while read -r pid bin; do
    [ -n "${pid:-}" ] || continue
    if started "$pid" "$bin"; then
      echo "e2e: $1 to leftover $bin (pid $pid)" >&2
      kill "-$1" -- "-$pid" 2>/dev/null || kill "-$1" "$pid" 2>/dev/null || true
      n=$((n + 1))
    fi
  done <"$pidfile"
  echo "$n"
}

cleanup() {
  local status=$? i
  if [ -s "$pidfile" ] && [ "$(signal_left TERM)" != 0 ]; then
    for i in 1 2 3 4 5 6 7 8 9 10; do
      sleep 0.5
      if [ "$(signal_left 0 2>/dev/null)" = 0 ]; then break; fi
    done
    signal_left KILL >/dev/null
  fi
  rm -f "$pidfile" "$pidfile.tmp"
  if [ -n "${jaeger_dir:-}" ]; then rm -rf "$jaeger_dir"; fi
  exit "$status"
}
trap cleanup EXIT

# Jaeger all-in-one for TestTracingWithJaeger, built from its own module
# (.ci/tools/jaeger: the main module's graph stays lean). The first build
# takes long: 118 s to download its modules and 935 s to compile on the
# shared 2-core machine (a 121 MB binary); later ones come from Go's
# module and build caches in seconds.
jaeger_dir=$(mktemp -d "${TMPDIR:-/tmp}/llmprobe-e2e-jaeger.XXXXXX")
(cd .ci/tools/jaeger && go build -o "$jaeger_dir/jaeger" github.com/jaegertracing/jaeger/cmd/jaeger)
export LLMPROBE_E2E_JAEGER="$jaeger_dir/jaeger"

go test -tags e2e -count=1 -timeout 10m -v ./internal/e2e/ "$@"
