#!/usr/bin/env bash
# Fails when generated code or manifests differ from what the generators make from the
# sources. It regenerates them in place, so a stale tree fails once and the fresh files are
# there to review and commit.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

generated=(api/v1alpha1/zz_generated.deepcopy.go config/crd/bases config/rbac/role.yaml
  charts/couchbench-operator/templates/crds charts/couchbench-operator/files/manager-role.yaml
  charts/couchbench-operator/files/installer-role.yaml charts/couchbench-operator/files/cpu-reader-role.yaml)

before=$(mktemp -d)
trap 'rm -rf "$before"' EXIT
for p in "${generated[@]}"; do
  if [ -e "$p" ]; then cp -r --parents "$p" "$before/"; fi
done

make --silent --no-print-directory generate manifests

stale=0
for p in "${generated[@]}"; do
  if ! diff -r "$before/$p" "$p" >/dev/null 2>&1; then
    echo "verify-generated: $p was stale (regenerated now: review and commit it)" >&2
    stale=1
  fi
done
exit $stale
