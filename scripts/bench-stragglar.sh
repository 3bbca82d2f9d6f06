#!/usr/bin/env bash
# StragglAR benchmark: phase-1 rounds against LB(n) = n + ceil(log2 n) - 2
# and planning time of one run for n = 2..NMAX (default 256), then planning
# time (median of RUNS runs,
# synthesis only, from the "planned in" report line) for chosen n.
# Usage: BUILD=build scripts/bench-stragglar.sh [NMAX] [RUNS]
set -u
BUILD=${BUILD:-build}
C=$BUILD/bin/ccsynth
NMAX=${1:-256}
RUNS=${2:-5}
cd "$(dirname "$0")/.."

plan() { # plan N -> "rounds lb ms"
    "$C" synth --algo stragglar --topo "switch:$1" 2>&1 >/dev/null |
        awk '/phase 1:/ { r = $9; lb = $12; sub(/\)/, "", lb) }
             /planned in/ { ms = $4 }
             END { print r, lb, ms }'
}

echo "n rounds LB excess plan_ms"
worst=0
for n in $(seq 2 "$NMAX"); do
    read -r r lb ms < <(plan "$n")
    ex=$((r - lb))
    [ "$ex" -gt "$worst" ] && worst=$ex
    echo "$n $r $lb +$ex $ms"
done
echo "worst excess over LB for n=2..$NMAX: +$worst"

for n in 1024 512 256 255 254 247 231 128 127 100; do
    [ "$n" -le "$NMAX" ] || [ "$n" -eq 1024 ] || [ "$n" -eq 512 ] || continue
    ts=()
    for i in $(seq "$RUNS"); do
        read -r r lb ms < <(plan "$n")
        ts+=("$ms")
    done
    med=$(printf '%s\n' "${ts[@]}" | sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }')
    echo "n=$n: rounds $r (LB $lb), planning median ${med} ms over $RUNS runs"
done
