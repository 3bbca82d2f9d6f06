#!/usr/bin/env bash
# `ccsynth sim` and `ccsynth compare`: columns, formats, closed form on the
# command line, straggler delay, exit codes, atomic plot output.
set -u
. "$(dirname "$0")/common.bash"

# Relative difference of two numbers <= tolerance.
close() { # close A B TOL
    awk -v a="$1" -v b="$2" -v t="$3" 'BEGIN {
        d = a - b; if (d < 0) d = -d; m = (a < 0 ? -a : a);
        exit !(d <= t * m) }'
}

$C synth --algo ring --topo switch:8 -q -o "$tmp/ring8.ccs" || { echo "FAIL: synth"; exit 1; }

expect 0 "usage: ccsynth sim" -- $C sim --help
expect 0 "usage: ccsynth compare" -- $C compare --help
expect 2 "schedule file is required" -- $C sim
expect 2 "bad --mode" -- $C sim "$tmp/ring8.ccs" --mode fast
expect 2 "bad size list" -- $C sim "$tmp/ring8.ccs" --sizes 1K:4G:1
expect 2 "needs --straggler-delay" -- $C sim "$tmp/ring8.ccs" --straggler 1
expect 2 "out of range" -- $C sim "$tmp/ring8.ccs" --straggler 8 --straggler-delay 1ms
expect 3 "8 ranks" -- $C sim "$tmp/ring8.ccs" --topo switch:4
expect 3 "missing.ccs" -- $C sim "$tmp/missing.ccs" --topo switch:8
expect 2 "unknown algorithm" -- $C compare --topo switch:8 --algos ring,nope
expect 2 "topo is required" -- $C compare --algos ring

# Default topology from the file; nccl-tests columns; one line per size.
out=$($C sim "$tmp/ring8.ccs" --sizes 1K:1M)
n=$(printf '%s\n' "$out" | grep -vc '^#')
[ "$n" -eq 11 ] || { echo "FAIL: want 11 rows for 1K:1M, got $n"; fail=1; }
printf '%s\n' "$out" | grep -q 'size.*count.*type.*time(us).*algbw(GB/s).*busbw(GB/s)' \
    || { echo "FAIL: header columns: $out"; fail=1; }

# The closed form through the CLI: ring on switch:8 with alpha 2us, 100GB/s
# links (route = 2 links): 14 * 4us + 14/8 * s / 100e9.
row=$($C sim "$tmp/ring8.ccs" --topo switch:8 --alpha 2us --bw 100GB/s \
      --sizes 64M --csv 2>/dev/null | tail -n 1)
t=$(printf '%s' "$row" | cut -d, -f4)
want=$(awk 'BEGIN { printf "%.6f", (14 * 4e-6 + 14.0 / 8 * 67108864 / 100e9) * 1e6 }')
close "$t" "$want" 1e-6 || { echo "FAIL: ring time $t us, want $want"; fail=1; }
algbw=$(printf '%s' "$row" | cut -d, -f5)
busbw=$(printf '%s' "$row" | cut -d, -f6)
close "$busbw" "$(awk -v a="$algbw" 'BEGIN { printf "%.6f", a * 1.75 }')" 1e-5 \
    || { echo "FAIL: busbw $busbw != 1.75 * $algbw"; fail=1; }
[ "$(printf '%s' "$row" | cut -d, -f2)" = 16777216 ] || { echo "FAIL: count in $row"; fail=1; }
# 17 bytes of float32 are simulated as 5 padded elements, and counted so
row=$($C sim "$tmp/ring8.ccs" --sizes 17 --csv | tail -n 1)
[ "$(printf '%s' "$row" | cut -d, -f2)" = 5 ] || { echo "FAIL: count of 17 B: $row"; fail=1; }

# A straggler delays ring allreduce by exactly D (both step modes).
for mode in rank barrier; do
    base=$($C sim "$tmp/ring8.ccs" --sizes 16M --csv --mode $mode | tail -n 1 | cut -d, -f4)
    late=$($C sim "$tmp/ring8.ccs" --sizes 16M --csv --mode $mode --straggler 3 \
           --straggler-delay 250us | tail -n 1 | cut -d, -f4)
    close "$late" "$(awk -v b="$base" 'BEGIN { printf "%.6f", b + 250 }')" 1e-9 \
        || { echo "FAIL: $mode straggler: $late vs $base + 250"; fail=1; }
done
printf '2 1ms\n# comment\n5 0.5ms\n' > "$tmp/arr.txt"
late=$($C sim "$tmp/ring8.ccs" --sizes 16M --csv --arrivals "$tmp/arr.txt" | tail -n 1 | cut -d, -f4)
close "$late" "$(awk -v b="$base" 'BEGIN { printf "%.6f", b + 1000 }')" 1e-9 \
    || { echo "FAIL: arrivals: $late vs $base + 1000"; fail=1; }
printf 'x y\n' > "$tmp/bad.txt"
expect 3 "bad.txt:1: bad rank 'x'" -- $C sim "$tmp/ring8.ccs" --arrivals "$tmp/bad.txt"
printf '2 1ms\n2 3ms\n' > "$tmp/dup.txt"
expect 3 "dup.txt:2: rank 2 listed again" -- $C sim "$tmp/ring8.ccs" --arrivals "$tmp/dup.txt"
expect 3 "bad.txt:1" -- $C compare --topo switch:8 --algos ring --sizes 1M --arrivals "$tmp/bad.txt"
expect 2 "more than 2\^53" -- $C sim "$tmp/ring8.ccs" --sizes 1e20

