#!/usr/bin/env bash
# MultiTree synthesis speed on tori (targets: 8x8 < 20 ms, 32x32 < 2 s,
# 64x64 < 60 s end to end) and fat-trees for reference.  Medians of RUNS
# runs (at most 3 from 32x32 up; 1 for 64x64) of:
#  - synth: the whole `ccsynth synth --algo multitree -o FILE` command
#    (topology load, both tree orders of mtree_build_best on two threads,
#    IR emission, symbolic verifier, writing the .ccs file): wall time,
#    CPU time (user + system, both threads) and peak RSS;
#  - trees: `ccsynth trees` (topology load, both tree orders, DOT written
#    to a file), closer to the tree construction alone: wall and CPU.
# On the shared 2-core machine wall time follows the load; CPU time is the
# steadier figure.  torus:64x64 runs only with FULL=1 (minutes, GBs).
#   usage: BUILD=build [FULL=1] scripts/bench-multitree.sh [RUNS]
set -eu
BUILD=${BUILD:-build}
C=${CCSYNTH:-$BUILD/bin/ccsynth}
RUNS=${1:-5}
FULL=${FULL:-0}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print "-"; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
# one command: appends "wall cpu rssKB rc" to $1, stderr to $tmp/err
timed() {
    local out=$1 rc=0
    shift
    /usr/bin/time -f '%e %U %S %M' -o "$tmp/time" "$@" > /dev/null \
        2> "$tmp/err" || rc=$?
    tail -n 1 "$tmp/time" | awk -v rc="$rc" \
        '{ printf "%.3f %.3f %d %d\n", $1, $2 + $3, $4, rc }' >> "$out"
}
col() { awk -v c="$1" '{ print $c }' "$2" | median; }
have_trees=0
"$C" trees --help > /dev/null 2>&1 && have_trees=1

printf '%-13s %-9s %4s %5s %5s %9s %8s %8s %9s %8s\n' topology coll runs T \
    bound 'synth(s)' 'cpu(s)' 'rss(MiB)' 'trees(s)' 'cpu(s)'
topos="torus:8x8 torus:16x16 torus:32x32 fattree:8x8 fattree:16x8"
[ "$FULL" = 1 ] && topos="$topos torus:64x64"
for topo in $topos; do
    runs=$RUNS
    case $topo in
    torus:32x32|fattree:16x8) runs=$(( RUNS < 3 ? RUNS : 3 )) ;;
    torus:64x64) runs=1 ;;
    esac
    colls="allgather allreduce"
    [ "$topo" = torus:64x64 ] && colls=allreduce
    for coll in $colls; do
        : > "$tmp/synth"
        : > "$tmp/trees"
        for _ in $(seq "$runs"); do
            timed "$tmp/synth" "$C" synth --algo multitree --topo "$topo" \
                --coll "$coll" -o "$tmp/out.ccs"
            cp "$tmp/err" "$tmp/synth.err"
            rm -f "$tmp/out.ccs"
            if [ "$have_trees" = 1 ] && [ "$coll" = allgather ]; then
                timed "$tmp/trees" "$C" trees --topo "$topo" -q \
                    -o "$tmp/t.dot"
            fi
        done
        T=$(sed -nE 's/.*allgather T=([0-9]+) steps.*/\1/p' "$tmp/synth.err")
        LB=$(sed -nE 's/.*lower bound ([0-9]+)\).*/\1/p' "$tmp/synth.err")
        rss=$(col 3 "$tmp/synth" | awk '{ if ($1 == "-") print "-"; else printf "%.0f", $1 / 1024 }')
        printf '%-13s %-9s %4d %5s %5s %9s %8s %8s %9s %8s\n' "$topo" \
            "$coll" "$runs" "${T:--}" "${LB:--}" "$(col 1 "$tmp/synth")" \
            "$(col 2 "$tmp/synth")" "$rss" "$(col 1 "$tmp/trees")" \
            "$(col 2 "$tmp/trees")"
        # a failed run (the verifier's memory budget, say): its message
        if [ "$(tail -n 1 "$tmp/synth" | awk '{ print $4 }')" != 0 ]; then
            tail -n 1 "$tmp/synth.err" | cut -c1-100 | sed 's/^/  exit: /'
        fi
    done
done
