#!/usr/bin/env bash
# `make browser`: the tests that render llmprobe's landing page in headless
# Chromium and read it from the DOM (build tag browser, internal/web).
# Installs Debian's chromium package when missing. Without chromium the tests
# skip; this script makes sure they run.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v chromium >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium
  else
    sudo apt-get update -qq
    sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium
  fi
fi
chromium --version

go test -tags browser -count=1 -run 'InChromium' -v ./internal/web/ "$@"
