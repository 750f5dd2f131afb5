#!/usr/bin/env bash
# Installs Alertmanager for llmprobe's end-to-end test (internal/e2e,
# alertmanager_test.go): Debian's `prometheus-alertmanager` package, only
# when neither prometheus-alertmanager nor alertmanager is in PATH.
# Idempotent. As install-prometheus.sh, it stops and disables the service
# the package install may have started; the test runs the binary itself.
set -euo pipefail

have() { command -v "$1" >/dev/null 2>&1; }

if have prometheus-alertmanager || have alertmanager; then
  echo "install-alertmanager: found $( (prometheus-alertmanager --version 2>&1 || alertmanager --version 2>&1) | head -n1)"
  exit 0
fi

if ! have apt-get; then
  echo "install-alertmanager: alertmanager missing and no apt-get: install Alertmanager >= 0.22 yourself" >&2
  exit 1
fi

sudo=""
if [ "$(id -u)" != 0 ]; then
  if ! have sudo; then
    echo "install-alertmanager: need root or sudo to apt-get install prometheus-alertmanager" >&2
    exit 1
  fi
  sudo="sudo"
fi

export DEBIAN_FRONTEND=noninteractive
echo "install-alertmanager: apt-get install prometheus-alertmanager"
if ! $sudo apt-get install -y --no-install-recommends prometheus-alertmanager; then
  $sudo apt-get update
  $sudo apt-get install -y --no-install-recommends prometheus-alertmanager
fi

if [ -d /run/systemd/system ] && have systemctl; then
  $sudo systemctl stop prometheus-alertmanager.service >/dev/null 2>&1 || true
  $sudo systemctl disable prometheus-alertmanager.service >/dev/null 2>&1 || true
elif [ -x /etc/init.d/prometheus-alertmanager ]; then
  $sudo /etc/init.d/prometheus-alertmanager stop >/dev/null 2>&1 || true
  if have update-rc.d; then $sudo update-rc.d prometheus-alertmanager disable >/dev/null 2>&1 || true; fi
fi

echo "install-alertmanager: installed $(prometheus-alertmanager --version 2>&1 | head -n1)"
