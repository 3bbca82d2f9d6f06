#!/usr/bin/env bash
# Run every benchmark script (scripts/bench-*.sh) in turn and print their
# figures.  Benchmarks are not tests: they print medians and ratios measured
# in one run, for the closing notes and the README.  `make bench` calls this.
#   scripts/bench.sh [NAME...]    only bench-NAME.sh
set -u
cd "$(dirname "$0")/.."
export BUILD=${BUILD:-build}
status=0
if [ $# -gt 0 ]; then
    scripts=()
    for n in "$@"; do scripts+=("scripts/bench-$n.sh"); done
else
    scripts=(scripts/bench-*.sh)
fi
for s in "${scripts[@]}"; do
    [ -f "$s" ] || { echo "bench: no $s" >&2; status=1; continue; }
    printf '\n=== %s\n' "$(basename "$s" .sh)"
    bash "$s" || { echo "bench: $s failed" >&2; status=1; }
done
exit $status
