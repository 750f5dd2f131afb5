#!/usr/bin/env bash
# Runs every fuzz target of the module (func FuzzXxx in any package) for
# FUZZTIME each (default 5s), one after the other. CI runs it with the
# default; the long runs of docs/reliability.md use e.g. FUZZTIME=10m.
# A finding fails the script; its input is written under the package's
# testdata/fuzz/FuzzXxx/ (commit it with the fix).
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime="${FUZZTIME:-5s}"
# Lines "FuzzXxx" follow their package's test list; "ok <pkg> ..." ends it.
targets=()
pending=()
while read -r first second _; do
  case "$first" in
    Fuzz*) pending+=("$first") ;;
    ok)
      for f in "${pending[@]}"; do targets+=("$second $f"); done
      pending=()
      ;;
  esac
done < <(go test -list '^Fuzz' ./...)
if [ "${#targets[@]}" -eq 0 ]; then echo "no fuzz targets found"; exit 1; fi
for t in "${targets[@]}"; do
  read -r pkg fn <<<"$t"
  echo "--- $fn ($pkg) for $fuzztime"
  go test -run '^$' -fuzz "^${fn}\$" -fuzztime "$fuzztime" "$pkg"
done
echo "fuzz OK: ${#targets[@]} targets"
