#!/usr/bin/env bash
# Proves on a kind cluster how a runner reads a CouchDB pod's CPU time without node-level
# rights: a one-node kind cluster, a CouchDB 3.4.3 pod, and a ServiceAccount whose only right
# is to exec into that pod (a Role with resourceNames: no nodes/proxy, no
# hostPath, no privileged pod). As that ServiceAccount, the runner's reader (podcpu, through
# pods/exec) reads the couchdb container's own cgroup from inside it
# (cpucost.ContainerReader); the host reads the same
# cgroup from outside (the kernel's view, under the kind node's container); hack/cpucost holds
# the two against each other over a seeding and view builds of the nightly sample's size.
#
# Usage: hack/cpucost/kind.sh          (KEEP=1 keeps the cluster; KIND, KUBECTL name the binaries)
# Needs Docker (DOCKER_HOST), the kind node image (hack/kind-node-image.sh) and couchdb:3.4.3
# in Docker (hack/images.sh kind builds it), root (it reads the host's /proc and cgroups).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
kind=${KIND:-bin/kind}
kubectl=${KUBECTL:-kubectl}
cluster=couchbench-cpucost
ns=cpucost
port=${PORT:-17650}
kubeconfig=$(mktemp)
export KUBECONFIG=$kubeconfig
cleanup() {
  [[ -n ${forward:-} ]] && kill "$forward" 2>/dev/null || true
  [[ -n ${KEEP:-} ]] || "$kind" delete cluster --name "$cluster" >/dev/null 2>&1 || true
  rm -f "$kubeconfig"
}
trap cleanup EXIT

node=$(KIND=$kind hack/kind-node-image.sh)
flock /tmp/couchbench-docker.lock bash -c "
  '$kind' create cluster --name '$cluster' --image '$node' --config hack/kind/demo.yaml --kubeconfig '$kubeconfig' --wait 180s &&
  '$kind' load docker-image --name '$cluster' couchdb:3.4.3"

"$kubectl" apply -f - <<YAML
apiVersion: v1
kind: Namespace
metadata: {name: $ns}
---
apiVersion: v1
kind: Pod
metadata: {name: couchdb, namespace: $ns}
spec:
  containers:
  - name: couchdb
    image: couchdb:3.4.3
    imagePullPolicy: Never
    env:
    - {name: COUCHDB_USER, value: admin}
    - {name: COUCHDB_PASSWORD, value: admin}
    readinessProbe:
      httpGet: {path: /_up, port: 5984}
      periodSeconds: 2
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: runner, namespace: $ns}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: read-couchdb-cpu, namespace: $ns}
rules:
- {apiGroups: [""], resources: [pods/exec], resourceNames: [couchdb], verbs: [get, create]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: runner-reads-couchdb-cpu, namespace: $ns}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: read-couchdb-cpu}
subjects:
- {kind: ServiceAccount, name: runner, namespace: $ns}
YAML
"$kubectl" -n "$ns" wait pod/couchdb --for=condition=Ready --timeout=300s >/dev/null
as=(--as "system:serviceaccount:$ns:runner")
echo "the runner's rights: $("$kubectl" "${as[@]}" auth can-i --list -n "$ns" | grep -c . ) rules;" \
  "nodes/proxy: $("$kubectl" "${as[@]}" auth can-i get nodes/proxy || true)," \
  "exec into another pod: $("$kubectl" "${as[@]}" -n "$ns" auth can-i create pods/exec --subresource=exec 2>/dev/null || true)"

# The host's view of the container's cgroup: the CouchDB process's cgroup, found by the
# container's id, read on the host (this machine, whose kernel keeps the accounting).
id=$("$kubectl" -n "$ns" get pod couchdb -o jsonpath='{.status.containerStatuses[0].containerID}')
id=${id#*://}
proc=$(grep -l "$id" /proc/[0-9]*/cgroup | head -1)
if [[ -f /sys/fs/cgroup/cgroup.controllers ]]; then
  file=/sys/fs/cgroup$(sed -n 's/^0:://p' "$proc")/cpu.stat
else
  file=/sys/fs/cgroup/cpuacct$(grep -E '^[0-9]+:([^:]*,)?cpuacct(,[^:]*)?:' "$proc" | cut -d: -f3)/cpuacct.usage
fi
echo "the container $id: the host reads $file"
echo "inside the container: $("$kubectl" -n "$ns" exec couchdb -- cat /proc/self/cgroup | tr '\n' ' ')"

"$kubectl" -n "$ns" port-forward pod/couchdb "$port:5984" >/dev/null &
forward=$!
for _ in $(seq 50); do curl -sf "http://127.0.0.1:$port/_up" >/dev/null && break; sleep 0.2; done
# Read as the runner's index Jobs do (podcpu), acting as that ServiceAccount.
COUCHDB_USER=admin COUCHDB_PASSWORD=admin go run ./hack/cpucost -url "http://127.0.0.1:$port" \
  -pod "$ns/couchdb" -as "system:serviceaccount:$ns:runner" -host "$file"
