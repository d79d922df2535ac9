#!/usr/bin/env bash
# The long forms of the reliability suites (not part of .ci/run): 100 SIGKILLs,
# 25 SIGKILLs mid-broadcast counting resends, a 200 000-token broadcast with 10
# minutes of interactive sends under provider faults, and 10 minutes of fuzzing
# per target. Prints the figures the README quotes.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TERM_COLOR=never
HERALD_CRASH_KILLS="${HERALD_CRASH_KILLS:-100}" \
  cargo test --release -p herald --test it -- crash:: --nocapture
HERALD_RESEND_KILLS="${HERALD_RESEND_KILLS:-25}" \
  cargo test --release -p herald --test it -- resends:: --nocapture
HERALD_SOAK_TOKENS="${HERALD_SOAK_TOKENS:-200000}" HERALD_SOAK_SECS="${HERALD_SOAK_SECS:-600}" \
  cargo test --release -p herald --test it -- fault_soak:: --nocapture
FUZZ_SECS="${FUZZ_SECS:-600}" .ci/fuzz.sh
