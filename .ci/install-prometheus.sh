#!/usr/bin/env bash
# Installs Prometheus and promtool for llmprobe's rule tests and end-to-end
# test: Debian's `prometheus` package, only when one of the two binaries is
# missing. Idempotent: a second run changes nothing.
#
# The tests run the binaries directly, never the packaged service. When this
# script installs the package and the install started the service (systemd
# or sysvinit), the script stops and disables it again (apt-install.sh); a
# Prometheus that was installed and running before is left alone.
set -euo pipefail
. "$(dirname "$0")/apt-install.sh"

if have prometheus && have promtool; then
  echo "install-prometheus: found $(prometheus --version 2>&1 | head -n1)"
  exit 0
fi

apt_install install-prometheus prometheus "prometheus/promtool missing and no apt-get: install Prometheus >= 2.42 yourself"
echo "install-prometheus: installed $(prometheus --version 2>&1 | head -n1)"
