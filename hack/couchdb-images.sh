#!/usr/bin/env bash
# Builds Apache CouchDB images without Docker and imports them into ../shared/local-cluster:
#   couchdb:3.4.3, couchdb:3.5.1       the official image's layout, user and entrypoint on
#                                       the kit's release tarballs
#   couchbench/couchdb-python:3.4.3    + Debian's python3, couchpy and simplejson (presets
#                                       couchpy, couchpy-simplejson)
#   couchbench/couchdb-pypy:3.4.3      + Debian's pypy3 and couchpy run by it (preset pypy)
#
# Usage: hack/couchdb-images.sh load [IMAGE...]   build what is missing, import; prints tarballs
#        hack/couchdb-images.sh build [IMAGE...]  build what is missing; prints tarballs
#        hack/couchdb-images.sh describe          the inputs the Dockerfiles must share
# IMAGE is a reference from the list above; default all. build and load need root
# (debootstrap, chroot) and mkimage: MKIMAGE, else the cluster's (its up.sh, or up.sh
# --build-only). hack/images.sh kind builds mkimage itself and `docker load`s what build prints.
#
# Each image is a root filesystem from `debootstrap --variant=minbase --include=...` (the
# CouchDB runtime packages plus images/<dir>/packages.txt, the couchdb user, and the pins of
# images/<dir>/requirements.txt installed) and a CouchDB layer (the release tarball with the
# official image's files from the kit's image/ directory), assembled by mkimage. Layers and
# image tarballs are cached in bin/images, each under a hash of its inputs (the functions of
# this script that make it, the kit's tarball and files, package lists, pins, Debian
# mirror), so a second run only imports them.
# images/couchdb-python and images/couchdb-pypy build the same two images with Docker from
# the same packages.txt and requirements.txt; images/dockerfiles_test.go compares them with
# `describe`.
#
# Settings: COUCHDB_KIT (default ../shared/apache-couchdb), LOCAL_CLUSTER (default
# ../shared/local-cluster), LOCAL_CLUSTER_DIR (default /var/lib/local-cluster),
# LOCAL_CLUSTER_DEBIAN_MIRROR (default: the first non-security URIs: of
# /etc/apt/sources.list.d/*.sources, as the local cluster's own base image uses).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
umask 022   # the layers' directories get their modes from here

kit=${COUCHDB_KIT:-../shared/apache-couchdb}
lc=${LOCAL_CLUSTER:-../shared/local-cluster}
mkimage=${MKIMAGE:-${LOCAL_CLUSTER_DIR:-/var/lib/local-cluster}/bin/mkimage}
cache=$PWD/bin/images   # absolute: debootstrap wants an absolute --cache-dir

suite=bookworm
# What the official image installs on debian:bookworm-slim ($kit/image/README.md).
couchdb_packages=(libmozjs-102-0 libicu72 libssl3 libstdc++6 libgcc-s1 zlib1g libtinfo6 tini ca-certificates curl)
couchdb_uid=5984

# reference, CouchDB release, directory under images/ with packages.txt and requirements.txt
# ("-": the plain CouchDB image).
images=(
  "couchdb:3.4.3 3.4.3 -"
  "couchdb:3.5.1 3.5.1 -"
  "couchbench/couchdb-python:3.4.3 3.4.3 couchdb-python"
  "couchbench/couchdb-pypy:3.4.3 3.4.3 couchdb-pypy"
)

# The query server each derived image registers (its Dockerfile's ENV).
declare -A image_env=(
  [couchdb-python]="COUCHDB_QUERY_SERVER_PYTHON=/usr/local/bin/couchpy"
  [couchdb-pypy]="COUCHDB_QUERY_SERVER_PYTHON=/usr/bin/pypy3 -m couchdb.view"
)
# pip options of each Dockerfile's `pip3 install` (without -r and --target). Wheels only: a
# source build would need a compiler, and simplejson would silently fall back to pure Python.
declare -A image_pip=(
  [couchdb-python]="--no-cache-dir --only-binary=:all: --break-system-packages"
  [couchdb-pypy]="--no-cache-dir --only-binary=:all: --no-compile --implementation pp --python-version 3.9"
)
# Debian's pypy3 has no pip: pip of CPython installs the pure-Python wheels for PyPy into a
# directory on pypy3's sys.path.
declare -A image_pip_target=([couchdb-pypy]=/usr/local/lib/pypy3.9/dist-packages)

log() { echo "couchdb-images: $*" >&2; }
die() { log "ERROR: $*"; exit 1; }

