#!/usr/bin/env bash
# Installs Alertmanager for llmprobe's end-to-end test (internal/e2e,
# alertmanager_test.go): Debian's `prometheus-alertmanager` package, only
# when neither prometheus-alertmanager nor alertmanager is in PATH.
# Idempotent. As install-prometheus.sh, it stops and disables the service
# the package install may have started (apt-install.sh); the test runs the
# binary itself.
set -euo pipefail
. "$(dirname "$0")/apt-install.sh"

if have prometheus-alertmanager || have alertmanager; then
  echo "install-alertmanager: found $( (prometheus-alertmanager --version 2>&1 || alertmanager --version 2>&1) | head -n1)"
  exit 0
fi

apt_install install-alertmanager prometheus-alertmanager \
  "alertmanager missing and no apt-get: install Alertmanager >= 0.22 yourself"
echo "install-alertmanager: installed $(prometheus-alertmanager --version 2>&1 | head -n1)"
