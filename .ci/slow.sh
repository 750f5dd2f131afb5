#!/usr/bin/env bash
# Runs the slow tests, those that call testutil.Slow(t) first (a sweep to
# its knee, Monte Carlo error rates, runs in a row on one server): the
# README's `go test ./...` skips them to stay within minutes on 2 cores.
# Built with -tags slow, without the race detector (their timing bounds
# hold only there); .ci/run's race step runs them too. Extra arguments go
# to go test (e.g. -count=3).
set -euo pipefail
cd "$(dirname "$0")/.."
names=()
pkgs=()
while IFS= read -r f; do
  found=$(awk '
    /^func Test[A-Za-z0-9_]*\(/ { name = $2; sub(/\(.*/, "", name) }
    /^\ttestutil\.Slow\(t\)$/ { if (name != "") print name; name = "" }
  ' "$f")
  if [ -n "$found" ]; then
    while IFS= read -r n; do names+=("$n"); done <<<"$found"
    pkgs+=("./$(dirname "$f")")
  fi
done < <(git ls-files '*_test.go')
if [ "${#names[@]}" -eq 0 ]; then echo "no slow tests found"; exit 1; fi
# Every call must be one this script found (first in a func TestXxx(t
# *testing.T), a tab in): a call it misses would never run without -race.
calls=$(git ls-files '*_test.go' | xargs grep -c 'testutil\.Slow(' | awk -F: '{s += $2} END {print s}')
if [ "$calls" -ne "${#names[@]}" ]; then
  echo "testutil.Slow is called $calls times, but ${#names[@]} slow tests were found: call it as the first line of a func TestXxx(t *testing.T)"
  exit 1
fi
mapfile -t pkgs < <(printf '%s\n' "${pkgs[@]}" | sort -u)
regex="^($(IFS='|'; echo "${names[*]}"))\$"
echo "slow tests (${#names[@]}): ${names[*]}"
go test -tags slow -run "$regex" "$@" "${pkgs[@]}"
