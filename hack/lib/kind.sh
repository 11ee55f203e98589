# Sourced by the scripts that use a kind cluster (hack/kind-up.sh, hack/e2e.sh).

# kind_api_ready NAME [SECONDS]: waits until cluster NAME's API server is ready and authorizes
# kind's admin (kubernetes-admin, whose rights come from the kubeadm:cluster-admins binding,
# not from system:masters). A freshly started API server answers before its RBAC caches have
# filled, and denies that user meanwhile; on a loaded machine the kubelet may also restart it
# while the images load. The check runs the node's own kubectl, so the host needs none. On
# timeout it prints what the API server said and how often it was restarted.
kind_api_ready() {
  local name=$1 limit=${2:-300} t=$SECONDS node="$1-control-plane"
  local kubectl=(docker exec "$node" kubectl --kubeconfig /etc/kubernetes/admin.conf --request-timeout=5s)
  until "${kubectl[@]}" get --raw /readyz >/dev/null 2>&1 &&
    [ "$("${kubectl[@]}" auth can-i '*' '*' --all-namespaces 2>/dev/null)" = yes ]; do
    if ((SECONDS - t >= limit)); then
      echo "kind: the API server of $name did not authorize kubernetes-admin within ${limit}s" >&2
      "${kubectl[@]}" get --raw '/readyz?verbose' >&2 || true
      "${kubectl[@]}" auth can-i '*' '*' --all-namespaces >&2 || true
      docker exec "$node" crictl ps -a --name kube-apiserver >&2 || true
      return 1
    fi
    sleep 2
  done
  ((SECONDS - t < 2)) || echo "kind: the API server of $name was ready after $((SECONDS - t))s" >&2
}
