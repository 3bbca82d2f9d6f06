#!/usr/bin/env bash
# Benchmark the symbolic verifier (synth/verify/verify.c) on large schedules.
#
#   scripts/bench-verify.sh [REPS]      (default 5 runs per case)
#
# Builds tests/bench/bench_verify.c (make bench-progs), then prints
# the median verification time of ring allreduce (256, 512, 1024 ranks) and
# of a one-step direct allgather (1024 ranks, ~1M transfers in one step).
# It also times `ccsynth verify` (reading included) on ring (256, 1024 ranks)
# and StragglAR (1024 ranks) files written by `ccsynth synth`, when those
# algorithms are built.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
REPS=${1:-5}

make -s BUILD="$BUILD" bench-progs >/dev/null
# The CLI is only needed for the last, optional figure.
make -s BUILD="$BUILD" "$BUILD/bin/ccsynth" >/dev/null 2>&1 || true
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
B=$BUILD/bench/bench_verify

echo "verifier benchmark ($REPS runs each, $(nproc) cores, $(uname -m))"
for n in 256 512 1024; do
    "$B" ring "$n" "$REPS"
done
"$B" direct 1024 "$REPS"

# The CLI path (file reading included) on schedules that `ccsynth synth`
# writes, for each algorithm that is built.
C=$BUILD/bin/ccsynth
cli_case() { # cli_case ALGO TOPO
    local f=$tmp/$1_${2//[:\/]/_}.ccs t0 t1 times=() med
    if ! [ -x "$C" ] || ! "$C" synth --algo "$1" --topo "$2" -q -o "$f" \
            2>/dev/null; then
        echo "cli    $1 on $2: skipped ('ccsynth synth --algo $1' failed)"
        return
    fi
    for _ in $(seq "$REPS"); do
        t0=$(date +%s%N)
        "$C" verify -q "$f"
        t1=$(date +%s%N)
        times+=("$((t1 - t0))")
    done
    med=$(printf '%s\n' "${times[@]}" | sort -n |
          awk '{a[NR]=$1} END {print a[int((NR+1)/2)] / 1e9}')
    printf 'cli    ccsynth verify: %s on %s (%s bytes): median %.4f s\n' \
        "$1" "$2" "$(stat -c %s "$f")" "$med"
}
cli_case ring switch:256
cli_case ring switch:1024
cli_case stragglar switch:1024
