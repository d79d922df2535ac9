# Sourced by the checks that run Python packages against Herald (.ci/api_fuzz.sh, .ci/clients.sh, .ci/webpush.sh).
# venv_ready VENV REQUIREMENTS: (re)creates VENV with the pinned REQUIREMENTS when the pins change;
# returns 0 when ready, 2 when PyPI is unreachable (the caller skips), and exits 1 when pip fails.
venv_ready() {
    local venv=$1 requirements=$2 want
    want=$(sha256sum "$requirements" | cut -d' ' -f1)
    if [ "$(cat "$venv/.requirements.sha256" 2>/dev/null)" = "$want" ]; then
        return 0
    fi
    rm -rf "$venv"
    python3 -m venv "$venv"
    if ! timeout 600 "$venv/bin/pip" install -q --disable-pip-version-check -r "$requirements"; then
        if ! timeout 20 "$venv/bin/pip" download -q --no-deps -d "$(mktemp -d)" six >/dev/null 2>&1; then
            rm -rf "$venv"
            return 2
        fi
        echo "pip install -r $requirements failed" >&2
        exit 1
    fi
    echo "$want" >"$venv/.requirements.sha256"
}
