#!/usr/bin/env bash
# CI of @jetgate/client: install exactly what package-lock.json pins, check
# that the generated code (src/gen) and the compiled library (dist) are what
# the sources give, then run the tests against a real jetgate built from this
# repository; test/install.test.mjs installs the package as the README says
# (a path with --install-links, npm pack's tarball) into empty folders and
# runs the quickstart with each. Needs node 20+, npm (and its registry) and
# go; exits non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")"

stale() { # stale DIR: is DIR different from what is committed?
  ! git diff --exit-code -- "$1" >/dev/null || [ -n "$(git status --porcelain -- "$1")" ]
}

echo "== npm ci"
npm ci --no-audit --no-fund

echo "== generated code is fresh (protoc-gen-es through buf)"
./scripts/generate
if stale src/gen; then
  git status --short -- src/gen; echo "src/gen is stale: run scripts/generate and commit the result"; exit 1
fi

echo "== typecheck and build; dist is fresh"
npm run build
if stale dist; then
  git status --short -- dist; echo "dist is stale: run npm run build and commit the result"; exit 1
fi

echo "== tests against a real jetgate"
bin_dir=$(mktemp -d)
trap 'rm -rf "$bin_dir"' EXIT
(cd ../.. && go build -o "$bin_dir/jetgate" ./cmd/jetgate)
JETGATE_BIN="$bin_dir/jetgate" node --test --test-concurrency=1 test/*.test.mjs
