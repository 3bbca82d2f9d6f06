#!/usr/bin/env bash
# ccs-perf's command line: nccl-tests' flags and ccs-perf's own, usage
# errors (bad numbers, overflowing counts, empty size ranges), a bad plan,
# the columns of the table, a failure reported once per rank with a
# FAILED footer, and a wrong-result exit status never hidden behind exit 0.
set -u
. "$(dirname "$0")/common.bash"
PERF=$BUILD/bin/ccs-perf

"$BUILD/tests/test_runtime_exec" --write-plans "$tmp" || exit 1
r2=$tmp/ring1-r2.ccs
expect 2 "usage: ccs-perf" -- $PERF
expect 0 "nccl-tests options" -- $PERF --help
expect 2 "want threads, mpi, cuda or nccl" -- $PERF -X carrier-pigeon "$r2"
expect 2 "unknown type" -- $PERF -d float7 "$r2"
expect 2 "needs -X mpi" -- $PERF -B "$r2"
expect 2 "unknown option" -- $PERF --no-such-flag "$r2"
expect 2 "needs a value" -- $PERF "$r2" -n
# Numbers are numbers: no silent 0, no overflow, no endless size loop.
expect 2 "-n 'abc'" -- $PERF -n abc "$r2"
expect 2 "-K 'abc'" -- $PERF -K abc "$r2"
expect 2 "-K 18446744073709551615: buffers" -- $PERF -K 18446744073709551615 "$r2"
expect 2 "-K '99999999999999999999999'" -- $PERF -K 99999999999999999999999 "$r2"
expect 2 "-b '1Q'" -- $PERF -b 1Q "$r2"
expect 2 "-e '-5'" -- $PERF -e -5 "$r2"
expect 2 "-b 0: |smaller than one element" -- $PERF -b 0 -e 0 "$r2"
expect 2 "above -e" -- $PERF -b 2M -e 1M "$r2"
expect 2 "-f '1'" -- $PERF -f 1 "$r2"
expect 2 "-i and -f" -- $PERF -i 1K -f 2 "$r2"
expect 2 "-a '7'" -- $PERF -a 7 "$r2"
expect 2 "-T 'soon'" -- $PERF -T soon "$r2"
expect 2 "element counts are -K" -- $PERF -N 1,2 "$r2"
expect 2 "delay is -E" -- $PERF -D 5 "$r2"
expect 2 "plan's root is" -- $PERF -r 1 "$r2" -K 8
expect 2 "the plan has 2 ranks" -- $PERF -t 3 "$r2" -K 8
# --alternate: auto against the plain plan alone, in one run.
$BUILD/bin/ccsynth synth --algo stragglar --topo switch:4 --straggler 3 \
    -o "$tmp/s4.ccs" >/dev/null 2>&1 || { echo "FAIL: synth stragglar"; fail=1; }
$BUILD/bin/ccsynth synth --algo ring --topo switch:4 -o "$tmp/r4.ccs" \
    >/dev/null 2>&1 || { echo "FAIL: synth ring"; fail=1; }
expect 2 "--alternate: needs -Q" -- $PERF -Y 5 "$tmp/s4.ccs"
expect 2 "--alternate: needs -Q" -- $PERF -s auto -Y 5 "$tmp/s4.ccs"
expect 2 "-Q: a plain plan is for -s auto or --alternate" -- \
    $PERF -Q "$tmp/r4.ccs" "$tmp/s4.ccs"
expect 2 "--alternate '0'" -- $PERF -s auto -Q "$tmp/r4.ccs" -Y 0 "$tmp/s4.ccs"
expect 0 "# alternating every 5 calls, out of place / in place: auto [0-9.]+ / [0-9.]+ us, plain [0-9.]+ / [0-9.]+ us, auto/plain [0-9.]+ / [0-9.]+" -- \
    $PERF -s auto -Q "$tmp/r4.ccs" -Y 5 -K 1000 -n 20 -w 1 -c 2 "$tmp/s4.ccs"
# ... and a plan against itself (the pairing's own spread, no auto).
expect 0 "# alternating every 5 calls, out of place / in place: plan [0-9.]+ / [0-9.]+ us, plain [0-9.]+ / [0-9.]+ us, plan/plain [0-9.]+ / [0-9.]+" -- \
    $PERF -Q "$tmp/r4.ccs" -Y 5 -K 1000 -n 20 -w 1 -c 2 "$tmp/r4.ccs"
expect 3 "cannot open" -- $PERF "$tmp/missing.ccs"
printf 'not a plan' > "$tmp/junk.ccs"
expect 3 "junk.ccs" -- $PERF -P "$tmp/junk.ccs"
expect 0 "size +count +type +redop +root +time +algbw +busbw +#wrong" -- \
    $PERF "$tmp/ring1-r3.ccs" -b 1K -e 64K -f 8 -n 2 -w 1 -c 1
# -b 0 starts at the smallest size that holds an element; -i steps
expect 0 "^ +4 +1 +float32" -- $PERF "$r2" -b 0 -e 12 -i 4 -n 1 -w 0
expect 0 "Out of bounds values : 0 OK" -- \
    $PERF "$tmp/a2a-r4.ccs" -K 1,7,1000 -n 1 -w 0 -d all -c 1
expect 0 "bfloat16 +avg" -- \
    $PERF "$tmp/straggler-r4.ccs" -K 1001 -n 1 -w 0 -d bf16 -o avg -s 0 \
    -E 1000 -m 2 -a 3 -c 2 -T 30 -t 4
# The old spellings of the plan and transport flags still work.
expect 0 "transport threads" -- $PERF -p "$r2" -t threads -K 8 -n 1 -w 0
# JSON output
expect 0 "" -- $PERF "$r2" -K 8,9 -n 1 -w 0 -J "$tmp/out.json"
if ! python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert len(d["results"]) == 2 and d["status"] == "OK"' "$tmp/out.json"; then
    echo "FAIL: -J wrote no valid JSON: $(cat "$tmp/out.json")"
    fail=1
fi
# A failure: once per rank, later sizes skipped, footer FAILED, exit 3.
out=$($PERF "$tmp/straggler-r4.ccs" -K 7,8,9 -s 9 -n 1 -w 0 2>&1)
rc=$?
n=$(printf '%s\n' "$out" | grep -c "out of range")
if [ $rc -ne 3 ] || [ "$n" -ne 4 ] || ! printf '%s' "$out" | grep -q "Out of bounds values : 0 FAILED" ||
        [ "$(printf '%s\n' "$out" | grep -c ' error ')" -ne 1 ]; then
    echo "FAIL: straggler 9: exit $rc, $n 'out of range' lines (want 4 and exit 3), output:"
    printf '%s\n' "$out"
    fail=1
fi
exit $fail
