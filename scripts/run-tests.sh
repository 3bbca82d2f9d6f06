#!/usr/bin/env bash
# Run every test program and the end-to-end scripts; print one closing line
# "tests: N passed, N failed" and exit non-zero on any failure.
set -u
BUILD=${BUILD:-build}
# Each program or script gets at most this many seconds, so a test that
# hangs (or a check that regresses to work unrelated to its input's size)
# fails the run instead of stalling it.
LIMIT=${TEST_TIMEOUT:-900}
cd "$(dirname "$0")/.."
passed=0
failed=0
failures=()

for t in "$BUILD"/tests/test_*; do
    [ -x "$t" ] || continue
    case "$t" in *.o|*.d) continue ;; esac
    # Programs with options here: the cuda transport's GPU test on the fake
    # CUDA runtime runs its small subset (all of it: make cuda-fake-full).
    args=()
    case "$(basename "$t")" in
    test_cuda_xport_fake) args=(--small) ;;
    esac
    # Sanitizer runs give the unit-test programs their own ASAN_OPTIONS:
    # the full unwind Open MPI's leak suppressions need only slows them.
    out=$(ASAN_OPTIONS=${CCS_UNIT_ASAN_OPTIONS:-${ASAN_OPTIONS-}} timeout "$LIMIT" "$t" "${args[@]}" 2>&1)
    rc=$?
    [ $rc -eq 124 ] && out="$out
$(basename "$t"): killed after ${LIMIT} s (TEST_TIMEOUT)"
    line=$(printf '%s\n' "$out" | grep -E '[0-9]+ passed, [0-9]+ failed' | tail -n 1)
    p=$(printf '%s' "$line" | sed -nE 's/.* ([0-9]+) passed.*/\1/p')
    f=$(printf '%s' "$line" | sed -nE 's/.* ([0-9]+) failed.*/\1/p')
    if [ -z "$p" ]; then p=0; f=1; fi
    if [ $rc -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi
    passed=$((passed + p))
    failed=$((failed + f))
    if [ "$f" -ne 0 ]; then
        failures+=("$t")
        printf '%s\n' "$out" | tail -n 40
    fi
    printf '  %-40s %s\n' "$(basename "$t")" "${line:-exit $rc}"
done

for e in tests/e2e/*.sh; do
    [ -f "$e" ] || continue
    out=$(BUILD="$BUILD" timeout "$LIMIT" bash "$e" 2>&1)
    rc=$?
    if [ $rc -eq 0 ]; then
        passed=$((passed + 1))
        printf '  %-40s ok\n' "$(basename "$e")"
    else
        failed=$((failed + 1))
        failures+=("$e")
        printf '%s\n' "$out" | tail -n 40
        [ $rc -eq 124 ] && echo "$(basename "$e"): killed after ${LIMIT} s (TEST_TIMEOUT)"
        printf '  %-40s FAILED (exit %d)\n' "$(basename "$e")" "$rc"
    fi
done

if [ ${#failures[@]} -gt 0 ]; then
    echo "failing: ${failures[*]}"
fi
echo "tests: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
