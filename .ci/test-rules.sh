#!/usr/bin/env bash
# `make test-rules`: promtool checks and unit tests of the Prometheus rules in
# rules/ (rules/tests/*.yml). Installs promtool (Debian's prometheus package)
# when missing.
set -euo pipefail
cd "$(dirname "$0")/.."

bash .ci/install-prometheus.sh
promtool check rules rules/*.yml
promtool test rules rules/tests/*.yml
