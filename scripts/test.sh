#!/usr/bin/env bash
# The project's test command (README: Testing). Builds the broker image when
# missing, then runs every package's tests with the race detector: the
# packages other than cmd in one go test process, and cmd's tests (most of
# them integration tests, each against its own labelled broker container
# killed through the Docker API) split across RMQT_TEST_SHARDS go test
# processes that run at the same time (default 2), so the suite fits a CI
# budget on a 2-core machine. Each shard's output is printed whole when it
# ends; the script fails when any process failed.
#
# Usage: scripts/test.sh [-short]    (-short: only what needs no Docker)
# Env:   RMQT_TEST_SHARDS  number of cmd shards (default 2)
#        RMQT_TEST_VERBOSE set: go test -v in the cmd shards (each test's
#                          time, for scripts/test-weights.txt)
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/go/bin"

if [ "${1:-}" = "-short" ]; then
  exec go test -short -count=1 ./...
fi

scripts/build-broker-image.sh all   # RabbitMQ 3.10, 4.0 and 4.3: the version tests run each

shards=${RMQT_TEST_SHARDS:-2}
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT

# Every top-level test of cmd, dealt to the shards longest first, each to
# the shard with the least work so far, by the seconds measured for it in
# scripts/test-weights.txt (a test not listed counts 20 s): the suite ends
# when its longest shard does.
mapfile -t tests < <(go test -list '.*' ./cmd | grep -E '^(Test|Fuzz|Example)')
declare -A weight cluster
while read -r name secs tag; do
  [[ -n "$name" && "$name" != \#* ]] || continue
  weight[$name]=$secs
  [ "$tag" = cluster ] && cluster[$name]=1
done < scripts/test-weights.txt
mapfile -t tests < <(for t in "${tests[@]}"; do echo "${weight[$t]:-20} $t"; done | sort -k1,1nr -k2 | awk '{print $2}')
declare -a load shardof
for ((i = 0; i < shards; i++)); do load[i]=0; done
# The cluster tests first, all on shard 0; then the rest, longest first,
# each to the least loaded shard.
for t in "${tests[@]}"; do
  [ -n "${cluster[$t]:-}" ] || continue
  shardof+=("0:$t")
  load[0]=$(( load[0] + ${weight[$t]:-20} ))
done
for t in "${tests[@]}"; do
  [ -z "${cluster[$t]:-}" ] || continue
  best=0
  for ((i = 1; i < shards; i++)); do (( load[i] < load[best] )) && best=$i; done
  shardof+=("$best:$t")
  load[best]=$(( load[best] + ${weight[$t]:-20} ))
done
if [ -n "${RMQT_TEST_DEAL_ONLY:-}" ]; then  # print the dealing and stop
  for ((i = 0; i < shards; i++)); do echo "cmd-$i ${load[i]} s"; done
  printf '%s\n' "${shardof[@]}"
  exit 0
fi
pids=()
for ((i = 0; i < shards; i++)); do
  names=()
  for e in "${shardof[@]}"; do [ "${e%%:*}" = "$i" ] && names+=("${e#*:}"); done
  [ ${#names[@]} -gt 0 ] || continue
  echo "== cmd-$i: ${#names[@]} tests, about ${load[i]} s by scripts/test-weights.txt"
  run=$(IFS='|'; echo "^(${names[*]})\$")
  go test -race -count=1 ${RMQT_TEST_VERBOSE:+-v} -timeout 60m -run "$run" ./cmd >"$logs/cmd-$i.log" 2>&1 &
  pids+=("$!:cmd-$i")
done

# The broker package's own cluster tests (a 3-node cluster each) run after
# the shards, so that no two clusters boot at once beside the cmd shard
# that runs the cmd cluster tests.
brokerClusterTests='^(TestCluster|TestAttachedClusterNotFormedNamesTheMissingNode)$'
status=0
# shellcheck disable=SC2046 # one word per package
go test -race -count=1 -timeout 30m -skip "$brokerClusterTests" $(go list ./... | grep -v '/cmd$') || status=1

for entry in "${pids[@]}"; do
  pid=${entry%%:*} name=${entry#*:}
  if ! wait "$pid"; then status=1; fi
  echo "== $name (${#tests[@]} cmd tests in $shards shards)"
  cat "$logs/$name.log"
done
echo "== broker cluster tests"
go test -race -count=1 -timeout 20m -run "$brokerClusterTests" ./broker || status=1
exit $status
