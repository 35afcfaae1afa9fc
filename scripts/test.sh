#!/usr/bin/env bash
# The project's test command (docs/testing.md). Two tiers, one command each:
#
#   scripts/test.sh            the gate (what .ci/run runs, ≤ 20 min on
#                              2 cores): every package's unit tests, the
#                              broker packages' single-broker integration
#                              tests, and the cmd tests whose line in
#                              scripts/test-weights.txt says "gate": together
#                              they cover every fault action, ledger class,
#                              provisioning path and output against a real
#                              broker (docs/testing.md, "What the gate covers").
#   scripts/test.sh --full     every test: the gate, the "full" tier (the
#                              soak, 5-node partitions, the longer forms),
#                              broker/docker's cluster tests, and the
#                              publisher benchmark's long form.
#   scripts/test.sh --slice K/N   the full tier's tests that are not in the
#                              gate, dealt by weight into N slices, slice K
#                              (1-based): .ci/run runs one after the gate,
#                              chosen by the commit count.
#   scripts/test.sh --gate     prints the gate's recorded weight per shard and
#                              fails when a shard passes GATE_BUDGET seconds or
#                              a cmd test has no line in the weights file.
#   scripts/test.sh -short     only what needs no Docker (~20 s).
#
# Tests run with the race detector; cmd's tests (most of them integration
# tests, each against its own labelled broker container killed through the
# Docker API) are dealt to RMQT_TEST_SHARDS go test processes that run at
# once (default 2), longest first, each to the shard with the least recorded
# work; the tests that form a cluster all go to shard 0, one after another,
# so two clusters never boot at once on two cores. Each shard's output is
# printed whole when it ends; the script fails when any process failed.
#
# Env:   RMQT_TEST_SHARDS  number of cmd shards (default 2)
#        RMQT_TEST_VERBOSE set: go test -v (each test's time, for
#                          scripts/test-weights.txt)
#        RMQT_TEST_DEAL_ONLY set: print the dealing and stop
#        GATE_BUDGET       seconds of recorded cmd test time a gate shard may
#                          hold (default 900: 15 min, leaving 5 of the 20 for
#                          the build and the other packages)
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/go/bin"

what=gate slice=
case "${1:-}" in
  -short) exec go test -short -count=1 ./... ;;
  --full) what=full ;;
  --gate) what=budget ;;
  --slice)
    what=slice slice=${2:-}
    [[ "$slice" =~ ^([1-9][0-9]*)/([1-9][0-9]*)$ ]] && (( BASH_REMATCH[1] <= BASH_REMATCH[2] )) || {
      echo "test.sh: --slice takes K/N with 1 ≤ K ≤ N, e.g. --slice 2/3" >&2; exit 2; }
    ;;
  "") ;;
  *) echo "test.sh: unknown option $1 (use -short, --full, --gate or --slice K/N)" >&2; exit 2 ;;
esac

shards=${RMQT_TEST_SHARDS:-2}
budget=${GATE_BUDGET:-900}

