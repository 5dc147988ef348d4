#!/usr/bin/env bash
# The extension from real clients, against the cluster that PGHOST, PGPORT
# and PGUSER name (test/run_all.sh's throwaway cluster), in a database of
# their own:
#   - psql: the README's statements are in the regression tests (sql/);
#   - Python: psycopg2 (Debian's python3-psycopg2), clients.py;
#   - Node.js: node-postgres (npm "pg", major version 8), clients.js,
#     installed with the machine's npm into a cache outside the checkout
#     ($SIMHASH_CACHE, default ~/.cache/simhash), so a second run does not
#     install it again.
set -euo pipefail
cd "$(dirname "$0")/../.."

db=simhash_clients
PGOPTIONS='-c client_min_messages=warning' psql -X -q -v ON_ERROR_STOP=1 -d postgres \
	-c "DROP DATABASE IF EXISTS $db" -c "CREATE DATABASE $db"
psql -X -q -v ON_ERROR_STOP=1 -d $db -c "CREATE EXTENSION simhash"
export PGDATABASE=$db

rc=0
echo "-- psycopg2"
/usr/bin/python3 test/clients/clients.py || rc=1

echo "-- node-postgres"
cache=${SIMHASH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/simhash}/node
if [ ! -f "$cache/node_modules/pg/package.json" ]; then
	mkdir -p "$cache"
	npm install --silent --no-audit --no-fund --prefix "$cache" pg@8 >/dev/null
fi
NODE_PATH=$cache/node_modules node test/clients/clients.js || rc=1

psql -X -q -d postgres -c "DROP DATABASE $db"
exit $rc
