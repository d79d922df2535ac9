#!/usr/bin/env bash
# Fuzzing: every cargo-fuzz target under fuzz/ for FUZZ_SECS seconds (default 15),
# starting from the committed seed corpus. cargo-fuzz needs nightly features; on a
# stable toolchain RUSTC_BOOTSTRAP=1 enables them. Prints executions per target;
# a crash fails the script and leaves its input under fuzz/artifacts/. Targets are
# safe Rust, so CI fuzzes without a sanitizer (`-s none`: a much shorter build);
# run `cargo fuzz run -s address <target>` by hand for the C dependencies too.
set -euo pipefail
cd "$(dirname "$0")/../fuzz"
export CARGO_TERM_COLOR=never RUSTC_BOOTSTRAP=1
# 15 s: a fresh-clone `.ci/run` took 3519 s with 30 s per target, close to
# CI's hour; the targets' depth is `.ci/reliability-long.sh`'s job.
secs="${FUZZ_SECS:-15}"

command -v cargo-fuzz >/dev/null || cargo install --locked cargo-fuzz

cargo fuzz build -s none
summary=""
# The targets that need a store open it under the temporary directory and never
# close it (libFuzzer exits the process): a scratch TMPDIR removed on exit keeps
# them from accumulating.
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
export TMPDIR="$scratch"
for target in $(cargo fuzz list); do
  corpus="$(mktemp -d)"
  cp corpus/"$target"/seed-* "$corpus"/
  log="$(mktemp)"
  echo "== cargo fuzz run $target (${secs} s)"
  if ! cargo fuzz run -s none "$target" "$corpus" -- -max_total_time="$secs" -print_final_stats=1 >"$log" 2>&1; then
    tail -n 60 "$log"
    echo "fuzz target $target crashed; input saved under fuzz/artifacts/$target/" >&2
    exit 1
  fi
  runs="$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo '?')"
  summary+="$target: $runs executions in ${secs} s, no crash"$'\n'
  rm -rf "$corpus" "$log"
done
echo "== fuzz summary"
printf '%s' "$summary"
