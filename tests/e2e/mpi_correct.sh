#!/usr/bin/env bash
# The MPI transport, 2..8 processes: every fixture plan (written by
# test_runtime_exec --write-plans) and every algorithm's plan for every
# collective it declares, synthesized for switch:N, checked by ccs-perf -c 1
# (independent reference, order-independent inputs, wrong elements counted)
# over datatypes x ops x counts 1, 7, 1000 and 1000003, out of place and in
# place.  Exit 0 when every element of every run is right.
#
# CCS_E2E_SMALL=1 (the Makefile sets it for sanitizer builds, where every
# MPI start costs seconds of unwinding): 3 and 4 processes instead of
# 2, 3, 4 and 8 (allreduce plans also at 3), the count 1000003 on two
# fixtures and every allreduce plan instead of every plan; still every
# fixture, algorithm x collective, datatype and op, odd and even process
# counts, the large count, refusals and fault cases.
set -u
BUILD=${BUILD:-build}
PERF=$BUILD/bin/ccs-perf
C=$BUILD/bin/ccsynth
. "$(dirname "$0")/mpi.bash"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
runs=0
small=${CCS_E2E_SMALL:-0}
if [ "$small" = 1 ]; then
    fixture_np="3 4"; synth_np="3 4"
else
    fixture_np="2 3 4 8"; synth_np="2 3 4 8"
fi

[ -x "$PERF" ] || { echo "missing $PERF"; exit 1; }
"$BUILD/tests/test_runtime_exec" --write-plans "$tmp" || exit 1

# SMALL_BYTES: the runtime's small-allreduce exchange limit passed to every
# process (unset: the library's default).
check() { # check PLAN NRANKS ARGS...
    local plan=$1 n=$2
    shift 2
    local out env=()
    [ -n "${SMALL_BYTES-}" ] && env=(-x "CCS_SMALL_BYTES=$SMALL_BYTES")
    if ! out=$(timeout -k 10 120 mpirun --oversubscribe -np "$n" "${env[@]}" "$PERF" \
                   -P "$plan" -X mpi -n 1 -w 0 -c 1 "$@" </dev/null 2>&1); then
        echo "FAIL: $(basename "$plan") np=$n $*"
        printf '%s\n' "$out" | tail -n 15
        fail=1
    fi
    runs=$((runs + 1))
}

