#!/usr/bin/env bash
# MultiTree synthesis speed on torus 8x8 (target < 20 ms) and 32x32
# (target < 5 s), plus fat-trees for reference.  Two figures, medians of
# RUNS runs of wall time:
#  - synth(ms): the whole `ccsynth synth --algo multitree` command (topology
#    load, both tree orders of mtree_build_best, IR emission, symbolic
#    verifier), all-gather and allreduce;
#  - trees(ms): `ccsynth trees` (topology load, both tree orders, DOT
#    written to a file), closer to the tree construction alone; left
#    blank while the subcommand is not registered.
#   usage: BUILD=build scripts/bench-multitree.sh [RUNS]
set -eu
BUILD=${BUILD:-build}
C=${CCSYNTH:-$BUILD/bin/ccsynth}
RUNS=${1:-5}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
# wall time of one command in ms
wall_ms() {
    local t0 t1
    t0=$(date +%s%N)
    "$@" > /dev/null 2> "$tmp/err"
    t1=$(date +%s%N)
    echo $(( (t1 - t0) / 1000 )) | awk '{ print $1 / 1000 }'
}
have_trees=0
"$C" trees --help > /dev/null 2>&1 && have_trees=1

printf '%-14s %-10s %5s %5s %6s %10s %10s\n' topology coll runs T bound \
    "synth(ms)" "trees(ms)"
for topo in torus:8x8 torus:16x16 torus:32x32 fattree:8x8 fattree:16x8; do
    runs=$RUNS
    case $topo in
    torus:32x32|fattree:16x8) runs=$(( RUNS < 3 ? RUNS : 3 )) ;;
    esac
    for coll in allgather allreduce; do
        : > "$tmp/wall"
        : > "$tmp/twall"
        for _ in $(seq "$runs"); do
            wall_ms "$C" synth --algo multitree --topo "$topo" \
                --coll "$coll" >> "$tmp/wall"
            cp "$tmp/err" "$tmp/synth.err"
            if [ "$have_trees" = 1 ] && [ "$coll" = allgather ]; then
                wall_ms "$C" trees --topo "$topo" -q -o "$tmp/t.dot" \
                    >> "$tmp/twall"
            fi
        done
        T=$(sed -nE 's/.*allgather T=([0-9]+) steps.*/\1/p' "$tmp/synth.err")
        LB=$(sed -nE 's/.*lower bound ([0-9]+)\).*/\1/p' "$tmp/synth.err")
        tw=""
        [ -s "$tmp/twall" ] && tw=$(median < "$tmp/twall" | awk '{ printf "%.1f", $1 }')
        printf '%-14s %-10s %5d %5s %6s %10.1f %10s\n' "$topo" "$coll" \
            "$runs" "$T" "$LB" "$(median < "$tmp/wall")" "$tw"
    done
done
