#!/usr/bin/env bash
# `ccsynth sim|compare --mode dataflow`: only the CPU executors run it (their
# issue window), not CUDA or NCCL, so every output of it says "CPU executors
# only" (text, CSV, JSON, plot title); tune
# refuses it; --window alone is refused; a window of 1 prints the rank
# mode's figures; the stragglar schedule gains from it on a NIC cluster.
set -u
. "$(dirname "$0")/common.bash"

$C synth --algo stragglar --topo cluster:2x4 -q -o "$tmp/s.ccs" \
    || { echo "FAIL: synth"; exit 1; }

expect 2 "bad --mode 'fast' \\(rank, barrier or dataflow\\)" -- \
    $C sim "$tmp/s.ccs" --mode fast
expect 2 "bad --window '0'" -- $C sim "$tmp/s.ccs" --mode dataflow --window 0
expect 2 "--window is for --mode dataflow" -- $C sim "$tmp/s.ccs" --window 2
expect 2 "--mode dataflow is for sim and compare" -- \
    $C tune --topo switch:4 --mode dataflow
expect 0 "" -- $C sim "$tmp/s.ccs" --mode dataflow --window 2 --sizes 1M -q

# the label, in every format of both commands
for fmt in "" --csv; do
    out=$($C sim "$tmp/s.ccs" --mode dataflow --sizes 1M $fmt)
    printf '%s\n' "$out" | grep -q '^# mode dataflow, window 4: threads, MPI and cuda executors, not NCCL' \
        || { echo "FAIL: sim $fmt lacks the label: $out"; fail=1; }
    out=$($C compare --topo switch:4 --algos ring,rhd --sizes 1M \
          --mode dataflow $fmt -q)
    printf '%s\n' "$out" | grep -q '^# mode dataflow, window 4: threads, MPI and cuda executors, not NCCL' \
        || { echo "FAIL: compare $fmt lacks the label: $out"; fail=1; }
done
out=$($C sim "$tmp/s.ccs" --mode dataflow --window 3 --sizes 1M --json)
printf '%s' "$out" | grep -q '"mode": "dataflow"' \
    && printf '%s' "$out" | grep -q '"window": 3, "mode_note": "threads, MPI and cuda executors, not NCCL' \
    || { echo "FAIL: sim --json lacks the label: $out"; fail=1; }
out=$($C compare --topo switch:4 --algos ring --sizes 1M --mode dataflow --json -q)
printf '%s' "$out" | grep -q '"mode_note": "threads, MPI and cuda executors, not NCCL' \
    || { echo "FAIL: compare --json lacks the label: $out"; fail=1; }
# the modes the executors follow carry no such note
$C sim "$tmp/s.ccs" --sizes 1M | grep -q 'threads, MPI and cuda executors, not NCCL' \
    && { echo "FAIL: rank mode labelled as a what-if"; fail=1; }

# window 1 is the rank mode; the default window gains on the NIC cluster
t_rank=$($C sim "$tmp/s.ccs" --sizes 256M --straggler-delay 50ms --csv | tail -n 1 | cut -d, -f4)
t_one=$($C sim "$tmp/s.ccs" --sizes 256M --straggler-delay 50ms --mode dataflow \
        --window 1 --csv | tail -n 1 | cut -d, -f4)
t_flow=$($C sim "$tmp/s.ccs" --sizes 256M --straggler-delay 50ms --mode dataflow \
         --csv | tail -n 1 | cut -d, -f4)
[ "$t_one" = "$t_rank" ] || { echo "FAIL: window 1 $t_one us, rank $t_rank us"; fail=1; }
awk -v a="$t_flow" -v b="$t_rank" 'BEGIN { exit !(a < b) }' \
    || { echo "FAIL: dataflow $t_flow us not below rank $t_rank us"; fail=1; }

if [ "$fail" -eq 0 ]; then echo "sim_dataflow_cli: ok"; fi
exit "$fail"
