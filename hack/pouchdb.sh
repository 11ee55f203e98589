#!/usr/bin/env bash
# Installs pouchdb-server -- a third-party CouchDB-compatible HTTP server from npm, NOT Apache
# CouchDB -- into a git-ignored directory and prints the path of its executable (for
# POUCHDB_SERVER, which internal/pouchdbtest reads).
#
# The runner's integration tests need a real server speaking CouchDB's HTTP API that installs
# from the npm registry alone. hack/pouchdb/package-lock.json pins the whole dependency tree
# with integrity hashes, and `npm ci` installs exactly that tree. --ignore-scripts: the only
# install scripts in the tree build native storage modules (leveldown, sqlite3) that the tests
# never load (they run the server with --in-memory), and sqlite3's would try to download a
# prebuilt binary from a host this project's machines cannot reach.
#
# The install is skipped when OUTDIR already holds a complete install of the same lock file.
#
# Usage: hack/pouchdb.sh OUTDIR
set -euo pipefail

out=${1:?usage: hack/pouchdb.sh OUTDIR}
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/pouchdb" && pwd)

log() { echo "pouchdb: $*" >&2; }
die() {
  log "error: $*"
  exit 1
}

command -v node >/dev/null || die "node is not in PATH: pouchdb-server needs Node.js >= 20"
command -v npm >/dev/null || die "npm is not in PATH: it is needed to install pouchdb-server"
node_major=$(node -p 'process.versions.node.split(".")[0]')
((node_major >= 20)) || die "Node.js $(node --version) is too old: pouchdb-server is tested here on Node.js >= 20"

# node -p 'CODE' ARG: ARG is process.argv[1].
json_field() { # file js-expression-on-j
  node -p "const j = require(process.argv[1]); $2" "$1"
}
pinned=$(json_field "$src/package.json" 'j.dependencies["pouchdb-server"]')

mkdir -p "$out"
out=$(cd "$out" && pwd)
exe=$out/node_modules/.bin/pouchdb-server
# A copy of the lock file, written only after a successful install: an interrupted `npm ci`
# leaves no stamp, so the next run installs again.
stamp=$out/.installed-package-lock.json

installed() {
  [[ -x $exe ]] && cmp -s "$src/package-lock.json" "$stamp" &&
    [[ $(json_field "$out/node_modules/pouchdb-server/package.json" 'j.version' 2>/dev/null) == "$pinned" ]]
}

if installed; then
  log "pouchdb-server $pinned present"
else
  log "installing pouchdb-server $pinned into $out with npm ci (about a minute on a cold npm cache)"
  rm -f "$stamp"
  cp "$src/package.json" "$src/package-lock.json" "$out/"
  (cd "$out" && npm ci --ignore-scripts --no-audit --no-fund >&2) ||
    die "npm ci failed in $out (output above); it needs the npm registry"
  cp "$src/package-lock.json" "$stamp"
  installed || die "after npm ci, $exe is missing or does not report version $pinned"
fi

echo "$exe"
