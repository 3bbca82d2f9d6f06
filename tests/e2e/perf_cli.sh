#!/usr/bin/env bash
# ccs-perf's command line: usage errors, a bad plan, the columns of the
# table, and a wrong-result exit status never hidden behind exit 0.
set -u
. "$(dirname "$0")/common.bash"
PERF=$BUILD/bin/ccs-perf

"$BUILD/tests/test_runtime_exec" --write-plans "$tmp" || exit 1
expect 2 "usage: ccs-perf" -- $PERF
expect 2 "usage: ccs-perf" -- $PERF -p "$tmp/ring1-r2.ccs" -t carrier-pigeon
expect 2 "unknown type" -- $PERF -p "$tmp/ring1-r2.ccs" -d float7
expect 2 "needs -t mpi" -- $PERF -p "$tmp/ring1-r2.ccs" -B
expect 3 "cannot open" -- $PERF -p "$tmp/missing.ccs"
printf 'not a plan' > "$tmp/junk.ccs"
expect 3 "junk.ccs" -- $PERF -p "$tmp/junk.ccs"
expect 0 "size +count +type +redop +root +time +algbw +busbw +#wrong" -- \
    $PERF -p "$tmp/ring1-r3.ccs" -b 1K -e 64K -f 8 -n 2 -w 1 -c 1
expect 0 "Out of bounds values : 0 OK" -- \
    $PERF -p "$tmp/a2a-r4.ccs" -N 1,7,1000 -n 1 -w 0 -d all -c 1
expect 0 "bfloat16 +avg" -- \
    $PERF -p "$tmp/straggler-r4.ccs" -N 1001 -n 1 -w 0 -d bf16 -o avg -s 0
expect 3 "out of range" -- $PERF -p "$tmp/straggler-r4.ccs" -N 7 -s 9
exit $fail
