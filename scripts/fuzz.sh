#!/usr/bin/env bash
# Run every libFuzzer harness built by `make fuzz` for FUZZ_TIME seconds
# each, starting from its checked-in seeds (tests/fuzz/corpus/<target>/,
# read only: new inputs go to a temporary directory).  Prints one line per
# harness (executions, coverage) and exits 1 on any crash, leak, sanitizer
# report or timeout; the input that caused it is left in fuzz-artifacts/.
set -u
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build-fuzz}
FUZZ_TIME=${FUZZ_TIME:-10}
art=fuzz-artifacts
mkdir -p "$art"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failed=0

for bin in "$BUILD"/fuzz/fuzz_*; do
    case "$bin" in *.o|*.d) continue ;; esac
    [ -x "$bin" ] || continue
    name=$(basename "$bin")
    target=${name#fuzz_}
    seeds=tests/fuzz/corpus/$target
    mkdir -p "$work/$target"
    log=$work/$target.log
    # -timeout: no single input may take longer; -rss_limit_mb: nor more
    # memory (a loader must refuse what would need more).
    "$bin" "$work/$target" ${seeds:+"$seeds"} \
        -max_total_time="$FUZZ_TIME" -timeout=20 -rss_limit_mb=4096 \
        -max_len=65536 -print_final_stats=1 \
        -artifact_prefix="$art/$target-" >"$log" 2>&1
    rc=$?
    execs=$(sed -nE 's/^stat::number_of_executed_units: *([0-9]+).*/\1/p' "$log")
    cov=$(grep -E '^#[0-9]+' "$log" | tail -n 1 | sed -nE 's/.*cov: ([0-9]+).*ft: ([0-9]+).*corp: ([0-9]+).*/cov \1, features \2, corpus \3/p')
    if [ $rc -ne 0 ]; then
        failed=1
        tail -n 40 "$log"
        printf 'fuzz %-12s FAILED (exit %d) after %s runs; see %s/\n' \
            "$target" "$rc" "${execs:-?}" "$art"
    else
        printf 'fuzz %-12s ok: %s runs in %ss, %s\n' "$target" \
            "${execs:-?}" "$FUZZ_TIME" "${cov:-?}"
    fi
done
exit $failed
