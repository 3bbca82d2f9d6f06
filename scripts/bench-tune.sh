#!/usr/bin/env bash
# `ccsynth tune`: the pruned search against the full grid (--full-grid) on
# dgx-h100, torus:4x4 and cluster:2x8 (allreduce, 1K:1G doubling, the
# default algorithms, pipelines and chunk counts).  Prints per topology the
# simulations each made (plus the extra ring runs the pruned one makes for
# its speedup column), the schedules each built, the reduction, whether the
# choices agree at every size (same algorithm, chunking and time), and the
# medians over RUNS runs of the whole command's wall time and CPU time
# (user + sys: steadier than wall time on a shared machine).
#   usage: BUILD=build scripts/bench-tune.sh [RUNS] [extra tune options]
set -eu
BUILD=${BUILD:-build}
C=$BUILD/bin/ccsynth
RUNS=${1:-5}
shift || true
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
field() { sed -nE "s/.*\"$1\": ([0-9]+).*/\\1/p" "$2" | head -1; }

printf '%-12s %-6s %6s %5s %6s %6s %8s %9s %9s %5s\n' topology search \
    sims "+ref" grid built reduct wall_ms cpu_ms same
for topo in dgx-h100 torus:4x4 cluster:2x8; do
    for mode in pruned full; do
        flag=""
        [ "$mode" = full ] && flag="--full-grid"
        : > "$tmp/wall"; : > "$tmp/cpu"
        for _ in $(seq "$RUNS"); do
            t0=$(date +%s%N)
            { TIMEFORMAT='%3U %3S'; time "$C" tune --topo "$topo" -q $flag \
                "$@" -o "$tmp/$mode.json" --csv > "$tmp/$mode.csv"; } \
                2> "$tmp/time"
            t1=$(date +%s%N)
            echo $(( (t1 - t0) / 1000 )) | awk '{ print $1 / 1000 }' >> "$tmp/wall"
            awk '{ print ($1 + $2) * 1000 }' "$tmp/time" >> "$tmp/cpu"
        done
        ev=$(field evals "$tmp/$mode.json")
        ref=$(field ring_reference_evals "$tmp/$mode.json")
        grid=$(field grid_evals "$tmp/$mode.json")
        built=$(field schedules_built "$tmp/$mode.json")
        red=$(awk -v a="$((ev + ref))" -v g="$grid" 'BEGIN { printf "%.1f%%", 100 * (1 - a / g) }')
        same=-
        if [ "$mode" = full ]; then
            if cmp -s <(cut -d, -f1,3-7 "$tmp/pruned.csv") \
                      <(cut -d, -f1,3-7 "$tmp/full.csv"); then
                same=yes
            else
                same=NO
            fi
        fi
        printf '%-12s %-6s %6d %5d %6d %6d %8s %9.1f %9.1f %5s\n' "$topo" \
            "$mode" "$ev" "$ref" "$grid" "$built" "$red" \
            "$(median < "$tmp/wall")" "$(median < "$tmp/cpu")" "$same"
    done
done
echo "(reduct = 1 - (sims + ref) / grid; wall and cpu: medians of $RUNS runs"
echo " of the whole command, topology loading and synthesis included)"
