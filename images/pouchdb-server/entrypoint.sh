#!/bin/sh
# Starts pouchdb-server in memory on port 5984 with the admin from COUCHDB_USER and
# COUCHDB_PASSWORD. pouchdb-server rewrites its config file, so it lives in a writable
# directory (WORKDIR_DATA, default /tmp/pouchdb).
set -eu
dir=${WORKDIR_DATA:-/tmp/pouchdb}
mkdir -p "$dir"
cd "$dir"
node -e 'const fs = require("fs");
fs.writeFileSync("config.json", JSON.stringify({admins: {[process.env.COUCHDB_USER]: process.env.COUCHDB_PASSWORD},
  log: {file: process.argv[1] + "/log.txt"}}));' "$dir"
exec node /opt/pouchdb/node_modules/pouchdb-server/bin/pouchdb-server --in-memory -n --config "$dir/config.json" --host 0.0.0.0 --port 5984