# The weights file: "PKG/Name seconds tier [cluster]", PKG/ omitted for cmd.
declare -A weight tier cluster
while read -r name secs t tag; do
  [[ -n "$name" && "$name" != \#* ]] || continue
  [[ "$name" == */* ]] || name=cmd/$name
  weight[$name]=$secs tier[$name]=$t
  [ "$tag" = cluster ] && cluster[$name]=1
done < scripts/test-weights.txt

# Listed from the race detector's build, the one the shards run: listing
# from a plain build would compile cmd's tests a second time.
mapfile -t cmdtests < <(go test -race -list '.*' ./cmd | grep -E '^(Test|Fuzz|Example)' | sed 's|^|cmd/|')
unlisted=()
for t in "${cmdtests[@]}"; do [ -n "${tier[$t]:-}" ] || unlisted+=("$t"); done

# selected: the cmd tests this run deals to shards; others: tests of other
# packages the weights file lists, run one after another after the shards.
selected=() others=()
case $what in
  gate | budget) for t in "${cmdtests[@]}"; do [ "${tier[$t]:-gate}" = gate ] && selected+=("$t"); done ;;
  full) selected=("${cmdtests[@]}") ;;
  slice)
    # Every full-tier test outside the gate, longest first, each to the
    # lightest slice: consecutive K take disjoint, even slices.
    k=${slice%/*} n=${slice#*/}
    declare -a sload
    for ((i = 1; i <= n; i++)); do sload[i]=0; done
    mapfile -t fulls < <(for t in "${!tier[@]}"; do [ "${tier[$t]}" = full ] && echo "${weight[$t]} $t"; done | sort -k1,1nr -k2 | awk '{print $2}')
    for t in "${fulls[@]}"; do
      best=1
      for ((i = 2; i <= n; i++)); do (( sload[i] < sload[best] )) && best=$i; done
      sload[best]=$(( sload[best] + weight[$t] ))
      if [ "$best" = "$k" ]; then
        if [[ "$t" == cmd/* ]]; then selected+=("$t"); else others+=("$t"); fi
      fi
    done
    echo "== slice $slice of the full tier: ${#selected[@]} cmd tests and ${#others[@]} others, about ${sload[k]} s by scripts/test-weights.txt:"
    printf '   %s\n' "${selected[@]#cmd/}" "${others[@]}"
    ;;
esac
[ "$what" = full ] && for t in "${!tier[@]}"; do [[ "$t" == cmd/* ]] || others+=("$t"); done

# Deal the selected cmd tests: cluster tests first, all on shard 0; then the
# rest, longest first, each to the least loaded shard. The other packages'
# listed tests (broker/docker's cluster tests) run on shard 0 too, after its
# cmd tests, so they count there.
declare -a load shardof
for ((i = 0; i < shards; i++)); do load[i]=0; done
for t in "${others[@]}"; do load[0]=$(( load[0] + ${weight[$t]:-20} )); done
mapfile -t sorted < <(for t in "${selected[@]}"; do echo "${weight[$t]:-20} $t"; done | sort -k1,1nr -k2 | awk '{print $2}')
for t in "${sorted[@]}"; do
  [ -n "${cluster[$t]:-}" ] || continue
  shardof+=("0:$t")
  load[0]=$(( load[0] + ${weight[$t]:-20} ))
done
for t in "${sorted[@]}"; do
  [ -z "${cluster[$t]:-}" ] || continue
  best=0
  for ((i = 1; i < shards; i++)); do (( load[i] < load[best] )) && best=$i; done
  shardof+=("$best:$t")
  load[best]=$(( load[best] + ${weight[$t]:-20} ))
done

if [ "$what" = budget ]; then
  total=0 over=0
  for ((i = 0; i < shards; i++)); do
    total=$(( total + load[i] ))
    (( load[i] <= budget )) || over=1
  done
  echo "gate: ${#selected[@]} of ${#cmdtests[@]} cmd tests, ${total} s recorded in all;$(for ((i = 0; i < shards; i++)); do printf ' cmd-%d %d s' "$i" "${load[i]}"; done) (budget ${budget} s a shard)"
  if [ ${#unlisted[@]} -gt 0 ]; then
    echo "test.sh: cmd tests with no line in scripts/test-weights.txt (add each with its measured seconds and its tier): ${unlisted[*]#cmd/}" >&2
    exit 1
  fi
  if [ "$over" = 1 ]; then
    echo "test.sh: the gate's recorded weight passes its budget of ${budget} s a shard: move tests to the full tier, make them smaller, or share their brokers" >&2
    exit 1
  fi
  exit 0
fi
if [ -n "${RMQT_TEST_DEAL_ONLY:-}" ]; then
  for ((i = 0; i < shards; i++)); do echo "cmd-$i ${load[i]} s"; done
  printf '%s\n' "${shardof[@]}" "${others[@]}"
  exit 0
fi

scripts/build-broker-image.sh all   # RabbitMQ 3.10, 4.0 and 4.3: the version tests run each

logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
# One build of cmd's test binary (with the race detector) for all shards:
# each shard's own `go test` would compile the same package and its
# dependencies again, at the same time, on the same two cores (go's build
# cache is filled only when a compile ends). The other packages' go test
# below then finds the shared dependencies built.
echo "== building cmd's test binary (-race)"
go test -race -c -o "$logs/cmd.test" ./cmd
# shard I NAME...: cmd's tests NAME... in cmd/ (as go test runs them: the
# tests read ../scenarios.yaml); shard 0 then runs the other packages'
# listed tests, one after another, so that no two clusters boot at once.
shard() {
  local i=$1 s=0
  shift
  if [ $# -gt 0 ]; then
    (cd cmd && exec "$logs/cmd.test" -test.count=1 -test.paniconexit0 ${RMQT_TEST_VERBOSE:+-test.v} -test.timeout 60m -test.run "^($(IFS='|'; echo "$*"))\$") || s=1
  fi
  if [ "$i" = 0 ]; then
    for t in "${others[@]}"; do
      echo "== ${t%/*} ${t##*/}"
      go test -race -count=1 ${RMQT_TEST_VERBOSE:+-v} -timeout 20m -run "^${t##*/}\$" "./${t%/*}" || s=1
    done
  fi
  return $s
}
pids=()
for ((i = 0; i < shards; i++)); do
  names=()
  for e in "${shardof[@]}"; do [ "${e%%:*}" = "$i" ] && names+=("${e#*:cmd/}"); done
  then=
  [ "$i" != 0 ] || [ ${#others[@]} -eq 0 ] || then=" and then ${others[*]}"
  [ ${#names[@]} -gt 0 ] || [ -n "$then" ] || continue
  echo "== cmd-$i: ${#names[@]} tests$then, about ${load[i]} s by scripts/test-weights.txt"
  shard "$i" "${names[@]}" >"$logs/cmd-$i.log" 2>&1 &
  pids+=("$!:cmd-$i")
done

status=0
# The other packages' tests, but for those the weights file lists (the
# broker/docker package's cluster tests, which shard 0 runs after its cmd
# tests so that no two clusters boot at once), run beside the shards in one
# go test process; a slice runs none of them.
#
# The scale tests below check sizes and precision over millions of values in
# one goroutine: the race detector finds nothing there and made them take
# 135, 79, 42 and 38 s beside the shards (a CI run with CPU load beside it),
# so they run without it, in seconds.
scale=(TestHistoryBytesPerMessage TestLatencyPrecisionAtTenMillion TestAppendOrderBodyMatchesMarshal TestBigFilesRefusedUnread)
if [ "$what" != slice ]; then
  skip=("${scale[@]}")
  for t in "${!tier[@]}"; do [[ "$t" == cmd/* ]] || skip+=("${t##*/}"); done
  skipre=$(IFS='|'; echo "^(${skip[*]})\$")
  # shellcheck disable=SC2046 # one word per package
  go test -race -count=1 ${RMQT_TEST_VERBOSE:+-v} -timeout 30m -skip "$skipre" $(go list ./... | grep -v '/cmd$') || status=1
  echo "== the scale tests, without the race detector: ${scale[*]}"
  go test -count=1 ${RMQT_TEST_VERBOSE:+-v} -timeout 10m -run "^($(IFS='|'; echo "${scale[*]}"))\$" ./metrics ./broker/amqp ./scenario || status=1
fi

for entry in "${pids[@]}"; do
  pid=${entry%%:*} name=${entry#*:}
  if ! wait "$pid"; then status=1; fi
  echo "== $name (${#selected[@]} cmd tests in $shards shards)"
  cat "$logs/$name.log"
done
if [ "$what" = full ]; then
  echo "== the publisher benchmark's long form (RMQT_BENCH_LONG=1, without -race)"
  RMQT_BENCH_LONG=1 go test -count=1 -timeout 30m -run '^TestPublisherVersusBareClient$' -v ./broker/amqp || status=1
fi
exit $status
