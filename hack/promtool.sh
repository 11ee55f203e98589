#!/usr/bin/env bash
# Puts promtool (the alert rules' checker and unit-test runner) at $1, unpacked from Debian's
# prometheus package of version $2: nothing is installed or started. Prometheus's Go module
# builds the same tool, but takes about half an hour on a 2-core machine; elsewhere than
# Debian, point the Makefile at a promtool of your own (make test PROMTOOL=/path/to/promtool).
set -euo pipefail
out=${1:?usage: hack/promtool.sh OUT DEB_VERSION}
version=${2:?usage: hack/promtool.sh OUT DEB_VERSION}
command -v apt-get >/dev/null || { echo "promtool: no apt-get here; run make with PROMTOOL=/path/to/promtool" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
apt-get download "prometheus=$version" >/dev/null 2>&1 || { apt-get update >/dev/null && apt-get download "prometheus=$version"; }
dpkg-deb -x prometheus_*.deb root
install -m 0755 root/usr/bin/promtool "$out"
"$out" --version | head -1
