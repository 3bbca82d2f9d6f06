#!/usr/bin/env bash
# Runtime benchmarks, side by side, medians of several runs:
#   1. MPI transport replaying a ring allreduce plan vs Open MPI's own
#      MPI_Allreduce, 64 MiB float32 sum, 4 processes (target: <= 1.25x);
#   2. threads executor overhead per step: a 2-rank plan of many tiny
#      steps (one 4-byte exchange each), microseconds per step (< 5 us).
# The ring plan is ccsynth's when the ring algorithm is available, else
# the runtime tests' hand-built ring (same schedule shape).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
PERF=$BUILD/bin/ccs-perf
RUNS=${RUNS:-5}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl=self,vader OMPI_MCA_mpi_yield_when_idle=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$BUILD/tests/test_runtime_exec" --write-plans "$tmp"
ring=$tmp/ring1-r4.ccs
if [ -x "$BUILD/bin/ccsynth" ] && "$BUILD/bin/ccsynth" synth --algo ring \
        --coll allreduce --topo switch:4 -q -o "$tmp/syn-ring.ccs" \
        >/dev/null 2>&1; then
    ring=$tmp/syn-ring.ccs
fi

median() { sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
# time (us) of the out-of-place column of the one data row
perf_time() { grep -vE '^#' | awk 'NF >= 9 {print $6; exit}'; }

echo "== MPI: ring plan ($(basename "$ring")) vs MPI_Allreduce, 64 MiB float32 sum, 4 processes, $RUNS runs"
ours=(); theirs=()
for i in $(seq "$RUNS"); do
    ours+=("$(mpirun --oversubscribe -np 4 "$PERF" -p "$ring" -t mpi \
        -b 64M -e 64M -n 5 -w 2 -c 0 | perf_time)")
    theirs+=("$(mpirun --oversubscribe -np 4 "$PERF" -p "$ring" -t mpi -B \
        -b 64M -e 64M -n 5 -w 2 -c 0 | perf_time)")
done
mo=$(printf '%s\n' "${ours[@]}" | median)
mt=$(printf '%s\n' "${theirs[@]}" | median)
printf '  %-28s %12s us   (runs: %s)\n' "ccs ring plan (mpi)" "$mo" "${ours[*]}"
printf '  %-28s %12s us   (runs: %s)\n' "MPI_Allreduce (Open MPI)" "$mt" "${theirs[*]}"
awk -v a="$mo" -v b="$mt" 'BEGIN {r = a / b; printf "  ratio ccs / MPI = %.3f  (target <= 1.25: %s)\n", r, r <= 1.25 ? "met" : "NOT met"}'

echo
echo "== threads: executor overhead per step, 2 ranks, 4-byte exchanges"
"$BUILD/tests/test_runtime_overhead" --bench "$RUNS"
