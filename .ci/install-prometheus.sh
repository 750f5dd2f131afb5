#!/usr/bin/env bash
# Installs Prometheus and promtool for llmprobe's rule tests and end-to-end
# test: Debian's `prometheus` package, only when one of the two binaries is
# missing. Idempotent: a second run changes nothing.
#
# The tests run the binaries directly, never the packaged service. When this
# script installs the package and the install started the service (systemd
# or sysvinit), the script stops and disables it again; a Prometheus that was
# installed and running before is left alone.
set -euo pipefail

have() { command -v "$1" >/dev/null 2>&1; }

if have prometheus && have promtool; then
  echo "install-prometheus: found $(prometheus --version 2>&1 | head -n1)"
  exit 0
fi

if ! have apt-get; then
  echo "install-prometheus: prometheus/promtool missing and no apt-get: install Prometheus >= 2.42 yourself" >&2
  exit 1
fi

sudo=""
if [ "$(id -u)" != 0 ]; then
  if ! have sudo; then
    echo "install-prometheus: need root or sudo to apt-get install prometheus" >&2
    exit 1
  fi
  sudo="sudo"
fi

export DEBIAN_FRONTEND=noninteractive
echo "install-prometheus: apt-get install prometheus"
if ! $sudo apt-get install -y --no-install-recommends prometheus; then
  # A fresh machine may have no package lists yet.
  $sudo apt-get update
  $sudo apt-get install -y --no-install-recommends prometheus
fi

# Stop the service the package may have started; keep it from starting at boot.
if [ -d /run/systemd/system ] && have systemctl; then
  $sudo systemctl stop prometheus.service >/dev/null 2>&1 || true
  $sudo systemctl disable prometheus.service >/dev/null 2>&1 || true
elif [ -x /etc/init.d/prometheus ]; then
  $sudo /etc/init.d/prometheus stop >/dev/null 2>&1 || true
  if have update-rc.d; then $sudo update-rc.d prometheus disable >/dev/null 2>&1 || true; fi
fi

echo "install-prometheus: installed $(prometheus --version 2>&1 | head -n1)"
