#!/usr/bin/env bash
# StragglAR in the simulator against the paper (section 3.2, Appendix B):
#   - dgx-h100, 4 GiB, ideal case (straggler arrives after phase 0): the
#     time from the straggler's arrival is >= 1.3x faster than ring's and
#     within 0.5% of the closed-form ratio (1.36x);
#   - worst case (no delay): both totals equal their closed forms;
#   - switch:256 ideal case: >= 1.9x over ring at 1 GiB and 4 GiB;
#   - the critical delay (StragglAR's total time = ring's), found by
#     bisection on simulated times at 64 MiB and 4 GiB, lies within 0.1% of
#     the closed form T_RS + T_SAR+ - T_ring and within 6% of the paper's
#     simplified (log n - 2) a + log n / n s b.
# Closed forms and helpers: scripts/bench-stragglar-sim.sh (sourced).
set -u
. "$(dirname "$0")/common.bash"
# shellcheck source=scripts/bench-stragglar-sim.sh
. scripts/bench-stragglar-sim.sh

# check DESCRIPTION AWK-CONDITION var=value...
check() {
    local what=$1 cond=$2
    shift 2
    local args=() kv
    for kv in "$@"; do args+=(-v "$kv"); done
    if ! awk "${args[@]}" "BEGIN { exit !($cond) }"; then
        echo "FAIL: $what ($*)"
        fail=1
    fi
}

# ---- dgx-h100, 4 GiB: ideal and worst case through `compare` ----
read -r a b n < <(topo_params dgx-h100) || { echo "FAIL: topo_params"; exit 1; }
s=$(bytes 4G)
$C compare --proto ideal --topo dgx-h100 --algos ring,stragglar --sizes 4G --straggler 7 \
    --straggler-delay "$IDEAL_D" --csv > "$tmp/ideal.csv" || { echo "FAIL: compare ideal"; exit 1; }
$C compare --proto ideal --topo dgx-h100 --algos ring,stragglar --sizes 4G --straggler 7 \
    --straggler-delay 0 --csv > "$tmp/worst.csv" || { echo "FAIL: compare worst"; exit 1; }
ring=$(closed ring "$a" "$b" "$n" "$s"); sar=$(closed sar "$a" "$b" "$n" "$s")
worst=$(closed worst "$a" "$b" "$n" "$s"); rs=$(closed rs "$a" "$b" "$n" "$s")
check "closed-form ideal ratio on dgx-h100 is 1.36 (docs/stragglar-sim.md)" \
    "r / x > 1.355 && r / x < 1.37" r="$ring" x="$sar"
check "phase 0 ends before the ideal delay" "rs < d" rs="$rs" d="$IDEAL_D_S"
ti_r=$(col "$tmp/ideal.csv" ring); ti_s=$(col "$tmp/ideal.csv" stragglar)
q=$(awk -v r="$ti_r" -v x="$ti_s" -v d="$IDEAL_D_S" \
    'BEGIN { printf "%.9g", (r - d * 1e6) / (x - d * 1e6) }')
check "dgx-h100 4 GiB ideal speedup >= 1.3 and within 0.5% of closed form" \
    "q >= 1.3 && q / (cr / cx) > 0.995 && q / (cr / cx) < 1.005" \
    q="$q" cr="$ring" cx="$sar"
tw_r=$(col "$tmp/worst.csv" ring); tw_s=$(col "$tmp/worst.csv" stragglar)
check "worst case: ring total = 2(n-1)a + 2(n-1)/n sb" \
    "t / (c * 1e6) > 0.9999 && t / (c * 1e6) < 1.0001" t="$tw_r" c="$ring"
check "worst case: stragglar total = T_RS + T_SAR+" \
    "t / (c * 1e6) > 0.9999 && t / (c * 1e6) < 1.0001" t="$tw_s" c="$worst"

# ---- switch:256, ideal case ----
$C compare --proto ideal --topo switch:256 --algos ring,stragglar --sizes 1G,4G \
    --straggler 255 --straggler-delay "$IDEAL_D" --csv > "$tmp/s256.csv" \
    || { echo "FAIL: compare switch:256"; exit 1; }
# size:speedup per row, by column name.
read -r -a rows < <(awk -F, -v d="$IDEAL_D_S" '
    NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
    { r = $c["ring_time_us"] - d * 1e6; x = $c["stragglar_time_us"] - d * 1e6
      printf "%s:%.6f ", $1, r / x }' "$tmp/s256.csv")
[ ${#rows[@]} -eq 2 ] || { echo "FAIL: switch:256 rows: ${rows[*]}"; fail=1; }
for row in "${rows[@]}"; do
    check "switch:256 ideal speedup over ring >= 1.9 at ${row%%:*} bytes" \
        "q >= 1.9" q="${row#*:}"
done

# ---- critical delay on dgx-h100 ----
for al in ring stragglar; do
    $C synth --algo "$al" --topo dgx-h100 --straggler 7 -q -o "$tmp/$al.ccs" \
        || { echo "FAIL: synth $al"; exit 1; }
done
for size in 64M 4G; do
    s=$(bytes "$size")
    rs=$(closed rs "$a" "$b" "$n" "$s"); ex=$(closed crit "$a" "$b" "$n" "$s")
    pp=$(closed paper "$a" "$b" "$n" "$s")
    hi=$(awk -v x="$rs" 'BEGIN { printf "%.12g", 2 * x + 1e-3 }')
    sim=$(crossover "$tmp/stragglar.ccs" "$tmp/ring.ccs" "$size" 7 "$hi")
    check "$size: simulated critical delay within 0.1% of App. B closed form" \
        "x > 0 && x / e > 0.999 && x / e < 1.001" x="$sim" e="$ex"
    check "$size: simulated critical delay within 6% of the paper's simplified form" \
        "x > 0 && x / p > 0.94 && x / p < 1.06" x="$sim" p="$pp"
    check "$size: critical delay falls inside phase 0 (partial overlap)" \
        "x > 0 && x < rs" x="$sim" rs="$rs"
done

exit $fail
