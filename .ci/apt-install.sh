#!/usr/bin/env bash
# Sourced by install-prometheus.sh and install-alertmanager.sh.
#
# apt_install NAME PACKAGE MISSING installs Debian's PACKAGE with apt-get (as
# root or through sudo; NAME prefixes the messages, MISSING is the error when
# there is no apt-get), then stops and disables the service of the same name
# that the install may have started (systemd or sysvinit): the tests run the
# binaries themselves, never the packaged service.

have() { command -v "$1" >/dev/null 2>&1; }

apt_install() {
  local name=$1 pkg=$2 missing=$3 sudo=""
  if ! have apt-get; then
    echo "$name: $missing" >&2
    exit 1
  fi
  if [ "$(id -u)" != 0 ]; then
    if ! have sudo; then
      echo "$name: need root or sudo to apt-get install $pkg" >&2
      exit 1
    fi
    sudo="sudo"
  fi

  export DEBIAN_FRONTEND=noninteractive
  echo "$name: apt-get install $pkg"
  if ! $sudo apt-get install -y --no-install-recommends "$pkg"; then
    # A fresh machine may have no package lists yet.
    $sudo apt-get update
    $sudo apt-get install -y --no-install-recommends "$pkg"
  fi

  # Stop the service the package may have started; keep it from starting at boot.
  if [ -d /run/systemd/system ] && have systemctl; then
    $sudo systemctl stop "$pkg.service" >/dev/null 2>&1 || true
    $sudo systemctl disable "$pkg.service" >/dev/null 2>&1 || true
  elif [ -x "/etc/init.d/$pkg" ]; then
    $sudo "/etc/init.d/$pkg" stop >/dev/null 2>&1 || true
    if have update-rc.d; then $sudo update-rc.d "$pkg" disable >/dev/null 2>&1 || true; fi
  fi
}
