#!/usr/bin/env bash
# CI for the deploy module (the chart, the image builder): formatting, vet,
# staticcheck and the tests. Needs only Go; no cluster, no Docker.
set -euo pipefail
cd "$(dirname "$0")"
unformatted=$(gofmt -l .)
if [ -n "$unformatted" ]; then
  echo "gofmt would change:"; echo "$unformatted"; exit 1
fi
go mod verify >/dev/null
go vet ./...
go run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...
go test -race -count=1 ./...
