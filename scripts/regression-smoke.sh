#!/usr/bin/env bash
# A short run of the regression flow that .github/workflows/rmqtorture-regression.yml
# runs in full: build rmqtorture, run the `baseline` scenario with 500 orders
# per mode against a real broker container (about 30 s here), and compare the
# result with the committed baselines/ci/baseline-500.result.json. .ci/run
# calls it after the tests so the build → run → compare path is exercised on
# every CI run. Needs the broker image (scripts/build-broker-image.sh) and Docker.
#
# Usage: scripts/regression-smoke.sh
# Exit:  0 no regression; otherwise the failing run's or compare's exit code.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/go/bin"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/rmqtorture" .
"$tmp/rmqtorture" run baseline --messages 500 --out "$tmp/out" -q
results=("$tmp"/out/baseline-*/result.json)

# Thresholds that only catch real breakage. This machine shares 2 CPUs with
# other jobs, and a 500-order burst is mostly warm-up: fire-and-forget's publish
# rate before the fault measured 12,101 msg/s in this short run and 59,360 in
# a full one, and 3,984 during a busy 4,000-order run (15x apart), so
# --max-throughput-drop 100 switches the rate checks off (a rate cannot fall
# below 0). --max-p99-rise 10000 fails only when confirms take 100x the
# baseline's p99 (44.1 ms confirm-each, 127 ms window → seconds): stuck
# confirms, not a slow machine. What fails regardless: a confirmed message
# lost, a mode whose verdict is not pass, a mode missing from the result, a
# result.json this binary cannot compare.
"$tmp/rmqtorture" compare --max-throughput-drop 100 --max-p99-rise 10000 \
  baselines/ci/baseline-500.result.json "${results[0]}"
