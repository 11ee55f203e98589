#!/usr/bin/env bash
# docker build with Docker's classic builder, by choice (DOCKER_BUILDKIT=0): BuildKit needs the
# buildx component, which Debian's docker.io 20.10 does not have, and hack/images.sh's stage
# tags rest on how the classic builder caches. Debian's docker CLI prints a four-line notice
# that this builder is deprecated on every build, some ten per `make demo`; it is dropped from
# stderr, everything else passes (stdout untouched). The exit status is docker build's.
#
# Usage: hack/docker-build.sh DOCKER_BUILD_ARG...
set -euo pipefail
{ DOCKER_BUILDKIT=0 docker build "$@" 2>&1 1>&3 3>&- | sed -u '/^DEPRECATED: The legacy builder/,/^$/d' >&2; } 3>&1
