#!/usr/bin/env bash
# Straggler auto (CCS_STRAGGLER_AUTO) over MPI: 4 processes run a
# StragglAR plan (switch:4) with -s auto under injected delays (one
# persistent straggler, a straggler changing every call and every 4 calls,
# random delays on every rank, none), with and without a plain plan.  Each
# run must:
#   - give exact results: ccs-perf -c checks every one of its calls against
#     an independent reference (order-independent inputs) and exits 1 on
#     any wrong element;
#   - show every rank the same decision and the same state on every call:
#     CCS_DEBUG=TRACE logs one AUTO line per rank per call (the rank that
#     ran, the measured lateness, the cost estimates, the state hash); the
#     lines of one call must be identical across the 4 ranks, and every
#     call must have exactly 4;
#   - with a persistent straggler and no plain plan, relabel for it on most
#     calls (auto's prediction finds rank 2).
set -u
BUILD=${BUILD:-build}
PERF=$BUILD/bin/ccs-perf
C=$BUILD/bin/ccsynth
. "$(dirname "$0")/mpi.bash"
command -v mpirun >/dev/null 2>&1 || { echo "SKIP: no mpirun"; exit 0; }
[ -x "$PERF" ] && [ -x "$C" ] || { echo "missing $PERF or $C"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
"$C" synth --algo stragglar --topo switch:4 --straggler 3 -o "$tmp/s.ccs" \
    >/dev/null 2>&1 || { echo "FAIL: synth stragglar"; exit 1; }
"$C" synth --algo ring --topo switch:4 -o "$tmp/r.ccs" >/dev/null 2>&1 ||
    { echo "FAIL: synth ring"; exit 1; }

CHECKS=60     # checked calls per run, each one through auto
# Injected delays (us).  Under the sanitizers (CCS_E2E_SMALL=1) ASan's
# own slowdown of every rank is noise in auto's lateness estimates: the
# delays are 4 times longer there, so a straggler still stands out.
d2=2000 d3=3000
if [ "${CCS_E2E_SMALL:-0}" = 1 ]; then d2=8000 d3=12000; fi
# name | ccs-perf delay arguments | plain plan (yes/no)
cases="persistent|-E $d3 -A persistent -L 2|yes
persistent-noplain|-E $d3 -A persistent -L 2|no
rotating1|-E $d2 -A rotating:1|yes
rotating4|-E $d3 -A rotating:4|yes
random|-E $d3 -A random|yes
random-noplain|-E $d2 -A random|no
none|-A none|yes"

while IFS='|' read -r name delay plain; do
    q=()
    [ "$plain" = yes ] && q=(-Q "$tmp/r.ccs")
    # shellcheck disable=SC2086
    # Each rank's stderr to its own file (--output-filename): lines that
    # several processes write to one stream can be cut into each other.
    if ! CCS_DEBUG=TRACE timeout -k 10 300 mpirun --oversubscribe -np 4 \
            --output-filename "$tmp/$name.ranks" \
            "$PERF" -X mpi -K 4096 -n 1 -w 0 -c "$CHECKS" -s auto \
            "${q[@]}" $delay "$tmp/s.ccs" </dev/null \
            >"$tmp/$name.out" 2>"$tmp/$name.err"; then
        echo "FAIL: $name: ccs-perf exited non-zero (wrong elements or error)"
        tail -n 15 "$tmp/$name.out" "$tmp/$name.err"
        fail=1
        continue
    fi
    # "... TRACE AUTO call N ran X; ..." -> "N<TAB>rest of the line";
    # then per call: number of lines and number of distinct lines.
    find "$tmp/$name.ranks" -name stderr -exec cat {} + |
        grep ' TRACE AUTO call ' |
        sed 's/^.* TRACE AUTO call \([0-9]*\) /\1\t/' >"$tmp/$name.auto"
    verdict=$(sort "$tmp/$name.auto" | awk -F'\t' '
        { n[$1]++; if (!(($1, $2) in seen)) { seen[$1, $2] = 1; d[$1]++ } }
        END {
            calls = 0; bad = 0
            for (k in n) {
                calls++
                if (n[k] != 4 || d[k] != 1) { bad++; if (!first) first = k }
            }
            printf "%d %d %s\n", calls, bad, first ? first : "-"
        }')
    set -- $verdict
    calls=$1 bad=$2 first=$3
    # Two runs per size (out of place, in place), each CHECKS calls + 1.
    if [ "$calls" -lt $((2 * CHECKS)) ]; then
        echo "FAIL: $name: $calls auto calls logged, want >= $((2 * CHECKS))"
        fail=1
    elif [ "$bad" -ne 0 ]; then
        echo "FAIL: $name: ranks disagree on $bad of $calls calls (first:" \
            "call $first)"
        grep -P "^$first\t" "$tmp/$name.auto" | head -n 4
        fail=1
    else
        ran2=$(awk -F'\t' '$2 ~ /^ran 2;/' "$tmp/$name.auto" | wc -l)
        aware=$(awk -F'\t' '$2 !~ /^ran -1;/' "$tmp/$name.auto" | wc -l)
        echo "ok: $name: $calls calls, all 4 ranks identical on each;" \
            "aware on $((aware / 4)), relabelled for rank 2 on $((ran2 / 4))"
        if [ "$name" = persistent-noplain ] &&
            [ $((ran2 / 4)) -lt $((calls * 8 / 10)) ]; then
            echo "FAIL: $name: rank 2 picked on only $((ran2 / 4)) of $calls"
            fail=1
        fi
    fi
done <<<"$cases"
exit $fail
