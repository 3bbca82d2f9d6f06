#!/usr/bin/env bash
# StragglAR sweep: for n = NMIN, NMIN+STEP, .. NMAX, the phase-1 rounds
# against LB(n) = n + ceil(log2 n) - 2 and the CPU seconds of the whole
# synth (plan, emit, verify), then how many n are within LB + 1.
# Usage: BUILD=build scripts/bench-stragglar-sweep.sh [NMIN] [NMAX] [STEP]
set -u
BUILD=${BUILD:-build}
C=$BUILD/bin/ccsynth
NMIN=${1:-3}
NMAX=${2:-1024}
STEP=${3:-1}
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

echo "n rounds LB excess cpu_s"
total=0 within=0 worst=0 worst_n=0
for n in $(seq "$NMIN" "$STEP" "$NMAX"); do
    /usr/bin/time -f '%U %S' -o "$tmp/time" \
        "$C" synth --algo stragglar --topo "switch:$n" -o /dev/null \
        2>"$tmp/err" >/dev/null
    read -r r lb < <(awk '/phase 1:/ { lb = $12; sub(/\)/, "", lb); print $9, lb }' "$tmp/err")
    if [ -z "${r:-}" ]; then
        echo "$n failed: $(tail -1 "$tmp/err")"
        continue
    fi
    cpu=$(awk '{ printf "%.2f", $1 + $2 }' "$tmp/time")
    ex=$((r - lb))
    total=$((total + 1))
    [ "$ex" -le 1 ] && within=$((within + 1))
    if [ "$ex" -gt "$worst" ]; then worst=$ex; worst_n=$n; fi
    echo "$n $r $lb +$ex $cpu"
done
echo "within LB + 1: $within of $total (n = $NMIN..$NMAX step $STEP); worst +$worst (n = $worst_n)"
