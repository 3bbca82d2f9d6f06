#!/usr/bin/env bash
# Benchmark the symbolic verifier (synth/verify/) on large schedules.
#
#   scripts/bench-verify.sh [REPS]      (default 5 runs per case)
#
# Builds tests/bench/bench_verify.c (make bench-progs), then prints
# the median verification time of ring allreduce (256, 512, 1024 ranks) and
# of a one-step direct allgather (1024 ranks, ~1M transfers in one step).
# It also times `ccsynth verify` (reading included) on files written by
# `ccsynth synth`: ring (256, 1024 ranks), StragglAR (1024 ranks) and
# MultiTree on torus:32x32, when those algorithms are built; and on a
# 5.6 KB ring plan over 2^24 chunks (8 ranks, tests/e2e/verify_fixture).
# Each CLI figure is the median wall time and the median CPU time (user +
# sys) of REPS runs, with the peak RSS of the last.
#
# To compare two builds on the same machine in one run, point the script
# at the other build's programs (nothing is rebuilt then):
#   CCSYNTH=/path/ccsynth BENCH_VERIFY=/path/bench_verify \
#     VERIFY_FIXTURE=/path/verify_fixture scripts/bench-verify.sh
# The schedule files are always written by this tree's ccsynth, so both
# builds verify the same bytes.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
REPS=${1:-5}

make -s BUILD="$BUILD" bench-progs >/dev/null
# The CLI is only needed for the CLI figures.
make -s BUILD="$BUILD" "$BUILD/bin/ccsynth" "$BUILD/e2e/verify_fixture" \
    >/dev/null 2>&1 || true
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
B=${BENCH_VERIFY:-$BUILD/bench/bench_verify}
W=$BUILD/bin/ccsynth              # writes the files
C=${CCSYNTH:-$BUILD/bin/ccsynth}  # verifies them
F=${VERIFY_FIXTURE:-$BUILD/e2e/verify_fixture}

echo "verifier benchmark ($REPS runs each, $(nproc) cores, $(uname -m))"
echo "verifying with $C"
for n in 256 512 1024; do
    "$B" ring "$n" "$REPS"
done
"$B" direct 1024 "$REPS"

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

# time_verify LABEL FILE: REPS runs of `ccsynth verify -q FILE`.
time_verify() {
    local label=$1 f=$2 walls=() cpus=() rss=0 w u s
    for _ in $(seq "$REPS"); do
        /usr/bin/time -o "$tmp/time" -f '%e %U %S %M' "$C" verify -q "$f" \
            >/dev/null 2>&1 || true
        read -r w u s rss < "$tmp/time"
        walls+=("$w")
        cpus+=("$(awk -v u="$u" -v s="$s" 'BEGIN {print u + s}')")
    done
    printf 'cli    ccsynth verify: %s (%s bytes): median %.3f s wall, %.3f s cpu, %s KB peak\n' \
        "$label" "$(stat -c %s "$f")" \
        "$(printf '%s\n' "${walls[@]}" | median)" \
        "$(printf '%s\n' "${cpus[@]}" | median)" "$rss"
}

# The CLI path (file reading included) on schedules that `ccsynth synth`
# writes, for each algorithm that is built.
cli_case() { # cli_case ALGO TOPO
    local f=$tmp/$1_${2//[:\/]/_}.ccs
    if ! [ -x "$W" ] || ! "$W" synth --algo "$1" --topo "$2" -q -o "$f" \
            2>/dev/null; then
        echo "cli    $1 on $2: skipped ('ccsynth synth --algo $1' failed)"
        return
    fi
    time_verify "$1 on $2" "$f"
}
cli_case ring switch:256
cli_case ring switch:1024
cli_case stragglar switch:1024
cli_case multitree torus:32x32
if [ -x "$F" ] && "$F" "$tmp" 2>/dev/null; then
    time_verify "ring, 8 ranks x 2^24 chunks" "$tmp/wide8.ccs"
fi
