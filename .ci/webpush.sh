#!/usr/bin/env bash
# Web Push interoperability (.ci/webpush/interop.py): Herald's encrypted messages decrypted by
# PyPI's http_ece and its VAPID JWTs verified with the cryptography package, independently of
# Herald's own code, against `herald serve --demo` (its in-process Web Push simulator) on a free
# loopback port. Packages are pinned in .ci/webpush/requirements.txt and installed into a venv
# under the target directory (HERALD_WEBPUSH_VENV). Skips (exit 0) only when PyPI is unreachable.
set -euo pipefail
cd "$(dirname "$0")/.."

TARGET=${CARGO_TARGET_DIR:-target}
VENV=${HERALD_WEBPUSH_VENV:-$TARGET/ci-webpush-venv}
REQUIREMENTS=.ci/webpush/requirements.txt

. .ci/venv.sh
venv_ready "$VENV" "$REQUIREMENTS" || {
    echo "SKIP webpush interop: PyPI is unreachable (http_ece is not installed)"
    exit 0
}

cargo build -q -p herald --bin herald
BIN=$TARGET/debug/herald
WORK=$(mktemp -d)
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
URL=http://127.0.0.1:$PORT
HERALD_OPERATOR_TOKEN=ci-operator-$RANDOM$RANDOM HERALD_LISTEN=127.0.0.1:$PORT HERALD_DATA_DIR=$WORK/data \
    HERALD_PUBLIC_URL=$URL "$BIN" serve --demo >"$WORK/herald.out" 2>"$WORK/herald.log" &
HERALD_PID=$!
cleanup() {
    kill "$HERALD_PID" 2>/dev/null || true
    wait "$HERALD_PID" 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT

ready=
for _ in $(seq 1 300); do
    if curl -fsS "$URL/readyz" >/dev/null 2>&1 && grep -q '/stats$' "$WORK/herald.out"; then ready=1; break; fi
    kill -0 "$HERALD_PID" 2>/dev/null || break
    sleep 0.2
done
[ -n "$ready" ] || { echo "herald serve --demo did not become ready" >&2; tail -30 "$WORK/herald.log" >&2; exit 1; }
CONTROL=$(grep -o 'http://[0-9.:]*/stats$' "$WORK/herald.out" | head -1 | sed 's|/stats$||')
CREDS=$WORK/data/demo/creds

status=0
HERALD_URL=$URL SIM_CONTROL=$CONTROL WEBPUSH_KEYS=$CREDS/webpush_subscription_keys.json \
    WEBPUSH_SUBSCRIPTIONS=$CREDS/webpush_subscriptions.json \
    timeout 120 "$VENV/bin/python" .ci/webpush/interop.py || status=$?
[ "$status" -eq 0 ] || tail -30 "$WORK/herald.log" >&2
exit $status
