#!/usr/bin/env bash
# The issue window (hazard-ordered issue) through ccs-perf: -W usage
# errors; every fixture plan at 3, 4 and 8 ranks and synthesized ring,
# stragglar (pipelined) and dbtree plans, each with windows 2, 4 and 8 on
# the threads transport, checked by ccs-perf -c 1 over every datatype x op;
# the same with window 4 on the MPI transport (3 and 4 processes, -W and
# CCS_ISSUE_WINDOW, a late straggler relabelled per call) when ccs-perf
# has MPI.  Exit 0 when every element of every run is right.
set -u
. "$(dirname "$0")/common.bash"
PERF=$BUILD/bin/ccs-perf
runs=0

[ -x "$PERF" ] || { echo "missing $PERF"; exit 1; }
"$BUILD/tests/test_runtime_exec" --write-plans "$tmp" || exit 1
r4=$tmp/ring1-r4.ccs
expect 2 "-W '0': want a window of 1..64" -- $PERF -W 0 "$r4"
expect 2 "-W '65'" -- $PERF -W 65 "$r4"
expect 2 "-W 'x'" -- $PERF --window x "$r4"
expect 0 "issue window 4" -- $PERF -W 4 -K 1000 -n 1 -w 0 "$r4"

for n in 4 8; do
    "$C" synth -a ring -t switch:$n -o "$tmp/s-ring-$n.ccs" >/dev/null 2>&1 &&
    "$C" synth -a dbtree -t switch:$n -o "$tmp/s-dbtree-$n.ccs" >/dev/null 2>&1 &&
    "$C" synth -a stragglar -t switch:$n --straggler $((n - 1)) \
        --pipeline 8 -o "$tmp/s-strag-$n.ccs" >/dev/null 2>&1 ||
        { echo "FAIL: synth at $n ranks"; fail=1; }
done

check() { # check PLAN ARGS...
    local plan=$1 out
    shift
    if ! out=$(timeout -k 10 300 "$PERF" -P "$plan" -n 1 -w 0 -c 1 "$@" \
                   </dev/null 2>&1); then
        echo "FAIL: $(basename "$plan") $*"
        printf '%s\n' "$out" | tail -n 15
        fail=1
    fi
    runs=$((runs + 1))
}

export CCS_TIMEOUT_S=60 CCS_SMALL_BYTES=0
for w in 2 4 8; do
    for n in 3 4 8; do
        for p in "$tmp"/*-r"$n".ccs; do
            check "$p" -W $w -d all -o all -K 1,7,1000
        done
    done
    for p in "$tmp"/s-*.ccs; do
        check "$p" -W $w -d all -o sum -K 7,1000,1000003
    done
done
check "$tmp/s-strag-8.ccs" -W 4 -d float32 -o sum -K 100000 -s 2 -E 20000

if command -v mpirun >/dev/null; then
    . "$(dirname "$0")/mpi.bash"
    mcheck() { # mcheck PLAN NP ARGS...
        local plan=$1 n=$2 out
        shift 2
        if ! out=$(timeout -k 10 120 mpirun --oversubscribe -np "$n" \
                       -x CCS_SMALL_BYTES=0 "$PERF" -P "$plan" -X mpi \
                       -n 1 -w 0 -c 1 "$@" </dev/null 2>&1); then
            echo "FAIL: mpi $(basename "$plan") np=$n $*"
            printf '%s\n' "$out" | tail -n 15
            fail=1
        fi
        runs=$((runs + 1))
    }
    for n in 3 4; do
        for p in "$tmp"/*-r"$n".ccs; do
            mcheck "$p" "$n" -W 4 -d all -o all -K 1,7,1000
        done
    done
    for p in "$tmp"/s-*-4.ccs; do
        mcheck "$p" 4 -W 4 -d all -o sum -K 7,1000,1000003
    done
    # the window from the environment; a late straggler relabelled
    out=$(timeout -k 10 120 mpirun --oversubscribe -np 4 \
              -x CCS_ISSUE_WINDOW=4 -x CCS_SMALL_BYTES=0 "$PERF" \
              -P "$tmp/s-strag-4.ccs" -X mpi -n 2 -w 0 -c 1 -K 1000 \
              -s 1 -E 20000 </dev/null 2>&1) ||
        { echo "FAIL: mpi CCS_ISSUE_WINDOW=4 straggler"; \
          printf '%s\n' "$out" | tail -n 15; fail=1; }
    runs=$((runs + 1))
else
    echo "dataflow_exec: no mpirun: threads only"
fi
echo "dataflow_exec: $runs ccs-perf runs"
exit $fail
