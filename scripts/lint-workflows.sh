#!/usr/bin/env bash
# Checks the GitHub Actions workflows against GitHub's schema (keys, types,
# expressions, contexts, known actions' inputs) with actionlint, fetched from
# the Go module proxy at a pinned version. actionlint also runs shellcheck on
# the run: scripts when shellcheck is on PATH, and skips that when not.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/usr/local/go/bin"
go run github.com/rhysd/actionlint/cmd/actionlint@v1.7.12 .github/workflows/*.yml
echo "lint-workflows: $(ls .github/workflows/*.yml | wc -l) workflow(s) ok"
