#!/usr/bin/env bash
# Puts a binary of Debian's prometheus package of version $2 at $1: promtool (the alert
# rules' checker and unit-test runner) by default, or $3 (prometheus, the server the
# dashboard's queries are evaluated by in the Go tests). Nothing is installed or started.
# Prometheus's Go module builds the same tools, but takes about half an hour on a 2-core
# machine; elsewhere than Debian, point the Makefile at binaries of your own
# (make test PROMTOOL=/path/to/promtool PROMETHEUS=/path/to/prometheus).
set -euo pipefail
usage="usage: hack/promtool.sh OUT DEB_VERSION [promtool|prometheus]"
out=${1:?$usage}
version=${2:?$usage}
tool=${3:-promtool}
case $tool in promtool | prometheus) ;; *) echo "$usage" >&2; exit 2 ;; esac
command -v apt-get >/dev/null || { echo "$tool: no apt-get here; run make with ${tool^^}=/path/to/$tool" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
apt-get download "prometheus=$version" >/dev/null 2>&1 || { apt-get update >/dev/null && apt-get download "prometheus=$version"; }
dpkg-deb -x prometheus_*.deb root
install -m 0755 "root/usr/bin/$tool" "$out"
"$out" --version 2>&1 | head -1
