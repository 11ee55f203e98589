# Sourced by the scripts that make Debian root file systems with debootstrap
# (hack/base-images.sh, hack/couchdb-images.sh).

# debian_mirror is the Debian mirror to debootstrap from: LOCAL_CLUSTER_DEBIAN_MIRROR, else the
# first non-security one this machine's apt uses, as ../shared/local-cluster's own base does.
debian_mirror() {
  [ -z "${LOCAL_CLUSTER_DEBIAN_MIRROR:-}" ] || { echo "$LOCAL_CLUSTER_DEBIAN_MIRROR"; return; }
  local m
  m=$(awk '/^URIs:/ && $2 !~ /security/ {print $2; exit}' /etc/apt/sources.list.d/*.sources 2>/dev/null || true)
  echo "${m:-http://deb.debian.org/debian}"
}

# ensure_debootstrap installs Debian's debootstrap when it is missing.
ensure_debootstrap() {
  command -v debootstrap >/dev/null || apt-get install -y -q debootstrap >&2 ||
    { apt-get update -q >&2 && apt-get install -y -q debootstrap >&2; }
}

# debootstrap_to LOG ARG...: runs debootstrap ARG... with its output (some hundred lines) in
# LOG, saying every 30 s on stderr that it still runs, since it is silent for minutes on a busy
# machine otherwise.
debootstrap_to() {
  local log=$1
  shift
  "$(dirname "${BASH_SOURCE[0]}")/../heartbeat.sh" debootstrap "making a Debian root file system (log: $log)" \
    sh -c 'log=$1; shift; exec debootstrap "$@" >"$log" 2>&1' sh "$log" "$@"
}