describe() {
  local line ref version dir
  for line in "${images[@]}"; do
    read -r ref version dir <<<"$line"
    echo "image $ref"
    echo "couchdb $version"
    if [ "$dir" != - ]; then
      echo "packages images/$dir/packages.txt"
      echo "requirements images/$dir/requirements.txt"
      echo "pip ${image_pip[$dir]}"
      [ -z "${image_pip_target[$dir]:-}" ] || echo "pip-target ${image_pip_target[$dir]}"
      echo "env ${image_env[$dir]}"
    fi
    echo
  done
}

# shellcheck source=hack/lib/debian.sh
source hack/lib/debian.sh

hash_of() { sha256sum | cut -c1-16; }

# Non-empty lines of a list file (packages.txt, requirements.txt).
list_of() { grep -v '^[[:space:]]*$' "$1"; }

# A cache entry NAME-KEY.EXT (KEY: 16 hex digits from hash_of) is complete once it exists:
# it is written as .tmp and renamed. Older entries of the same NAME are removed then.
store() { # tmpfile final
  mv "$1" "$2"
  local f base=${2%-*} ext=${2##*-}
  for f in "$base"-????????????????"${ext:16}"; do
    [ "$f" = "$2" ] || rm -f "$f"
  done
}

# Runs a command in a root filesystem with a clean environment: nothing of the host's
# (PIP_*, PYTHON*) may leak into how the image is installed.
in_root() { # root command...
  local root=$1; shift
  env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 \
    chroot "$root" "$@"
}

# debootstrap mounts /proc and /sys in its target and unmounts them when it ends, which can
# fail (busy) and leave them mounted: unmount what is left, deepest first.
unmount_under() {
  findmnt -rn -o TARGET | awk -v d="$1/" 'index($0, d) == 1' | sort -r | while read -r m; do
    umount "$m" || umount -l "$m"
  done
}

# rm -rf that never descends into a mount (a /proc left mounted in a root filesystem).
remove() { rm -rf --one-file-system "$@"; }

# Installs images/$dir/requirements.txt into the root filesystem as the Dockerfile does. The
# wheels are fetched by the host's pip (which has the machine's index and CA settings) for
# the image's interpreter; pip inside the root only installs them, offline.
install_requirements() { # dir root
  local dir=$1 root=$2 req=images/$1/requirements.txt target=${image_pip_target[$1]:-}
  local -a pip_options
  read -r -a pip_options <<<"${image_pip[$dir]}"
  if [ -n "$target" ]; then
    python3 -m pip install -q --root-user-action=ignore "${pip_options[@]}" --target "$root$target" -r "$req" >&2
    # pip puts the console scripts next to the packages, with the host's shebang: not for PyPy.
    rm -rf "${root:?}$target/bin"
    in_root "$root" pypy3 -m compileall -q "$target" >&2
    in_root "$root" pypy3 -c 'import platform; assert platform.python_implementation() == "PyPy"'
  else
    local pyver
    pyver=$(in_root "$root" python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])')
    mkdir -p "$root/tmp/wheels"
    python3 -m pip download -q --only-binary=:all: --implementation cp \
      --python-version "$pyver" -d "$root/tmp/wheels" -r "$req" >&2
    cp "$req" "$root/tmp/requirements.txt"
    in_root "$root" pip3 install -q --root-user-action=ignore "${pip_options[@]}" --no-index \
      --find-links /tmp/wheels -r /tmp/requirements.txt >&2
    rm -r "$root/tmp/wheels" "$root/tmp/requirements.txt"
  fi
  # The query server the image registers must start there.
  local -a query_server
  read -r -a query_server <<<"${image_env[$dir]#*=}"
  in_root "$root" "${query_server[@]}" --version >&2
}

