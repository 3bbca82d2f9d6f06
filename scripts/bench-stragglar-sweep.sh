#!/usr/bin/env bash
# StragglAR sweep: for n = NMIN, NMIN+STEP, .. NMAX, the phase-1 rounds
# against LB(n) = n + ceil(log2 n) - 2 and the CPU and wall seconds of the
# whole synth (plan, emit, verify), one run per n, one n at a time; then
# how many n are within LB + 1, the slowest n and how many n took more
# than LIMIT seconds (CPU, wall).
# Usage: BUILD=build [C=path/to/ccsynth] [LIMIT=5]
#        scripts/bench-stragglar-sweep.sh [NMIN] [NMAX] [STEP] [ODD]
# ODD=1: only odd n; ODD=0: only even n; unset: every n.
set -u
BUILD=${BUILD:-build}
C=${C:-$BUILD/bin/ccsynth}
LIMIT=${LIMIT:-5}
NMIN=${1:-3}
NMAX=${2:-1024}
STEP=${3:-1}
PAR=${4:-}
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

echo "n rounds LB excess cpu_s wall_s"
total=0 within=0 worst=0 worst_n=0 failed=0
slow_cpu=0 slow_cpu_n=0 slow_wall=0 slow_wall_n=0 over_cpu=0 over_wall=0
over_list=""
for n in $(seq "$NMIN" "$STEP" "$NMAX"); do
    if [ -n "$PAR" ] && [ $((n % 2)) -ne "$PAR" ]; then
        continue
    fi
    /usr/bin/time -f '%U %S %e' -o "$tmp/time" \
        "$C" synth --algo stragglar --topo "switch:$n" -o /dev/null \
        2>"$tmp/err" >/dev/null
    read -r r lb < <(awk '/phase 1:/ { lb = $12; sub(/\)/, "", lb); print $9, lb }' "$tmp/err")
    if [ -z "${r:-}" ]; then
        echo "$n failed: $(tail -1 "$tmp/err")"
        failed=$((failed + 1))
        continue
    fi
    read -r cpu wall < <(awk '{ printf "%.2f %.2f\n", $1 + $2, $3 }' "$tmp/time")
    ex=$((r - lb))
    total=$((total + 1))
    [ "$ex" -le 1 ] && within=$((within + 1))
    if [ "$ex" -gt "$worst" ]; then worst=$ex; worst_n=$n; fi
    if awk -v a="$cpu" -v b="$slow_cpu" 'BEGIN { exit !(a > b) }'; then
        slow_cpu=$cpu; slow_cpu_n=$n
    fi
    if awk -v a="$wall" -v b="$slow_wall" 'BEGIN { exit !(a > b) }'; then
        slow_wall=$wall; slow_wall_n=$n
    fi
    if awk -v a="$cpu" -v l="$LIMIT" 'BEGIN { exit !(a > l) }'; then
        over_cpu=$((over_cpu + 1)); over_list="$over_list $n"
    fi
    if awk -v a="$wall" -v l="$LIMIT" 'BEGIN { exit !(a > l) }'; then
        over_wall=$((over_wall + 1))
    fi
    echo "$n $r $lb +$ex $cpu $wall"
done
echo "within LB + 1: $within of $total (n = $NMIN..$NMAX step $STEP${PAR:+ parity $PAR}); worst +$worst (n = $worst_n); failed: $failed"
echo "slowest: CPU $slow_cpu s (n = $slow_cpu_n), wall $slow_wall s (n = $slow_wall_n)"
echo "over $LIMIT s: $over_cpu by CPU${over_list:+ (}${over_list# }${over_list:+)}, $over_wall by wall"
