#!/usr/bin/env bash
# CI gate on `llmprobe compare` (docs/compare.md): exit 0 pass, 1 fail (a
# metric regressed), 3 inconclusive (evidence missing), 2 bad usage. Fails
# the pipeline on fail, and on inconclusive unless ALLOW_INCONCLUSIVE=1.
# BASELINE_URL and CANDIDATE_URL are the two deployments.
set -uo pipefail
llmprobe compare \
  --baseline "${BASELINE_URL:?}" --candidate "${CANDIDATE_URL:?}" \
  --rates 4 --duration 60s --rounds 4 \
  --max-regression ttft_p99=10%,tpot_p99=10%,goodput=5% \
  --out compare-out \
  --goodput ttft:800 tpot:50
rc=$?
case $rc in
  0) echo "canary: pass" ;;
  1) echo "canary: fail (see compare-out/*/analysis.md)"; exit 1 ;;
  3) echo "canary: inconclusive (see compare-out/*/analysis.md)"
     [ "${ALLOW_INCONCLUSIVE:-0}" = 1 ] || exit 3 ;;
  *) echo "canary: llmprobe compare exited $rc"; exit "$rc" ;;
esac