# Sets layer to the root filesystem layer of an image: Debian minbase with the CouchDB runtime
# packages and images/$dir/packages.txt, the couchdb user, and images/$dir/requirements.txt.
rootfs_layer() { # dir
  local dir=$1 mirror name key
  local -a packages=("${couchdb_packages[@]}")
  mirror=$(debian_mirror)
  name="rootfs-couchdb"
  if [ "$dir" != - ]; then
    name="rootfs-$dir"
    mapfile -t -O ${#packages[@]} packages < <(list_of "images/$dir/packages.txt")
  fi
  key=$({
    declare -f rootfs_layer install_requirements in_root list_of debian_mirror
    echo "$suite $mirror ${packages[*]} $couchdb_uid"
    cat /usr/local/share/ca-certificates/*.crt 2>/dev/null || true
    [ "$dir" = - ] || { cat "images/$dir/requirements.txt"; echo "${image_pip[$dir]} ${image_pip_target[$dir]:-}"; }
  } | hash_of)
  layer=$cache/layers/$name-$key.tar.gz
  [ -f "$layer" ] && return 0

  local root=$work/$name logf=$cache/logs/$name.log t=$SECONDS include
  include=$(IFS=,; echo "${packages[*]}")
  log "debootstrap $suite minbase + ${packages[*]} from $mirror (log: $logf)"
  if ! debootstrap_to "$logf" --variant=minbase --include="$include" --cache-dir="$cache/debs" \
      "$suite" "$root" "$mirror"; then
    tail -20 "$logf" >&2
    die "debootstrap for $name failed (log: $logf)"
  fi
  unmount_under "$root"
  # The machine's own CA certificates (a TLS-intercepting proxy's, on this project's machines),
  # as hack/base-images.sh puts them into its bases: a Dockerfile FROM this image (the Python
  # presets') then reaches the package registries the machine reaches.
  cp /usr/local/share/ca-certificates/*.crt "$root/usr/local/share/ca-certificates/" 2>/dev/null || true
  in_root "$root" update-ca-certificates >&2
  # The official image's account: ids fixed so that runAsUser/fsGroup 5984 match.
  in_root "$root" groupadd -g "$couchdb_uid" -r couchdb
  in_root "$root" useradd -u "$couchdb_uid" -d /opt/couchdb -g couchdb couchdb
  [ "$dir" = - ] || install_requirements "$dir" "$root"
  in_root "$root" apt-get clean
  # What the build leaves that an image must not carry: package lists, logs, and the host's
  # resolver and name (the kubelet mounts a pod's own).
  rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/*.bin "$root"/var/log/*.log \
    "$root"/var/cache/debconf/*-old "$root"/etc/resolv.conf "$root"/etc/hostname
  tar -C "$root" --sort=name --numeric-owner --exclude='./dev/*' --exclude='./proc/*' \
    --exclude='./sys/*' --exclude='./run/*' --exclude='./tmp/*' -cf - . | gzip -n >"$layer.tmp"
  store "$layer.tmp" "$layer"
  remove "$root"
  log "built $name in $((SECONDS - t))s ($(du -m "$layer" | cut -f1) MB)"
}

# Sets layer to the CouchDB layer: the release tarball under /opt/couchdb with the official
# image's files, ownership and modes ($kit/image/README.md).
couchdb_layer() { # version
  local version=$1 tarball=$kit/couchdb-$1-bookworm-amd64.tar.gz key
  [ -f "$tarball" ] || die "no release tarball $tarball (set COUCHDB_KIT)"
  key=$({
    declare -f couchdb_layer
    echo "$couchdb_uid"
    sha256sum "$tarball" | cut -d' ' -f1
    cat "$kit"/image/{docker-entrypoint.sh,10-docker-default.ini,vm.args}
  } | hash_of)
  layer=$cache/layers/couchdb-$version-$key.tar.gz
  [ -f "$layer" ] && return 0

  local stage=$work/couchdb-$version t=$SECONDS
  mkdir -p "$stage/opt" "$stage/usr/local/bin"
  tar -xzf "$tarball" -C "$stage/opt"
  local home=$stage/opt/couchdb
  install -m 0644 "$kit/image/10-docker-default.ini" "$home/etc/default.d/"
  # The official vm.args: no -name (the chart passes it in ERL_FLAGS), distribution port 9100.
  install -m 0644 "$kit/image/vm.args" "$home/etc/vm.args"
  mkdir -p "$home/data" "$home/var/log"
  chmod 0777 "$home/data" "$home/var/log"
  find "$home/etc" -type d -exec chmod 0755 {} +
  find "$home/etc" -type f -exec chmod 0644 {} +
  chmod 0777 "$home/etc/local.d"   # the entrypoint writes docker.ini there as any user
  chown -R "$couchdb_uid:$couchdb_uid" "$home"
  install -m 0755 "$kit/image/docker-entrypoint.sh" "$stage/usr/local/bin/"
  ln -s usr/local/bin/docker-entrypoint.sh "$stage/docker-entrypoint.sh"
  tar -C "$stage" --sort=name --numeric-owner -cf - opt usr docker-entrypoint.sh | gzip -n >"$layer.tmp"
  store "$layer.tmp" "$layer"
  remove "$stage"
  log "built the CouchDB $version layer in $((SECONDS - t))s"
}

# Sets tar to the image tarball of one entry of $images.
image_tar() { # "ref version dir"
  local ref version dir rootfs couchdb key
  read -r ref version dir <<<"$1"
  rootfs_layer "$dir"; rootfs=$layer
  couchdb_layer "$version"; couchdb=$layer
  key=$({ declare -f image_tar; echo "$ref ${image_env[$dir]:-}"; basename "$rootfs"; basename "$couchdb"; } | hash_of)
  tar=$cache/$(echo "$ref" | tr '/:' '__')-$key.tar
  [ -f "$tar" ] && return 0

  # The official image's configuration: tini reaps and forwards signals to the entrypoint,
  # which drops to couchdb when started as root. (mkimage has no VOLUME; the chart mounts
  # /opt/couchdb/data itself.)
  local -a config=(-entrypoint tini -entrypoint -- -entrypoint /docker-entrypoint.sh
    -cmd /opt/couchdb/bin/couchdb -env "COUCHDB_VERSION=$version"
    -port 5984/tcp -port 4369/tcp -port 9100/tcp)
  [ "$dir" = - ] || config+=(-env "${image_env[$dir]}")
  "$mkimage" -t "$ref" -o "$tar.tmp" -l "$rootfs" -l "$couchdb" "${config[@]}" 2>"$cache/logs/mkimage.log" \
    || { cat "$cache/logs/mkimage.log" >&2; die "mkimage of $ref failed"; }
  store "$tar.tmp" "$tar"
  log "assembled $ref"
}

# The cluster's ctr (env.sh, written by the cluster's up.sh, points it at the cluster's
# containerd, namespace k8s.io).
# shellcheck source=/dev/null
ctr_() { (source "${LOCAL_CLUSTER_DIR:-/var/lib/local-cluster}/env.sh" && ctr "$@"); }

# Is the image in the tarball the one the cluster has under its name? Compares image ids
# (config digests), so a warm run need not import again.
imported() { # ref tar
  local name=docker.io/library/$1 digest id manifest
  # Our references have no registry: Docker Hub, library/ for one-word names.
  case $1 in */*) name=docker.io/$1 ;; esac
  id=$(tar -xOf "$2" manifest.json | grep -o '"Config":"sha256:[0-9a-f]*"' | grep -o 'sha256:[0-9a-f]*')
  digest=$(ctr_ images ls "name==$name" | awk 'NR == 2 {print $3}')
  [ -n "$digest" ] || return 1
  manifest=$(ctr_ content get "$digest")
  [[ $manifest == *"\"config\":{"*"\"digest\":\"$id\""* ]]
}

cmd=${1:-}
[ $# -eq 0 ] || shift
case "$cmd" in
describe) describe; exit 0 ;;
build | load) ;;
*) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
esac

