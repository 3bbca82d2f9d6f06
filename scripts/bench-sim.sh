#!/usr/bin/env bash
# Simulator speed: ring allreduce on switch:N at one size (1 GiB), for 256
# ranks (510 steps x 256 transfers; target < 100 ms) and 1024 ranks.
# Prints the median over several runs of the simulator's own figures
# (`ccsynth sim --time`): prepare (matching, routing) and run (the event
# loop) in wall and cpu milliseconds, the event loop's rate in events per
# cpu second, and the whole command's wall time.  On a loaded machine the
# cpu figures are the steadier ones.  (scripts/bench-scale.sh's "sim"
# section compares the rate across 64..1024 ranks.)
#   usage: BUILD=build scripts/bench-sim.sh [RUNS]
set -eu
BUILD=${BUILD:-build}
C=$BUILD/bin/ccsynth
RUNS=${1:-5}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

printf '%-22s %5s %9s %9s %9s %9s %9s %10s\n' "schedule" "runs" \
    "prep(ms)" "cpu(ms)" "run(ms)" "cpu(ms)" "wall(ms)" "Mevents/s"
for n in 256 1024; do
    "$C" synth --algo ring --topo "switch:$n" -q -o "$tmp/ring$n.ccs"
    for f in prep cprep run crun rate wall; do : > "$tmp/$f"; done
    for _ in $(seq "$RUNS"); do
        t0=$(date +%s%N)
        "$C" sim "$tmp/ring$n.ccs" --topo "switch:$n" --sizes 1G --time \
            > /dev/null 2> "$tmp/err"
        t1=$(date +%s%N)
        echo $(( (t1 - t0) / 1000 )) | awk '{ print $1 / 1000 }' >> "$tmp/wall"
        # "prepare P ms (cpu C), 1 size(s) R ms (cpu D), E events, X M ..."
        sed -nE 's/.*prepare ([0-9.]+) ms \(cpu ([0-9.]+)\), [0-9]+ size\(s\) ([0-9.]+) ms \(cpu ([0-9.]+)\), [0-9]+ events, ([0-9.]+) M.*/\1 \2 \3 \4 \5/p' \
            "$tmp/err" > "$tmp/line"
        read -r p cp r cr rt < "$tmp/line"
        echo "$p" >> "$tmp/prep"; echo "$cp" >> "$tmp/cprep"
        echo "$r" >> "$tmp/run"; echo "$cr" >> "$tmp/crun"
        echo "$rt" >> "$tmp/rate"
    done
    printf '%-22s %5d %9.2f %9.2f %9.2f %9.2f %9.2f %10.2f\n' \
        "ring switch:$n 1GiB" "$RUNS" "$(median < "$tmp/prep")" \
        "$(median < "$tmp/cprep")" "$(median < "$tmp/run")" \
        "$(median < "$tmp/crun")" "$(median < "$tmp/wall")" \
        "$(median < "$tmp/rate")"
done
