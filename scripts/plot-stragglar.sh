#!/usr/bin/env bash
# The StragglAR plots of the README, from our simulator (alpha-beta with
# contention, docs/simulator.md), with the paper's closed forms drawn on top:
#   docs/stragglar-sweep.svg    dgx-h100, straggler rank 7, completion time
#                               (from 0) against the straggler delay, one
#                               panel per size (64 MiB, 1 GiB, 4 GiB), ring,
#                               rhd, dbtree, stragglar; vertical lines at the
#                               critical delay of Appendix B (closed form,
#                               and the paper's simplified form) and at the
#                               end of phase 0 (T_RS, the ideal delay);
#   docs/stragglar-scaling.svg  switch:n, n = 4..256 (powers of 2), 1 GiB:
#                               ideal and worst-case speedup over ring (as
#                               the paper's Fig. 6c) and the critical delay
#                               against n (Fig. 7a), simulated vs closed form.
# Also prints the data and the crossovers it sees.  Each SVG is written to a
# temporary file beside the target and renamed when gnuplot succeeded.
#   usage: BUILD=build scripts/plot-stragglar.sh [SWEEP.svg [SCALING.svg]]
set -eu
BUILD=${BUILD:-build}
C=${CCSYNTH:-$BUILD/bin/ccsynth}
cd "$(dirname "$0")/.."
SWEEP=${1:-docs/stragglar-sweep.svg}
SCALING=${2:-docs/stragglar-scaling.svg}
POINTS=48                  # delays per panel, 0 .. 2 T_RS
tmp=$(mktemp -d)
trap 'rm -rf "$tmp" "$SWEEP.tmp.$$" "$SCALING.tmp.$$"' EXIT
# shellcheck source=scripts/bench-stragglar-sim.sh
. scripts/bench-stragglar-sim.sh

ms() { awk -v x="$1" 'BEGIN { printf "%.12g\n", x * 1e3 }'; }   # s -> ms

# ---- the delay sweep on dgx-h100 ----
read -r a b n < <(topo_params dgx-h100)
panels=()
for size in 64M 1G 4G; do
    s=$(bytes "$size")
    rs=$(closed rs "$a" "$b" "$n" "$s"); ex=$(closed crit "$a" "$b" "$n" "$s")
    pp=$(closed paper "$a" "$b" "$n" "$s")
    # The grid, plus the points where the curves bend or cross.
    # (second column 1: a grid point, 0: added).
    { awk -v rs="$rs" -v k="$POINTS" 'BEGIN {
          for (i = 0; i <= k; i++) printf "%.12g 1\n", 2 * rs * i / k }'
      printf '%s 0\n%s 0\n%s 0\n' "$rs" "$ex" "$pp"; } | sort -g -k1,1 > "$tmp/delays"
    dat=$tmp/sweep-$size.dat
    echo "# delay_ms ring_ms rhd_ms dbtree_ms stragglar_ms grid" > "$dat"
    while read -r d g; do
        "$C" compare --proto ideal --topo dgx-h100 --coll allreduce --algos "$ALGOS" \
            --sizes "$size" --straggler 7 --straggler-delay "${d}s" --csv > "$tmp/c.csv"
        awk -v d="$d" -v g="$g" -v r="$(col "$tmp/c.csv" ring)" \
            -v h="$(col "$tmp/c.csv" rhd)" -v t="$(col "$tmp/c.csv" dbtree)" \
            -v s="$(col "$tmp/c.csv" stragglar)" 'BEGIN {
            printf "%.12g %.12g %.12g %.12g %.12g %d\n", d * 1e3, r / 1e3,
                h / 1e3, t / 1e3, s / 1e3, g }' >> "$dat"
    done < "$tmp/delays"
    # First interval of the regular grid (the added points left out) where
    # stragglar stops being slower than ring; the crossover by linear
    # interpolation inside it.
    seen=$(awk 'NR > 1 && $6 == 1 {
        f = $5 - $2
        if (pd != "" && pf > 0 && f <= 0) {
            x = pd + (0 - pf) * ($1 - pd) / (f - pf)
            printf "%.6f ms (grid %.6f..%.6f)", x, pd, $1; exit }
        pd = $1; pf = f }' "$dat")
    printf '%-4s T_RS %.6f ms, critical delay: closed form %.6f ms, paper %.6f ms, sweep %s\n' \
        "$size" "$(ms "$rs")" "$(ms "$ex")" "$(ms "$pp")" "$seen"
    case $size in 64M) title="64 MiB" ;; 1G) title="1 GiB" ;; 4G) title="4 GiB" ;; esac
    panels+=("$title|$dat|$(ms "$ex")|$(ms "$pp")|$(ms "$rs")")
