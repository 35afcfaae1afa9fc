#!/usr/bin/env bash
# Checks the GitHub Actions workflows against GitHub's schema (keys, types,
# expressions, contexts, known actions' inputs) with actionlint, fetched from
# the Go module proxy at a pinned version. actionlint also runs shellcheck on
# the run: scripts when shellcheck is on PATH, and skips that when not.
#
# Then the Action (action.yml) as another repository uses it: a scratch
# repository holding the README's example (examples/action-workflow.yml) as
# is, and the same workflow with `uses: ./` beside a copy of action.yml, so
# that actionlint also checks the example's inputs against the Action's.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/go/bin"
actionlint="go run github.com/rhysd/actionlint/cmd/actionlint@v1.7.12"
$actionlint .github/workflows/*.yml
echo "lint-workflows: $(ls .github/workflows/*.yml | wc -l) workflow(s) ok"

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
mkdir -p "$scratch/.github/workflows"
cp action.yml "$scratch/"
cp examples/action-workflow.yml "$scratch/.github/workflows/example.yml"
sed 's|uses: rmqtorture/rmqtorture@v1|uses: ./|' examples/action-workflow.yml >"$scratch/.github/workflows/local.yml"
grep -q 'uses: ./$' "$scratch/.github/workflows/local.yml"
git -C "$scratch" init -q
(cd "$scratch" && $actionlint -no-color)
echo "lint-workflows: the Action's example ok in a scratch repository"
