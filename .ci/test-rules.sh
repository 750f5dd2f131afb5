#!/usr/bin/env bash
# `make test-rules`: promtool checks and unit tests of the Prometheus rules in
# rules/ (the shared files rules/*.yml and the opt-in ones rules/optional/*.yml,
# tested by rules/tests/*.yml). Installs promtool (Debian's prometheus package)
# when missing.
set -euo pipefail
cd "$(dirname "$0")/.."

bash .ci/install-prometheus.sh
promtool check rules rules/*.yml rules/optional/*.yml
promtool test rules rules/tests/*.yml
