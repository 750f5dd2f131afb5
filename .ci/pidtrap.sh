# Sourced by .ci/e2e.sh and .ci/e2e-live.sh: the PID file the e2e tests keep
# ($LLMPROBE_E2E_PIDFILE: "<pid> <binary>" per running process) and the EXIT
# trap that stops, by PID, what a test left running when its cleanups did
# not run (go test's -timeout panic, a kill). A PID is signalled only while
# it still runs that binary, and with its process group (the tests make each
# process a group leader).
#
# Usage: pidtrap_start LABEL [EXTRA_CLEANUP_FUNCTION]

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
# its binary (and to its process group); prints how many there were.
signal_left() {
  local n=0 pid bin
  while read -r pid bin; do
    [ -n "${pid:-}" ] || continue
    if started "$pid" "$bin"; then
      echo "$pidtrap_label: $1 to leftover $bin (pid $pid)" >&2
      kill "-$1" -- "-$pid" 2>/dev/null || kill "-$1" "$pid" 2>/dev/null || true
      n=$((n + 1))
    fi
  done <"$pidfile"
  echo "$n"
}

pidtrap_cleanup() {
  local status=$? i
  if [ -s "$pidfile" ] && [ "$(signal_left TERM)" != 0 ]; then
    for i in 1 2 3 4 5 6 7 8 9 10; do
      sleep 0.5
      if [ "$(signal_left 0 2>/dev/null)" = 0 ]; then break; fi
    done
    signal_left KILL >/dev/null
  fi
  rm -f "$pidfile" "$pidfile.tmp"
  if [ -n "$pidtrap_extra" ]; then "$pidtrap_extra"; fi
  exit "$status"
}

# pidtrap_start LABEL [EXTRA]: makes the PID file, exports it and sets the
# EXIT trap; EXTRA, a function, runs after the processes are stopped.
pidtrap_start() {
  pidtrap_label=$1
  pidtrap_extra=${2:-}
  pidfile=$(mktemp "${TMPDIR:-/tmp}/llmprobe-$1-pids.XXXXXX")
  export LLMPROBE_E2E_PIDFILE="$pidfile"
  trap pidtrap_cleanup EXIT
}
