#!/usr/bin/env bash
# Runs hack/otava/detect.py (Apache Otava's change points, one JSON line per look) in a venv of
# its own with the pinned apache-otava 0.8.0 and its dependencies (hack/otava/requirements.txt),
# made on first use: OTAVA_VENV (default bin/otava-venv), from PyPI.
#   go run ./hack/shiftpower -detectors Otava -otava hack/otava.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
venv=${OTAVA_VENV:-$here/../bin/otava-venv}
requirements=$here/otava/requirements.txt
if ! cmp -s "$requirements" "$venv/requirements.txt" 2>/dev/null; then
  python3 -m venv "$venv" >&2
  "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$requirements" >&2
  cp "$requirements" "$venv/requirements.txt"
fi
exec "$venv/bin/python" "$here/otava/detect.py"
