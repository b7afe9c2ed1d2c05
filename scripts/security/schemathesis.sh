#!/bin/sh
# Schemathesis (PyPI) against the HTTP API's /openapi.json of a real server, for a set time:
# every response must be one the document allows (status, schema, content type), never a 500.
#
#   scripts/security/schemathesis.sh [SECONDS]        default 120; needs python3 (venv) and network to PyPI once
#
# It makes a venv in .venv-schemathesis (reused), starts the server on a temporary data directory
# with free ports (test/helpers/spawn-server.ts's way), runs schemathesis with --max-time SECONDS,
# stops the server and prints schemathesis's summary. Exit status: schemathesis's. The coverage
# phase is left out: schemathesis 4.32's coverage generator crashes inside hypothesis on Python
# 3.11 ("AST constructor recursion depth mismatch"), before any request.
set -eu
cd "$(dirname "$0")/../.."
SECONDS_BUDGET="${1:-120}"
VENV=.venv-schemathesis
if [ ! -x "$VENV/bin/schemathesis" ]; then
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q 'schemathesis>=4,<5'
fi
DATA=$(mktemp -d)
LOG=$(mktemp)
NODE_OPTIONS="${NODE_OPTIONS:-} --conditions=wharf-source" WHARF_PASSWORD='' \
  node --import tsx packages/server/src/main.ts --data "$DATA" --http-port 0 --driver-port off --log-level info \
  --limit httpBodyBytes=65536 >"$LOG" 2>&1 &
PID=$!
cleanup() { kill "$PID" 2>/dev/null || true; wait "$PID" 2>/dev/null || true; rm -rf "$DATA" "$LOG"; }
trap cleanup EXIT INT TERM
PORT=""
for _ in $(seq 1 300); do
  PORT=$(grep '"wharf listening"' "$LOG" | sed -n 's/.*"http":{"host":"[^"]*","port":\([0-9]*\)}.*/\1/p' | head -1)
  [ -n "$PORT" ] && break
  sleep 0.1
done
[ -n "$PORT" ] || { echo "server did not start:"; cat "$LOG"; exit 1; }
# A table for the routes that need one.
curl -s -o /dev/null -H 'content-type: application/json' -d '{"name":"people"}' "http://127.0.0.1:$PORT/api/tables"
set +e
"$VENV/bin/schemathesis" run "http://127.0.0.1:$PORT/openapi.json" \
  --max-time "$SECONDS_BUDGET" --checks not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance \
  --phases examples,fuzzing,stateful --suppress-health-check all --workers 2
STATUS=$?
set -e
exit $STATUS
