#!/usr/bin/env bash
# Simulator speed: ring allreduce on switch:N at one size (1 GiB), for 256
# ranks (510 steps x 256 transfers; target < 100 ms) and 1024 ranks.
# Prints the median over several runs of the simulator's own figures
# (`ccsynth sim --time`): prepare (matching, routing) and run (the event
# loop), and their sum, plus the whole command's wall time.
#   usage: BUILD=build scripts/bench-sim.sh [RUNS]
set -eu
BUILD=${BUILD:-build}
C=$BUILD/bin/ccsynth
RUNS=${1:-5}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

printf '%-22s %6s %10s %10s %10s %10s\n' "schedule" "runs" "prep(ms)" \
    "run(ms)" "sim(ms)" "wall(ms)"
for n in 256 1024; do
    "$C" synth --algo ring --topo "switch:$n" -q -o "$tmp/ring$n.ccs"
    : > "$tmp/prep"; : > "$tmp/run"; : > "$tmp/wall"
    for _ in $(seq "$RUNS"); do
        t0=$(date +%s%N)
        "$C" sim "$tmp/ring$n.ccs" --topo "switch:$n" --sizes 1G --time \
            > /dev/null 2> "$tmp/err"
        t1=$(date +%s%N)
        echo $(( (t1 - t0) / 1000 )) | awk '{ print $1 / 1000 }' >> "$tmp/wall"
        sed -nE 's/.*prepare ([0-9.]+) ms.*/\1/p' "$tmp/err" >> "$tmp/prep"
        sed -nE 's/.* size\(s\) ([0-9.]+) ms.*/\1/p' "$tmp/err" >> "$tmp/run"
    done
    p=$(median < "$tmp/prep"); r=$(median < "$tmp/run"); w=$(median < "$tmp/wall")
    printf '%-22s %6d %10.2f %10.2f %10.2f %10.2f\n' "ring switch:$n 1GiB" \
        "$RUNS" "$p" "$r" "$(awk -v a="$p" -v b="$r" 'BEGIN { print a + b }')" "$w"
done
