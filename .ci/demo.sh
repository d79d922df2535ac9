# Sourced by the checks run against `herald serve --demo` (.ci/api_fuzz.sh, .ci/clients.sh,
# .ci/webpush.sh).
#
# demo_start [VAR=VALUE...]: builds herald, starts `serve --demo` on a free loopback port with the
# given variables added to its environment, and waits until it answers /readyz and has printed
# its simulators' control address. Sets BIN, WORK (a temporary directory), URL, CONTROL (the
# simulators' control address) and HERALD_PID, and exports HERALD_OPERATOR_TOKEN. The server's
# standard output goes to $WORK/herald.out, its log to $WORK/herald.log. On exit, demo_stop stops
# the server and removes WORK (a caller that replaces the EXIT trap calls it itself).
demo_start() {
    # The selection of `cargo test --workspace`, whose build this reuses (.ci/run).
    cargo build -q --workspace --bins --examples
    BIN=${CARGO_TARGET_DIR:-target}/debug/herald
    WORK=$(mktemp -d)
    local port ready= attempt
    export HERALD_OPERATOR_TOKEN=${HERALD_OPERATOR_TOKEN:-ci-operator-$RANDOM$RANDOM}
    trap demo_stop EXIT
    # The public URL names the port, so it is chosen here; another process may take it between
    # the probe and Herald's bind, and then Herald exits and is started on another one.
    for attempt in 1 2 3; do
        port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
        URL=http://127.0.0.1:$port
        env HERALD_LISTEN="127.0.0.1:$port" HERALD_DATA_DIR="$WORK/data" HERALD_PUBLIC_URL="$URL" "$@" \
            "$BIN" serve --demo >"$WORK/herald.out" 2>"$WORK/herald.log" &
        HERALD_PID=$!
        for _ in $(seq 1 300); do
            # The demo tenant is seeded before the server listens.
            if curl -fsS "$URL/readyz" >/dev/null 2>&1 && grep -q '/stats$' "$WORK/herald.out"; then
                ready=1
                break
            fi
            kill -0 "$HERALD_PID" 2>/dev/null || break
            sleep 0.2
        done
        [ -n "$ready" ] && break
        grep -qi 'address already in use' "$WORK/herald.log" || break
        echo "127.0.0.1:$port was taken (attempt $attempt); another port" >&2
    done
    if [ -z "$ready" ]; then
        echo "herald serve --demo did not become ready" >&2
        demo_log_tail
        exit 1
    fi
    CONTROL=$(grep -o 'http://[0-9.:]*/stats$' "$WORK/herald.out" | head -1 | sed 's|/stats$||')
}

# demo_stop: stops the server and removes WORK.
demo_stop() {
    kill "$HERALD_PID" 2>/dev/null || true
    wait "$HERALD_PID" 2>/dev/null || true
    rm -rf "$WORK"
}

# demo_log_tail: the end of the server's log, its warnings and errors first (JSON log format).
demo_log_tail() {
    echo "--- server log: warnings and errors (last 20) ---" >&2
    grep -E '"level":"(WARN|ERROR)"' "$WORK/herald.log" | tail -20 >&2 || true
    echo "--- server log: last 30 lines ---" >&2
    tail -30 "$WORK/herald.log" >&2
}
