#!/usr/bin/env bash
# The MPI transport, 2..8 processes: every fixture plan (written by
# test_runtime_exec --write-plans) and every plan ccsynth can synthesize
# for switch:N, checked by ccs-perf -c 1 over datatypes x ops x counts
# 1, 7 and 1000003.  Exit 0 when every element of every run is right.
set -u
BUILD=${BUILD:-build}
PERF=$BUILD/bin/ccs-perf
C=$BUILD/bin/ccsynth
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl=self,vader OMPI_MCA_mpi_yield_when_idle=1
export CCS_TIMEOUT_S=60
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
runs=0

[ -x "$PERF" ] || { echo "missing $PERF"; exit 1; }
"$BUILD/tests/test_runtime_exec" --write-plans "$tmp" || exit 1

check() { # check PLAN NRANKS ARGS...
    local plan=$1 n=$2
    shift 2
    local out
    if ! out=$(timeout 120 mpirun --oversubscribe -np "$n" "$PERF" \
                   -p "$plan" -t mpi -n 1 -w 0 -c 1 "$@" 2>&1); then
        echo "FAIL: $(basename "$plan") np=$n $*"
        printf '%s\n' "$out" | tail -n 15
        fail=1
    fi
    runs=$((runs + 1))
}

# Every fixture at 2, 3, 4, 8 processes, full type x op matrix, small
# counts; the odd large count on a subset of types.
for n in 2 3 4 8; do
    for p in "$tmp"/*-r"$n".ccs; do
        check "$p" "$n" -d all -o all -N 1,7,1000
    done
done
for p in "$tmp"/*-r4.ccs; do
    check "$p" 4 -d float32 -o sum -N 1000003
done
check "$tmp/ring3-r5.ccs" 5 -d bfloat16 -o avg -N 1000003
check "$tmp/straggler-r4.ccs" 4 -d int64 -o max -N 7,1000 -s 1
check "$tmp/straggler-r6.ccs" 6 -d float16 -o sum -N 7,1000 -s 2 -D 20000

# Synthesized plans, where the algorithms exist yet: every algorithm x
# collective at 4 processes, allreduce also at 3.
if [ -x "$C" ]; then
    for algo in ring rhd allpairs dbtree stragglar multitree; do
        for coll in allreduce reducescatter allgather reduce broadcast alltoall; do
            for n in 3 4; do
                [ "$n" = 3 ] && [ "$coll" != allreduce ] && continue
                f="$tmp/syn-$algo-$coll-$n.ccs"
                extra=()
                [ "$algo" = stragglar ] && extra=(--straggler $((n - 1)))
                "$C" synth --algo "$algo" --coll "$coll" --topo "switch:$n" \
                    "${extra[@]}" -q -o "$f" >/dev/null 2>&1 || continue
                check "$f" "$n" -d all -o all -N 1,7
                [ "$n" = 4 ] && check "$f" "$n" -d float32 -o sum -N 1000003
            done
        done
    done
fi

echo "mpi_correct: $runs mpirun checks, $([ $fail -eq 0 ] && echo ok || echo FAILED)"
exit $fail
