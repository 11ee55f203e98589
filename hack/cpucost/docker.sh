#!/usr/bin/env bash
# Holds a container's CPU time read from inside it (cpucost.ContainerReader, started once with
# `docker exec -i`, as a runner starts it through pods/exec) against the host's reading of the
# same cgroup, over intervals in which the container works (a shell loop, busy and asleep by
# turns). Docker's runc sets up a container's cgroups as a Kubernetes node's does; what this
# does not show is the Kubernetes side (RBAC, the exec API): hack/cpucost/kind.sh.
#
# Usage: hack/cpucost/docker.sh   (needs Docker, DOCKER_HOST, an image IMAGE with sh, default
# debian:bookworm-slim, and root: it reads the host's /proc and cgroups)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
image=${IMAGE:-debian:bookworm-slim}
name=couchbench-cpucost
docker rm -f "$name" >/dev/null 2>&1 || true
trap 'docker rm -f "$name" >/dev/null 2>&1 || true' EXIT
docker run -d --name "$name" "$image" sh -c \
  'while :; do i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done; sleep 0.5; done' >/dev/null
proc=/proc/$(docker inspect -f '{{.State.Pid}}' "$name")/cgroup
if [[ -f /sys/fs/cgroup/cgroup.controllers ]]; then
  file=/sys/fs/cgroup$(sed -n 's/^0:://p' "$proc")/cpu.stat
else
  file=/sys/fs/cgroup/cpuacct$(grep -E '^[0-9]+:([^:]*,)?cpuacct(,[^:]*)?:' "$proc" | cut -d: -f3)/cpuacct.usage
fi
echo "the host reads $file"
go run ./hack/cpucost -container "docker exec -i $name" -host "$file" "$@"
