#!/usr/bin/env bash
# MultiTree synthesis speed: `ccsynth synth --algo multitree` on torus 8x8
# (target < 20 ms) and 32x32 (target < 5 s), all-gather and allreduce.
# The figure is the whole command's wall time (topology load, both tree
# orders of mtree_build_best, IR emission and the symbolic verifier), so it
# over-states the tree construction alone.  Medians of RUNS runs.
#   usage: BUILD=build scripts/bench-multitree.sh [RUNS]
set -eu
BUILD=${BUILD:-build}
C=${CCSYNTH:-$BUILD/bin/ccsynth}
RUNS=${1:-5}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

printf '%-14s %-10s %5s %8s %12s\n' topology coll runs T "median(ms)"
for topo in torus:8x8 torus:16x16 torus:32x32; do
    runs=$RUNS
    [ "$topo" = torus:32x32 ] && runs=$(( RUNS < 3 ? RUNS : 3 ))
    for coll in allgather allreduce; do
        : > "$tmp/wall"
        for _ in $(seq "$runs"); do
            t0=$(date +%s%N)
            "$C" synth --algo multitree --topo "$topo" --coll "$coll" \
                > /dev/null 2> "$tmp/err"
            t1=$(date +%s%N)
            echo $(( (t1 - t0) / 1000 )) | awk '{ print $1 / 1000 }' \
                >> "$tmp/wall"
        done
        T=$(sed -nE 's/.*allgather T=([0-9]+) steps.*/\1/p' "$tmp/err")
        printf '%-14s %-10s %5d %8s %12.1f\n' "$topo" "$coll" "$runs" \
            "$T" "$(median < "$tmp/wall")"
    done
done