done

{
    echo 'set terminal svg size 1380,460 dynamic font "Helvetica,12" background "white"'
    echo "set output '$SWEEP.tmp.$$'"
    echo 'set multiplot title "Allreduce on dgx-h100 (8 GPUs, 450 GB/s, 3 us), straggler rank 7: completion time against straggler delay (ccsynth sim)"'
    echo 'set xlabel "straggler delay (ms)"'
    echo 'set ylabel "completion time from 0 (ms)"'
    echo 'set grid'
    echo 'unset key'
    echo 'set size 0.333, 0.78'
    echo 'set style line 1 lc rgb "#1f77b4" lw 2'
    echo 'set style line 2 lc rgb "#2ca02c" lw 2 dt (6,4)'
    echo 'set style line 3 lc rgb "#9467bd" lw 2'
    echo 'set style line 4 lc rgb "#d62728" lw 2.5'
    echo 'set style line 5 lc rgb "black" dt 2 lw 1.5'
    echo 'set style line 6 lc rgb "gray50" dt 3 lw 1.5'
    echo 'set style line 7 lc rgb "#ff7f0e" dt 4 lw 1.5'
    i=0
    for p in "${panels[@]}"; do
        IFS='|' read -r title dat ex pp rs <<< "$p"
        note=
        [ "$title" = "64 MiB" ] || note=" (rhd hides ring)"
        echo "set origin $i * 0.333, 0.13"
        i=$((i + 1))
        echo "unset arrow"
        echo "set title '$title$note'"
        echo "set arrow from $ex, graph 0 to $ex, graph 1 nohead ls 5"
        echo "set arrow from $pp, graph 0 to $pp, graph 1 nohead ls 6"
        echo "set arrow from $rs, graph 0 to $rs, graph 1 nohead ls 7"
        # (Titles, though the key is off: the SVG would name the temporary
        # data file instead, and differ from run to run.)
        echo "plot '$dat' using 1:2 with lines ls 1 title 'ring', \\"
        echo "     '' using 1:3 with lines ls 2 title 'rhd', \\"
        echo "     '' using 1:4 with lines ls 3 title 'dbtree', \\"
        echo "     '' using 1:5 with lines ls 4 title 'stragglar'"
    done
    # One key for the three panels: an empty plot along the bottom.
    echo 'set origin 0, 0'
    echo 'set size 1, 0.13'
    echo 'unset arrow; unset title; unset xlabel; unset ylabel; unset grid'
    echo 'unset border; unset tics'
    echo 'set xrange [0:1]; set yrange [0:1]'
    echo 'set key center center horizontal maxcols 4 font ",11" width 3'
    echo "plot NaN with lines ls 1 title 'ring', NaN with lines ls 2 title 'rhd', \\"
    echo "     NaN with lines ls 3 title 'dbtree', NaN with lines ls 4 title 'stragglar', \\"
    echo "     NaN with lines ls 5 title 'critical delay (App. B)', \\"
    echo "     NaN with lines ls 6 title 'paper approximation', \\"
    echo "     NaN with lines ls 7 title 'T_{RS}: phase 0 ends'"
    echo 'unset multiplot'
} > "$tmp/sweep.gp"
gnuplot "$tmp/sweep.gp"
mv -f "$SWEEP.tmp.$$" "$SWEEP"
echo "wrote $SWEEP"