selected=()
if [ $# -eq 0 ]; then
  selected=("${images[@]}")
else
  for want in "$@"; do
    found=
    for line in "${images[@]}"; do
      [ "${line%% *}" = "$want" ] && found=$line
    done
    [ -n "$found" ] || die "unknown image $want (known: $(printf '%s ' "${images[@]%% *}"))"
    selected+=("$found")
  done
fi

[ "$(id -u)" = 0 ] || die "run as root (debootstrap and chroot)"
[ -x "$mkimage" ] || die "no $mkimage: run $lc/up.sh (or up.sh --build-only) first, or set MKIMAGE"
ensure_debootstrap || die "no debootstrap, and apt-get could not install it"
python3 -m pip --version >/dev/null 2>&1 || die "the host's python3 -m pip is needed to fetch the pinned wheels"
mkdir -p "$cache/layers" "$cache/logs" "$cache/debs"
# One build at a time per checkout: the layers and the .deb cache are shared.
exec 8>"$cache/.lock"
flock -w 3600 8 || die "another hack/couchdb-images.sh holds $cache/.lock"
if [ "$cmd" = load ]; then
  ctr_ --connect-timeout 2s version >/dev/null 2>&1 || die "the cluster is not running: run $lc/up.sh first"
fi
work=$(mktemp -d "$cache/.work.XXXXXX")
trap 'unmount_under "$work"; remove "$work"' EXIT

tars=() missing=()
for line in "${selected[@]}"; do
  image_tar "$line"
  tars+=("$tar")
  if [ "$cmd" = load ] && ! imported "${line%% *}" "$tar"; then
    missing+=("$tar")
  fi
done
if [ ${#missing[@]} -gt 0 ]; then
  t=$SECONDS
  "$lc/load-image.sh" "${missing[@]}" >/dev/null
  log "imported ${#missing[@]} image(s) in $((SECONDS - t))s"
elif [ "$cmd" = load ]; then
  log "the cluster has all ${#tars[@]} image(s)"
fi
printf '%s\n' "${tars[@]}"
