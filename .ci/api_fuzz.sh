#!/usr/bin/env bash
# The served OpenAPI document, checked from outside:
#  1. openapi-spec-validator (PyPI) validates GET /openapi.json of a running `herald serve --demo`;
#  2. schemathesis (PyPI) runs every operation of that document against the server with real
#     tokens (operator token; tenant admin token from the password grant) and fails on any 5xx
#     or any answer that violates the document (status, content type, body schema).
# Bounded: HERALD_FUZZ_EXAMPLES cases per operation and phase (default 20); the fuzzing phase repeats
# until HERALD_FUZZ_SECONDS (default 180) are spent.
# Packages are pinned in .ci/api_fuzz/requirements.txt and installed into a venv under the target
# directory (HERALD_CI_VENV). Skips (exit 0) only when PyPI is unreachable. HERALD_FUZZ_KEEP=<dir>
# keeps the server log and events.
set -euo pipefail
cd "$(dirname "$0")/.."

TARGET=${CARGO_TARGET_DIR:-target}
VENV=${HERALD_CI_VENV:-$TARGET/ci-venv}
EXAMPLES=${HERALD_FUZZ_EXAMPLES:-20}
SECONDS_BUDGET=${HERALD_FUZZ_SECONDS:-180}
SEED=${HERALD_FUZZ_SEED:-20261122}

. .ci/venv.sh
venv_ready "$VENV" .ci/api_fuzz/requirements.txt || {
    echo "SKIP api_fuzz: PyPI is unreachable (openapi-spec-validator and schemathesis not installed)"
    exit 0
}

. .ci/demo.sh
demo_start HERALD_ACCESS_TOKEN_TTL=7200 HERALD_LOG_FORMAT=json
keep_and_stop() {
    if [ -n "${HERALD_FUZZ_KEEP:-}" ]; then
        mkdir -p "$HERALD_FUZZ_KEEP" && cp -r "$WORK"/herald.log "$WORK"/events.ndjson "$WORK"/openapi.json "$HERALD_FUZZ_KEEP"/ 2>/dev/null || true
    fi
    demo_stop
}
trap keep_and_stop EXIT

ADMIN_TOKEN=$(curl -fsS "$URL/auth/realms/demo/protocol/openid-connect/token" \
    -d grant_type=password -d username=admin -d password=demo-password 2>/dev/null \
    | python3 -c 'import json,sys; print(json.load(sys.stdin)["access_token"])' 2>/dev/null || true)
[ -n "$ADMIN_TOKEN" ] || { echo "no demo admin token" >&2; demo_log_tail; exit 1; }
# The fuzzer's own admin, named nowhere in its dictionaries: cases that disable,
# demote or delete the dictionary's users (admin among them) would otherwise
# revoke the fuzzer's token and leave the rest of the run at 401.
FUZZ_PASSWORD=fuzz-$RANDOM$RANDOM-password
curl -fsS "$URL/auth/realms/demo/users" -H "authorization: Bearer $ADMIN_TOKEN" -H 'content-type: application/json' \
    -d "{\"username\": \"fuzz-admin\", \"enabled\": true, \"credentials\": [{\"type\": \"password\", \"value\": \"$FUZZ_PASSWORD\"}]}" >/dev/null
curl -fsS -X PUT "$URL/auth/realms/demo/users/fuzz-admin/admin" -H "authorization: Bearer $ADMIN_TOKEN" >/dev/null
FUZZ_TOKEN=$(curl -fsS "$URL/auth/realms/demo/protocol/openid-connect/token" \
    -d grant_type=password -d username=fuzz-admin -d "password=$FUZZ_PASSWORD" \
    | python3 -c 'import json,sys; print(json.load(sys.stdin)["access_token"])')
export HERALD_ADMIN_TOKEN=$FUZZ_TOKEN

# The demo's client ids, as a schemathesis dictionary (path and query `astClientId`).
CLIENTS=$(python3 - "$URL" "$ADMIN_TOKEN" <<'PY'
import json, sys, urllib.request
ids = []
for user in ("alice", "bob"):
    req = urllib.request.Request(f"{sys.argv[1]}/v1/tenants/demo/users/{user}/clients",
                                 headers={"authorization": "Bearer " + sys.argv[2]})
    ids += [c["astClientId"] for c in json.load(urllib.request.urlopen(req, timeout=10))]
print(json.dumps(ids))
PY
)
cp .ci/schemathesis.toml "$WORK/schemathesis.toml"
printf '\n[dictionaries.clients]\nvalues = %s\n' "$CLIENTS" >>"$WORK/schemathesis.toml"

echo "== openapi-spec-validator $URL/openapi.json"
curl -fsS "$URL/openapi.json" -o "$WORK/openapi.json"
"$VENV/bin/openapi-spec-validator" "$WORK/openapi.json"
OPS=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(sum(len(v) for v in d["paths"].values()))' "$WORK/openapi.json")
echo "document valid: $OPS operations"

echo "== schemathesis: $OPS operations, up to $EXAMPLES examples each, seed $SEED, budget ${SECONDS_BUDGET}s"
status=0
timeout $((SECONDS_BUDGET + 60)) "$VENV/bin/schemathesis" --config-file "$WORK/schemathesis.toml" run "$URL/openapi.json" \
    --checks not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance \
    --max-examples "$EXAMPLES" --seed "$SEED" --max-time "$SECONDS_BUDGET" \
    --phases examples,coverage,fuzzing --no-color --output-truncate false \
    --report ndjson --report-ndjson-path "$WORK/events.ndjson" || status=$?
if [ -f "$WORK/events.ndjson" ]; then
    python3 - "$WORK/events.ndjson" <<'PY' || true
import json, sys
cases = 0
for line in open(sys.argv[1]):
    try:
        ev = json.loads(line)
    except ValueError:
        continue
    for key in ("ScenarioFinished",):
        if key in ev:
            rec = ev[key].get("recorder", {})
            cases += len(rec.get("cases", {}))
print(f"schemathesis cases run: {cases}")
PY
fi
if grep -q '"level":"ERROR"' "$WORK/herald.log"; then
    echo "server errors logged during the run:"
    grep '"level":"ERROR"' "$WORK/herald.log" | head -20
fi
exit $status
