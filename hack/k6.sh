#!/usr/bin/env bash
# Builds Grafana k6 from its Go module (hack/k6, version pinned in go.mod, go.sum checked
# in) into OUTDIR and prints the binary's path. Skipped when the binary there already
# reports the pinned version.
#
# Usage: hack/k6.sh OUTDIR
set -euo pipefail

out=${1:?usage: hack/k6.sh OUTDIR}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
version=$(awk '$1 == "require" && $2 == "go.k6.io/k6" {print $3}' "$here/k6/go.mod")
mkdir -p "$out"
out=$(cd "$out" && pwd)

if "$out/k6" version 2>/dev/null | grep -q "k6 ${version} "; then
  echo "k6: ${version} present" >&2
else
  echo "k6: building ${version} (a few minutes on a cold Go cache)" >&2
  "$here/heartbeat.sh" k6 "building $version" \
    env -u GOOS -u GOARCH GOFLAGS=-mod=readonly GOWORK=off CGO_ENABLED=0 \
    go build -C "$here/k6" -trimpath -buildvcs=false -ldflags "-s -w" -o "$out/k6" .
fi
echo "$out/k6"
