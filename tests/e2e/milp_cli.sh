#!/usr/bin/env bash
# `ccsynth synth --algo milp` on the command line: option errors, the LP
# dump read back by glpsol, the solver options reaching the report and the
# file's parameters, and a plan replayed by the runtime with results
# checked.
set -u
. "$(dirname "$0")/common.bash"
M="$C synth --algo milp --topo cluster:2x4"

# Bad values and options that mean nothing to other algorithms.
expect 2 "bad --mip-gap" -- $M --mip-gap -0.1
expect 2 "bad --time-limit" -- $M --time-limit 0
expect 2 "bad --milp-m '0'" -- $M --milp-m 0
expect 2 "bad --node-limit" -- $M --node-limit -3
expect 2 "bad chunk size list" -- $M --chunk-sizes 1M,,4M
expect 2 "at most 8 candidate" -- $M --chunk-sizes 1K,2K,3K,4K,5K,6K,7K,8K,9K
expect 2 "alltoall is one sub-collective" -- $M --coll alltoall --milp-m 2
expect 2 "--write-lp is an option of --algo milp" -- \
    $C synth --algo ring --topo switch:4 --write-lp "$tmp/x.lp"
expect 2 "--time-limit is an option of --algo milp" -- \
    $C synth --algo dbtree --topo switch:4 --time-limit 5s
expect 1 "writing LP file: .*no/such/dir" -- $M --write-lp "$tmp/no/such/dir/x.lp"

# --write-lp: CPLEX LP that glpsol reads, with the rows the report gives.
expect 0 "model [0-9]+ rows" -- $M --milp-m 2 --size 16M --write-lp "$tmp/m.lp" \
    -o "$tmp/m.ccs"
rows=$($M --milp-m 2 --size 16M -o "$tmp/m2.ccs" 2>&1 |
       sed -n 's/.*model \([0-9]*\) rows.*/\1/p')
if command -v glpsol >/dev/null; then
    out=$(glpsol --lp "$tmp/m.lp" --check 2>&1)
    echo "$out" | grep -q "^$rows rows, " ||
        { echo "FAIL: glpsol read: $out (want $rows rows)"; fail=1; }
fi
cmp -s "$tmp/m.ccs" "$tmp/m2.ccs" || { echo "FAIL: --write-lp changed the plan"; fail=1; }

# --mip-gap 0 is an exact target (not the default), recorded in the file.
expect 0 "gap target 0%, node limit 9" -- $M --milp-m 2 --size 16M \
    --mip-gap 0 --node-limit 9 -o "$tmp/g.ccs"
expect 0 "mip_gap=0" -- $C show "$tmp/g.ccs"
expect 0 "node_limit=9" -- $C show "$tmp/g.ccs"

# The runtime replays the plan with every result checked (#wrong 0, and
# ccs-perf exits non-zero on a wrong result).
expect 0 "Out of bounds values : 0 OK" -- $BUILD/bin/ccs-perf -p "$tmp/g.ccs" \
    -t threads -c 1 -b 64K -e 1M -f 4 -n 1 -w 0

exit $fail
