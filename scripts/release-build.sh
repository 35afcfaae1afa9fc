#!/usr/bin/env bash
# Checks what a release and `go install` need, without publishing anything
# (docs/install.md):
#   - the six release binaries of .goreleaser.yaml build (CGO off, static),
#     each for its own GOOS/GOARCH, with the version stamped as GoReleaser
#     stamps it;
#   - `go install` of this module works from an empty module cache, every
#     dependency fetched from the module proxy, and the installed binary
#     reports the module version and commit from its build info.
# Usage: scripts/release-build.sh [--slice K/N] [OUTDIR]
# Alone it builds all six. .ci/run passes --slice K/3 with the full tier's
# slice (the commit count): that landing builds the targets whose index
# (0-5) is K-1 modulo N, and always the host's, so every target is built at
# least once every three landings. A cross build compiles the standard
# library and every dependency for its target: six took about 7 of .ci/run's
# 39 minutes on a quiet 2-core machine (5 Dec).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/go/bin"
k=1 n=1
if [ "${1:-}" = --slice ]; then
  [[ "${2:-}" =~ ^([1-9][0-9]*)/([1-9][0-9]*)$ ]] && (( BASH_REMATCH[1] <= BASH_REMATCH[2] )) || {
    echo "release-build.sh: --slice takes K/N with 1 ≤ K ≤ N, e.g. --slice 2/3" >&2; exit 2; }
  k=${BASH_REMATCH[1]} n=${BASH_REMATCH[2]}
  shift 2
fi
out=${1:-$(mktemp -d)}
mkdir -p "$out"

# The release targets: GOOS/GOARCH, as .goreleaser.yaml's goos × goarch
# (TestReleaseTargets checks that they agree).
targets=(linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64 windows/arm64)
host_target="$(go env GOOS)/$(go env GOARCH)"
for i in "${!targets[@]}"; do
  t=${targets[$i]}
  if (( i % n != k - 1 )) && [ "$t" != "$host_target" ]; then
    echo "release-build: $t: another slice's (--slice $(( i % n + 1 ))/$n)"
    continue
  fi
  goos=${t%/*} goarch=${t#*/}
  bin="$out/rmqtorture-$goos-$goarch"
  [ "$goos" = windows ] && bin+=.exe
  CGO_ENABLED=0 GOOS=$goos GOARCH=$goarch go build -trimpath \
    -ldflags "-s -w -X github.com/rmqtorture/rmqtorture/cmd.Version=v0.0.0-release-check" -o "$bin" .
  echo "release-build: $t -> $(basename "$bin") ($(du -h "$bin" | cut -f1))"
done
# The host's own binary runs and says the version it was stamped with.
host="$out/rmqtorture-$(go env GOOS)-$(go env GOARCH)"
"$host" version | head -1 | grep -qx "rmqtorture v0.0.0-release-check" || {
  echo "release-build: $host does not report the stamped version" >&2; exit 1; }

# go install from an empty module cache.
cache=$(mktemp -d) gobin=$(mktemp -d)
trap 'chmod -R u+w "$cache"; rm -rf "$cache" "$gobin"' EXIT
GOMODCACHE=$cache GOBIN=$gobin GOFLAGS=-modcacherw go install .
"$gobin/rmqtorture" version
echo "release-build: go install from an empty module cache: ok"
