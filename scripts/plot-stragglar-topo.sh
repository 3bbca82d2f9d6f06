#!/usr/bin/env bash
# Where the straggler-aware allreduce wins, from our simulator (alpha-beta
# with contention, docs/simulator.md):
#   docs/stragglar-topo-sweep.svg   one panel per topology (cluster:2x8 and
#                                   cluster:4x8 with a NIC per GPU, the
#                                   heterogeneous AdapCC cluster, dgx-h100):
#                                   speedup of stragglar over the fastest
#                                   algorithm that ignores the straggler
#                                   (ring, dbtree, multitree; rhd too on
#                                   dgx-h100) in the time after the
#                                   straggler's arrival (completion - D:
#                                   the sign of the gain is that of the
#                                   completion times from 0), against
#                                   straggler delay D (x) and buffer size
#                                   (y); the black line is speedup 1.
# Also prints, per topology and size, the smallest delay of the grid from
# which stragglar stays the fastest, and the speedup at the largest delay.
# The SVG is written to a temporary file beside the target and renamed when
# gnuplot succeeded.  About 15-40 s (one `compare` per topology and delay).
#   usage: BUILD=build scripts/plot-stragglar-topo.sh [OUT.svg]
set -eu
BUILD=${BUILD:-build}
C=${CCSYNTH:-$BUILD/bin/ccsynth}
cd "$(dirname "$0")/.."
OUT=${1:-docs/stragglar-topo-sweep.svg}
SIZES=16M:4G               # doubling: 9 sizes
PER_DECADE=4               # delays per decade, 10 us .. 5 s
tmp=$(mktemp -d)
trap 'rm -rf "$tmp" "$OUT.tmp.$$"' EXIT

# topology|straggler|baselines|title
TOPOS=(
    "cluster:2x8,nics=gpu|5|ring,dbtree,multitree|cluster:2x8, NIC per GPU (16 GPUs), straggler 5"
    "cluster:4x8,nics=gpu|5|ring,dbtree,multitree|cluster:4x8, NIC per GPU (32 GPUs), straggler 5"
    "topologies/adapcc-hetero.yaml|18|ring,dbtree,multitree|adapcc-hetero (24 GPUs, 6 servers), straggler 18 (V100)"
    "dgx-h100|7|ring,rhd,dbtree,multitree|dgx-h100 (8 GPUs, one NVSwitch), straggler 7"
)

awk -v k="$PER_DECADE" 'BEGIN {
    for (e = -5 * k; e <= 0.7 * k; e++) printf "%.6g\n", 10 ^ (e / k) }' \
    > "$tmp/delays"

i=0
panels=()
for t in "${TOPOS[@]}"; do
    IFS='|' read -r topo sg base title <<< "$t"
    dat=$tmp/p$i.dat
    : > "$dat"
    while read -r d; do
        "$C" compare --topo "$topo" --coll allreduce --algos "$base,stragglar" \
            --sizes "$SIZES" --straggler "$sg" --straggler-delay "${d}s" \
            --csv -q > "$tmp/c.csv"
        # speedup = fastest baseline / stragglar, per size (one line each)
        awk -F, -v d="$d" 'NR == 1 {
                for (c = 1; c <= NF; c++)
                    if ($c ~ /_time_us$/) { n = $c; sub(/_time_us$/, "", n)
                        if (n == "stragglar") sc = c; else bc[c] = 1 }
                next }
            { b = -1
              for (c in bc) if (b < 0 || $c + 0 < b) b = $c + 0
              printf "%.9g %.0f %.9g %.9g %.9g\n", d * 1e3, $1,
                  (b - d * 1e6) / ($sc - d * 1e6), b / 1e3, $sc / 1e3 }' \
            "$tmp/c.csv" >> "$dat"
    done < "$tmp/delays"
    # pm3d wants scans separated by blank lines: group by delay.
    awk 'NR > 1 && $1 != p { print "" } { print; p = $1 }' "$dat" \
        > "$tmp/g$i.dat"
    echo "== $title"
    printf '%10s  %-28s  %s\n' size "stragglar fastest from (ms)" \
        "speedup at the largest delay"
    sort -g -k2,2 -k1,1 "$dat" | awk '
        function flush() { if (s != "") printf "%10.0f  %-28s  %.3f\n", s,
                                 (from == "" ? "never" : from), last }
        $2 != s { flush(); s = $2; from = ""; }
        { if ($3 > 1 && from == "") from = sprintf("%.4g", $1)
          if ($3 <= 1) from = ""
          last = $3 }
        END { flush() }'
    panels+=("$title|$tmp/g$i.dat")
    i=$((i + 1))
done

{
    echo 'set terminal svg size 1200,900 dynamic font "Helvetica,12" background "white"'
    echo "set output '$OUT.tmp.$$'"
    echo 'set multiplot layout 2,2 title "Allreduce: stragglar vs the fastest algorithm that ignores the straggler, speedup of the time after the straggler arrives (ccsynth compare)"'
    echo 'set view map'
    echo 'set logscale x 10'
    echo 'set logscale y 2'
    echo 'set format y "%.0b%B"'
    echo 'set logscale cb 2'
    echo 'set cbrange [0.25:8]'
    echo 'set cbtics ("1/4" 0.25, "1/2" 0.5, "1" 1, "2" 2, "4" 4, "8" 8)'
    echo 'set palette defined (-2 "#2166ac", -1 "#92c5de", 0 "#f7f7f7", 1 "#f4a582", 2 "#d6604d", 3 "#b2182b")'
    echo 'set cblabel "speedup"'
    echo 'set xlabel "straggler delay (ms)"'
    echo 'set ylabel "buffer size (bytes)"'
    echo 'set contour base'
    echo 'set cntrparam levels discrete 1'
    echo 'unset clabel'
    echo 'unset key'
    echo 'set pm3d map interpolate 1,1 corners2color c1'
    echo 'set autoscale xfix'
    echo 'set autoscale yfix'
    for p in "${panels[@]}"; do
        IFS='|' read -r title g <<< "$p"
        echo "set title '$title' font ',11'"
        echo "splot '$g' using 1:2:3 with pm3d notitle, \\"
        echo "      '' using 1:2:3 with lines lc rgb 'black' lw 2 nosurface notitle"
    done
    echo 'unset multiplot'
} > "$tmp/plot.gp"
gnuplot "$tmp/plot.gp"
mv -f "$OUT.tmp.$$" "$OUT"
echo "wrote $OUT"
