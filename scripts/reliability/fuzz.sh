#!/usr/bin/env bash
# Runs each cargo-fuzz target of the engine (packages/engine/fuzz) for a set time, one after
# the other on one core, and prints per target: runs, seconds, CPU seconds, crashes.
#
#   scripts/reliability/fuzz.sh [seconds-per-target]     (default 60)
#   FUZZ_TARGETS="run doc" scripts/reliability/fuzz.sh 300
#
# Needs the nightly toolchain (rustup) and cargo-fuzz, which it installs from crates.io when
# missing. Each target starts from its committed corpus (fuzz/corpus/<target>/, read only) plus
# what earlier runs found (fuzz/work/<target>/, not committed). A crash, an allocation over
# 256 MiB or an input that takes over 10 s stops that target and is saved under
# fuzz/artifacts/<target>/; reproduce with `cargo +nightly fuzz run -O -a <target> <file>`.
# Exits non-zero when any target crashed.
set -euo pipefail

seconds="${1:-60}"
targets="${FUZZ_TARGETS:-journal_record journal manifest run checkpoint doc csv}"
cd "$(dirname "$0")/../../packages/engine/fuzz"

if ! rustup toolchain list | grep -q '^nightly'; then
  rustup toolchain install nightly --profile minimal
fi
if ! command -v cargo-fuzz >/dev/null; then
  cargo install cargo-fuzz --locked
fi

# -O: optimised; -a: with debug assertions and overflow checks, so wrapping arithmetic is a crash.
# Built once; the targets then run as built (`cargo fuzz run` would rebuild on any change).
build=(-O -a)
cargo +nightly fuzz build "${build[@]}" >/dev/null
bin="target/$(rustc +nightly -vV | sed -n 's/^host: //p')/release"

failed=0
summary=()
for target in $targets; do
  mkdir -p "work/$target" "artifacts/$target"
  log="work/$target.log"
  before=$(find "artifacts/$target" -type f | wc -l)
  # One process, one thread (what -jobs=1 gives, without its fork and separate log).
  status=0
  /usr/bin/time -f '%U %S' -o "work/$target.cpu" \
    "$bin/$target" "work/$target" "corpus/$target" -artifact_prefix="artifacts/$target/" \
      -max_total_time="$seconds" -timeout=10 -malloc_limit_mb=256 -rss_limit_mb=2048 \
      -print_final_stats=1 >"$log" 2>&1 || status=$?
  runs=$(grep -oE '^stat::number_of_executed_units: *[0-9]+' "$log" | grep -oE '[0-9]+$' || true)
  [ -n "$runs" ] || runs=$(grep -oE '^#[0-9]+' "$log" | tail -1 | tr -d '#' || true)
  secs=$(grep -oE '^Done [0-9]+ runs in [0-9]+ second' "$log" | grep -oE 'in [0-9]+' | grep -oE '[0-9]+' || true)
  cpu=$(awk '{ printf "%.0f", $1 + $2 }' "work/$target.cpu" 2>/dev/null || echo '?')
  crashes=$(( $(find "artifacts/$target" -type f | wc -l) - before ))
  if [ "$status" -ne 0 ] && [ "$crashes" -eq 0 ]; then crashes=1; fi
  [ "$crashes" -eq 0 ] || failed=1
  line=$(printf '%-15s runs %10s   seconds %5s   cpu-seconds %5s   crashes %d' "$target" "${runs:-?}" "${secs:-$seconds}" "$cpu" "$crashes")
  echo "$line"
  [ "$crashes" -eq 0 ] || { grep -E 'ERROR|panicked|SUMMARY' "$log" | head -5 | sed 's/^/    /'; echo "    log: packages/engine/fuzz/$log"; }
  summary+=("$line")
done
echo
echo "fuzzed $(echo $targets | wc -w) targets, $seconds s each"
printf '%s\n' "${summary[@]}"
exit "$failed"
