#!/usr/bin/env bash
# Makes the base images this project's Dockerfiles and the kind node image name present in
# the local Docker engine, under the names the Dockerfiles use:
#   debian:bookworm-slim                          images/k6, the kind node image, the offline images
#   gcr.io/distroless/static-debian12:nonroot     images/manager, hack/flux's images
# An image already present is kept. A missing one is pulled; where no registry answers (an
# air-gapped machine, or this project's machines) it is built from local parts instead:
# Debian's packages (debootstrap) and the machine's CA bundle. They trust what the machine
# trusts: the certificates it added under /usr/local/share/ca-certificates (a TLS-intercepting
# proxy's, on this project's machines) go into them, so that apt and pip in a build reach the
# registries the machine reaches.
# The locally built images are labelled couchbench.offline=true, so
# `docker images -f label=couchbench.offline=true` lists them.
#
# Usage: hack/base-images.sh [IMAGE...]   (default: both)
# Needs root for debootstrap (only when debian:bookworm-slim has to be built) and a running
# Docker engine (DOCKER_HOST).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

suite=bookworm
debian=debian:$suite-slim
distroless=gcr.io/distroless/static-debian12:nonroot

log() { echo "base-images: $*" >&2; }
die() { log "ERROR: $*"; exit 1; }

# shellcheck source=hack/lib/debian.sh
source hack/lib/debian.sh

present() { docker image inspect "$1" >/dev/null 2>&1; }

# A Debian minbase root file system, as debian:bookworm-slim is one; apt in it uses the mirror
# it was made from.
build_debian() {
  ensure_debootstrap || die "no debootstrap, and apt-get could not install it"
  [ "$(id -u)" = 0 ] || die "building $debian needs root (debootstrap)"
  local root=$work/debian
  debootstrap_to "$work/debootstrap.log" --variant=minbase "$suite" "$root" "$(debian_mirror)" ||
    { tail -20 "$work/debootstrap.log" >&2; die "debootstrap $suite failed"; }
  # ca-certificates, once installed in an image built on this one, adds these to its bundle.
  mkdir -p "$root/usr/local/share/ca-certificates"
  cp /usr/local/share/ca-certificates/*.crt "$root/usr/local/share/ca-certificates/" 2>/dev/null || true
  rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/*.bin "$root"/var/cache/apt/archives/*.deb \
    "$root"/var/log/*.log "$root"/etc/resolv.conf "$root"/etc/hostname
  tar -C "$root" --numeric-owner --exclude='./proc/*' --exclude='./sys/*' --exclude='./dev/*' -cf - . |
    docker import --change 'CMD ["bash"]' --change 'LABEL couchbench.offline=true' - "$debian" >/dev/null
}

# What an image FROM distroless/static:nonroot relies on: the nonroot user (65532), a CA
# bundle (the machine's), /tmp; no shell, no package manager.
build_distroless() {
  local root=$work/distroless
  mkdir -p "$root/etc/ssl/certs" "$root/tmp" "$root/home/nonroot" "$root/root"
  chmod 1777 "$root/tmp"
  chmod 0700 "$root/home/nonroot" "$root/root"
  printf '%s\n' 'root:x:0:0:root:/root:/sbin/nologin' 'nobody:x:65534:65534:nobody:/nonexistent:/sbin/nologin' \
    'nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin' >"$root/etc/passwd"
  printf '%s\n' 'root:x:0:' 'nobody:x:65534:' 'nonroot:x:65532:' >"$root/etc/group"
  cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/" 2>/dev/null ||
    die "no CA bundle at /etc/ssl/certs/ca-certificates.crt (Debian's ca-certificates) for $distroless"
  chown -R 0:0 "$root"
  chown 65532:65532 "$root/home/nonroot"
  tar -C "$root" --numeric-owner -cf - . |
    docker import --change 'USER 65532:65532' --change 'WORKDIR /home/nonroot' \
      --change 'ENV SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt' --change 'LABEL couchbench.offline=true' \
      - "$distroless" >/dev/null
}

provide() {
  local image=$1 t=$SECONDS
  if present "$image"; then
    log "$image present"
    return
  fi
  if docker pull -q "$image" >/dev/null 2>&1; then
    log "$image pulled"
    return
  fi
  log "$image cannot be pulled: building it from local parts"
  case $image in
  "$debian") build_debian ;;
  "$distroless") build_distroless ;;
  *) die "no local recipe for $image" ;;
  esac
  log "built $image in $((SECONDS - t))s"
}

docker info >/dev/null 2>&1 || die "no Docker engine answers (DOCKER_HOST=${DOCKER_HOST:-unset}); start one, e.g. export DOCKER_HOST=\$(../shared/docker/up.sh)"
work=$(mktemp -d)
trap 'rm -rf --one-file-system "$work"' EXIT
[ $# -gt 0 ] || set -- "$debian" "$distroless"
for image in "$@"; do provide "$image"; done
