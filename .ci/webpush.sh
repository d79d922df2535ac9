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

. .ci/demo.sh
demo_start
CREDS=$WORK/data/demo/creds

status=0
HERALD_URL=$URL SIM_CONTROL=$CONTROL WEBPUSH_KEYS=$CREDS/webpush_subscription_keys.json \
    WEBPUSH_SUBSCRIPTIONS=$CREDS/webpush_subscriptions.json \
    timeout 120 "$VENV/bin/python" .ci/webpush/interop.py || status=$?
[ "$status" -eq 0 ] || demo_log_tail
exit $status