# Every fixture at 2, 3, 4, 8 processes, full type x op matrix, small
# counts; the odd large count on a subset of types.  Small allreduces take
# the library's default here (the one-step exchange).
for n in $fixture_np; do
    for p in "$tmp"/*-r"$n".ccs; do
        check "$p" "$n" -d all -o all -K 1,7,1000
    done
done
for p in "$tmp"/*-r4.ccs; do
    if [ "$small" = 1 ]; then
        case $(basename "$p") in ring1-*|a2a-*) ;; *) continue ;; esac
    fi
    check "$p" 4 -d float32 -o sum -K 1000003
done
check "$tmp/ring3-r5.ccs" 5 -d bfloat16 -o avg -K 1000003
check "$tmp/straggler-r4.ccs" 4 -d int64 -o max -K 7,1000 -s 1
check "$tmp/straggler-r6.ccs" 6 -d float16 -o sum -K 7,1000 -s 2 -E 20000

# Synthesized plans: every algorithm of `ccsynth list` (milp included) x
# every collective it declares, at 3 and 4 processes, full type x op
# matrix, counts 1, 7, 1000; 1000003 at 4; allreduce also at 2 and 8.  A
# declared collective that does not synthesize is a failure, not a skip.
# Every plan is replayed step by step even at small counts (the one-step
# exchange would otherwise stand in for it there).
SMALL_BYTES=0
[ -x "$C" ] || { echo "missing $C"; exit 1; }
# "algo coll,coll,..." per line, from the registry listing
"$C" list | awk '/^algorithms:/ {a = 1; next} /^[^ ]/ {a = 0}
    a && /^  [a-z]/ {name = $1}
    a && /^ +\[/ {gsub(/[][ ]/, ""); print name, $0}' > "$tmp/algos"
nalgos=$(wc -l < "$tmp/algos")
[ "$nalgos" -ge 7 ] || { echo "FAIL: ccsynth list gave $nalgos algorithms"; fail=1; }
synths=0
while read -r -u 3 algo colls; do
    for coll in ${colls//,/ }; do
        for n in $synth_np; do
            case $n in 2|8) [ "$coll" = allreduce ] || continue ;; esac
            # small: allreduce at 3 and 4, the other collectives at 4
            [ "$small" = 1 ] && [ "$n" = 3 ] && [ "$coll" != allreduce ] &&
                continue
            f="$tmp/syn-$algo-$coll-$n.ccs"
            extra=()
            [ "$algo" = stragglar ] && extra=(--straggler $((n - 1)))
            # nvls=on: the in-switch algorithm synthesizes too; the
            # attribute changes no other plan
            if ! "$C" synth --algo "$algo" --coll "$coll" --topo "switch:$n,nvls=on" \
                    "${extra[@]}" -q -o "$f" >"$tmp/synth.log" 2>&1; then
                echo "FAIL: $algo $coll switch:$n declared but not synthesized:"
                cat "$tmp/synth.log"
                fail=1
                continue
            fi
            synths=$((synths + 1))
            check "$f" "$n" -d all -o all -K 1,7,1000
            [ "$n" = 4 ] && { [ "$small" = 0 ] || [ "$coll" = allreduce ]; } &&
                check "$f" "$n" -d float32 -o sum -K 1000003
        done
    done
done 3< "$tmp/algos"
# StragglAR's own plan, straggler chosen per call and 20 ms late.
check "$tmp/syn-stragglar-allreduce-4.ccs" 4 -d float32 -o sum -K 1000,1000003 -s 0 -E 20000
if [ "$small" = 1 ]; then
    check "$tmp/syn-stragglar-allreduce-3.ccs" 3 -d bfloat16 -o avg -K 7,1000 -s 1 -E 20000
else
    check "$tmp/syn-stragglar-allreduce-8.ccs" 8 -d bfloat16 -o avg -K 7,1000 -s 3 -E 20000
fi

# Calls that do not fit are refused on every process, with the message,
# before any data moves (exit 3: runtime error).
refused() { # refused PLAN NRANKS PATTERN ARGS...
    local plan=$1 n=$2 pat=$3 out rc
    shift 3
    out=$(timeout -k 10 60 mpirun --oversubscribe -np "$n" "$PERF" -P "$plan" \
              -X mpi -n 1 -w 0 -c 1 "$@" </dev/null 2>&1)
    rc=$?
    if [ $rc -eq 0 ] || ! printf '%s' "$out" | grep -qE -- "$pat"; then
        echo "FAIL: $(basename "$plan") np=$n $*: exit $rc, want /$pat/"
        printf '%s\n' "$out" | tail -n 8
        fail=1
    fi
    runs=$((runs + 1))
}
refused "$tmp/syn-stragglar-allreduce-4.ccs" 4 "straggler 9 out of range" -K 7 -s 9
refused "$tmp/ring1-r4.ccs" 4 "no straggler role" -K 7 -s 1
refused "$tmp/ring1-r4.ccs" 3 "plan has 4 ranks, mpirun started 3" -K 7

# No silent hangs: ranks that disagree on the count or the plan fail on
# every rank at once; a rank that leaves without calling, or changes its
# call after the others cached theirs, makes its peers fail within the
# timeout (2 s there).  Each surviving rank prints "as expected".
fault() { # fault CASE NRANKS SURVIVORS
    local out ok
    out=$(timeout -k 10 60 mpirun --oversubscribe -np "$2" \
              "$BUILD/tests/test_faults" --mpi "$1" </dev/null 2>&1)
    ok=$(printf '%s\n' "$out" | grep -c "as expected")
    if [ "$ok" -ne "$3" ] || printf '%s' "$out" | grep -q WRONG; then
        echo "FAIL: fault case $1 np=$2: $ok of $3 ranks failed as expected"
        printf '%s\n' "$out" | tail -n 8
        fail=1
    fi
    runs=$((runs + 1))
}
fault count 2 2
fault count 4 4
fault plan 3 3
fault dead 2 1
fault dead 4 3
fault cached 2 2
fault cached 3 3

echo "mpi_correct: $runs mpirun checks ($synths synthesized plans of $nalgos algorithms), $([ $fail -eq 0 ] && echo ok || echo FAILED)"
exit $fail