# ---- scaling with n on switch:n, 1 GiB ----
size=1G
s=$(bytes "$size")
sdat=$tmp/scaling.dat
echo "# n ideal_sim worst_sim ideal_closed worst_closed crit_sim_ms crit_closed_ms crit_paper_ms" > "$sdat"
for n in 4 8 16 32 64 128 256; do
    read -r a b nn < <(topo_params "switch:$n")
    r=$((n - 1))
    for al in ring stragglar; do
        "$C" synth --algo "$al" --topo "switch:$n" --straggler "$r" -q -o "$tmp/$al.ccs"
    done
    ri=$(simt "$tmp/ring.ccs" "$size" "$r" "$IDEAL_D_S")
    si=$(simt "$tmp/stragglar.ccs" "$size" "$r" "$IDEAL_D_S")
    rw=$(simt "$tmp/ring.ccs" "$size" "$r" 0)
    sw=$(simt "$tmp/stragglar.ccs" "$size" "$r" 0)
    rs=$(closed rs "$a" "$b" "$nn" "$s")
    hi=$(awk -v x="$rs" 'BEGIN { printf "%.12g", 2 * x + 1e-3 }')
    cs=$(crossover "$tmp/stragglar.ccs" "$tmp/ring.ccs" "$size" "$r" "$hi")
    awk -v n="$n" -v ri="$ri" -v si="$si" -v rw="$rw" -v sw="$sw" -v d="$IDEAL_D_S" \
        -v ring="$(closed ring "$a" "$b" "$nn" "$s")" -v sar="$(closed sar "$a" "$b" "$nn" "$s")" \
        -v worst="$(closed worst "$a" "$b" "$nn" "$s")" -v cs="$cs" \
        -v ce="$(closed crit "$a" "$b" "$nn" "$s")" -v cp="$(closed paper "$a" "$b" "$nn" "$s")" 'BEGIN {
        printf "%d %.6f %.6f %.6f %.6f %.6f %.6f %.6f\n", n, (ri - d * 1e6) / (si - d * 1e6),
            rw / sw, ring / sar, ring / worst, cs * 1e3, ce * 1e3, cp * 1e3 }' >> "$sdat"
done
echo "switch:n, $size, straggler n-1 (speedups over ring; critical delays in ms):"
column -t "$sdat"

cat > "$tmp/scaling.gp" <<EOF
set terminal svg size 1100,440 dynamic font "Helvetica,12" background "white"
set output '$SCALING.tmp.$$'
set multiplot layout 1,2 title "StragglAR on switch:n (450 GB/s, 3 us), 1 GiB: simulated (points) against the closed forms (lines)"
set logscale x 2
set xrange [3:300]
set xlabel "GPUs (n)"
set grid
set key top left box opaque font ",10"
set title "speedup over ring"
set ylabel "ring time / stragglar time"
plot '$sdat' using 1:4 with lines lc rgb "#d62728" lw 2 title 'ideal, closed form', \\
     '' using 1:2 with points pt 7 ps 0.8 lc rgb "#d62728" title 'ideal (delay > T_{RS}), sim', \\
     '' using 1:5 with lines lc rgb "#1f77b4" lw 2 title 'worst, closed form', \\
     '' using 1:3 with points pt 5 ps 0.8 lc rgb "#1f77b4" title 'worst (no delay), sim', \\
     1 with lines lc rgb "gray50" dt 2 notitle
set title "critical delay (StragglAR = ring)"
set ylabel "delay (ms)"
set key top right
plot '$sdat' using 1:7 with lines lc rgb "black" lw 2 title 'App. B closed form', \\
     '' using 1:8 with lines lc rgb "gray50" dt 3 lw 2 title 'paper simplified form', \\
     '' using 1:6 with points pt 7 ps 0.8 lc rgb "#d62728" title 'sim (bisection)'
unset multiplot
EOF
gnuplot "$tmp/scaling.gp"
mv -f "$SCALING.tmp.$$" "$SCALING"
echo "wrote $SCALING"