# JSON parses and has one result per size.
if command -v python3 >/dev/null; then
    $C sim "$tmp/ring8.ccs" --sizes 1K:8K --json > "$tmp/s.json" &&
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert len(d["results"]) == 4, d' "$tmp/s.json" \
        || { echo "FAIL: sim --json"; fail=1; }
    $C compare --topo switch:8 --algos ring,allpairs --sizes 1M,1G --json > "$tmp/c.json" &&
    python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["algos"] == ["ring","allpairs"] and d["results"][1]["best"] == "allpairs", d' "$tmp/c.json" \
        || { echo "FAIL: compare --json"; fail=1; }
fi

# A fingerprint from another topology is a note, not an error.
expect 0 "note: .*fingerprints differ" -- $C sim "$tmp/ring8.ccs" --topo ring:8 --sizes 1M

# compare: ring does no alltoall (left out with a note, the others stay);
# on torus:8x8 ring beats dbtree at 1 GiB.
expect 0 "ring left out" -- $C compare --topo switch:6 --coll alltoall --algos ring,allpairs --sizes 1M
# (the best column may name the nccl baseline: compare ring and dbtree)
best=$($C compare --topo torus:8x8 --algos ring,dbtree --sizes 1G --csv |
       awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
                { print ($c["ring_time_us"] < $c["dbtree_time_us"]) ? "ring" : "dbtree" }')
[ "$best" = ring ] || { echo "FAIL: torus:8x8 faster at 1G is '$best', want ring"; fail=1; }
# the nccl baseline column and the assumptions line
out=$($C compare --topo cluster:2x8 --algos ring --sizes 1G)
echo "$out" | grep -q "# assumes: 2 server(s), 8 NIC(s) per server" ||
    { echo "FAIL: compare prints no assumptions line"; fail=1; }
echo "$out" | grep -Eq "nccl-(ring|tree)/simple" ||
    { echo "FAIL: compare names no nccl choice: $out"; fail=1; }
expect 5 "none of the algorithms" -- $C compare --topo switch:6 --coll alltoall --algos ring --sizes 1M
expect 0 "milp left out: its solver" -- $C compare --topo switch:8 --sizes 1M
expect 0 "stragglar left out: it is built around a straggler" -- $C compare --topo switch:8 --sizes 1M
out=$($C compare --topo switch:8 --sizes 1M --straggler 7 --straggler-delay 1ms --csv 2>"$tmp/err")
printf '%s' "$out" | head -n 1 | grep -q stragglar_time_us ||
    { echo "FAIL: compare --straggler leaves stragglar out: $out"; fail=1; }
grep -q "note: --straggler 7: ring, .* ignore it" "$tmp/err" ||
    { echo "FAIL: compare --straggler names no ignoring algorithm"; fail=1; }
expect 2 "--straggler 7 needs --straggler-delay" -- $C compare --topo switch:8 --sizes 1M --straggler 7
expect 2 "20 what\? write 20ms" -- $C compare --topo switch:8 --sizes 1M --straggler 7 --straggler-delay 20
expect 2 "bad --straggler-delay '-1ms'" -- $C compare --topo switch:8 --sizes 1M --straggler 7 --straggler-delay -1ms
expect 2 "bad --straggler-delay '-1ms'" -- $C sim "$tmp/ring8.ccs" --sizes 1M --straggler 7 --straggler-delay -1ms
expect 2 "^ccsynth compare: option --sizes needs a value$" -- $C compare --topo switch:8 --sizes
expect 2 "--json and --csv exclude each other" -- $C compare --topo switch:8 --json --csv
n=$($C compare --topo switch:8 --sizes 1M -q 2>&1 >/dev/null | wc -c)
[ "$n" = 0 ] || { echo "FAIL: compare -q wrote $n bytes to stderr"; fail=1; }

# --plot writes an SVG atomically, and a failed plot leaves nothing behind.
if command -v gnuplot >/dev/null; then
    expect 0 "" -- $C compare --topo switch:8 --sizes 1K:1M:4 --plot "$tmp/p.svg"
    grep -q '<svg' "$tmp/p.svg" 2>/dev/null || { echo "FAIL: no svg written"; fail=1; }
    # one curve per algorithm, named in the key
    # no --algos: every algorithm that implements allreduce on switch:8
    # (stragglar needs --straggler; milp is named as left out)
    for a in ring rhd allpairs dbtree multitree; do
        grep -q ">$a</text>" "$tmp/p.svg" 2>/dev/null ||
            { echo "FAIL: no curve named $a in the plot"; fail=1; }
    done
    # five algorithms and the nccl baseline
    grep -q ">nccl (best of NCCL's algorithms)</text>" "$tmp/p.svg" ||
        { echo "FAIL: no nccl curve in the plot"; fail=1; }
    n=$(grep -c '<title>gnuplot_plot_' "$tmp/p.svg" || true)
    [ "$n" = 6 ] || { echo "FAIL: $n curves in the plot, want 6"; fail=1; }
    expect 1 "" -- $C compare --topo switch:8 --sizes 1K --plot "$tmp/no/dir/p.svg"
fi
leftover=$(ls "$tmp" | grep -E 'tmp' || true)
[ -z "$leftover" ] || { echo "FAIL: stray files: $leftover"; fail=1; }

exit $fail
