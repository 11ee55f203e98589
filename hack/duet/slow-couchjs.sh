#!/usr/bin/env bash
# Writes a JavaScript query server that maps every document with more work than CouchDB's: a
# copy of a CouchDB release's share/server/main.js whose map step serializes each document K
# more times for each map function. Started with it (COUCHDB_QUERY_SERVER_JAVASCRIPT, which the
# release's bin/couchdb honours), a server builds the same views, right, at a cost that K
# sets: the slowdown on purpose of docs/drafts/issue40.md.
#
# Usage: hack/duet/slow-couchjs.sh RELEASE_DIR K OUT_FILE
#   then: COUCHDB_QUERY_SERVER_JAVASCRIPT="./bin/couchjs OUT_FILE" couchdb.sh start --dir ...
set -euo pipefail
release=${1:?usage: slow-couchjs.sh RELEASE_DIR K OUT_FILE}
k=${2:?usage: slow-couchjs.sh RELEASE_DIR K OUT_FILE}
out=${3:?usage: slow-couchjs.sh RELEASE_DIR K OUT_FILE}
src=$release/share/server/main.js
# The map step (Views.mapDoc) keeps each map function's rows with this line, once per function
# and document.
line='          buf.push(map_results);'
[[ $(grep -cxF "$line" "$src") == 1 ]] || {
  echo "slow-couchjs: $src has not exactly one line '$line'" >&2
  exit 1
}
sed "s|^$line\$|$line\n          for (var cbSlow = 0; cbSlow < $k; cbSlow++) { JSON.stringify(doc); }|" "$src" >"$out"
echo "$out"
