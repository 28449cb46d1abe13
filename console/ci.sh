#!/usr/bin/env bash
# The console's CI: install, rebuild and check the committed bundle is what
# the sources make (it is embedded in the binary), unit tests, then the
# browser tests in Debian's Chromium against a real jetgate. Screenshots go
# to console/artifacts/.
set -euo pipefail
cd "$(dirname "$0")"
npm ci --no-audit --no-fund
npm run build
if ! git diff --exit-code --stat -- dist || [ -n "$(git status --porcelain -- dist)" ]; then
  echo "console/dist is stale: run 'npm run build' in console/ and commit dist/" >&2
  git status --porcelain -- dist >&2
  exit 1
fi
npm test
if [ ! -x /usr/bin/chromium ]; then
  apt-get update -qq
  apt-get install -y -qq chromium
fi
npm run browser
echo "screenshots: $(pwd)/artifacts"
