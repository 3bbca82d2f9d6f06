#!/usr/bin/env bash
# `ccsynth tune`: exit codes, table/CSV/JSON, the pruned search against
# --full-grid, --emit (plans that verify, simulate and are named by
# tuning.json), determinism, atomic output.
set -u
. "$(dirname "$0")/common.bash"

S="--sizes 1K:1G:4"
expect 0 "usage: ccsynth tune" -- $C tune --help
expect 2 "topo is required" -- $C tune
expect 2 "bad --prune" -- $C tune --topo switch:8 --prune -1
expect 2 "bad --pipeline" -- $C tune --topo switch:8 --pipelines 0
expect 2 "bad --chunks" -- $C tune --topo switch:8 --chunks x
expect 2 "20 what\? write 20ms" -- $C tune --topo switch:8 --straggler 1 --straggler-delay 20
expect 2 "bad --straggler-delay" -- $C tune --topo switch:8 --straggler 1 --straggler-delay -5ms
expect 2 "--straggler-delay needs --straggler" -- $C tune --topo switch:8 --straggler-delay 5ms
expect 2 "unknown algorithm 'nope'" -- $C tune --topo switch:8 --algos ring,nope
expect 2 "--straggler 1 needs --straggler-delay" -- $C tune --topo switch:8 --straggler 1
expect 2 "out of range" -- $C tune --topo switch:8 --straggler 8 \
    --straggler-delay 1ms
expect 2 "unexpected argument" -- $C tune --topo switch:8 extra
expect 3 "" -- $C tune --topo nosuch:3
expect 5 "none of the 1 algorithm" -- $C tune --topo switch:8 --algos ring \
    --coll broadcast

# Table: header, search line with the counts, one row per range.
out=$($C tune --topo switch:8 $S -q)
printf '%s\n' "$out" | grep -qE '^# search: pruned .* simulations .* vs 297 for the full grid' ||
    { echo "FAIL: no search line: $out"; fail=1; }
# allpairs throughout, with LL up to 1 MiB and Simple above (the
# protocol axis), each against the nccl baseline
printf '%s\n' "$out" | grep -qE '^1 KiB \.\. 1 MiB +allpairs +ll ' &&
printf '%s\n' "$out" | grep -qE '^4 MiB \.\. 1 GiB +allpairs +simple ' ||
    { echo "FAIL: switch:8 should be allpairs throughout: $out"; fail=1; }
printf '%s\n' "$out" | grep -qE 'vs nccl .* nccl choice .* vs ring' ||
    { echo "FAIL: tune table has no vs nccl column: $out"; fail=1; }

# CSV: one row per size (11), pruned choices equal the full grid's.
$C tune --topo cluster:2x8 $S -q --csv > "$tmp/p.csv" || fail=1
$C tune --topo cluster:2x8 $S -q --csv --full-grid > "$tmp/g.csv" || fail=1
n=$(tail -n +2 "$tmp/p.csv" | wc -l)
[ "$n" -eq 11 ] || { echo "FAIL: want 11 CSV rows, got $n"; fail=1; }
if ! cmp -s <(cut -d, -f1,3-7 "$tmp/p.csv") <(cut -d, -f1,3-7 "$tmp/g.csv"); then
    echo "FAIL: pruned and full-grid choices differ:"
    diff <(cut -d, -f1,3-7 "$tmp/p.csv") <(cut -d, -f1,3-7 "$tmp/g.csv")
    fail=1
fi
# ring, dbtree on switch:8: dbtree (coarse chunks) small, ring large.
$C tune --topo switch:8 $S -q --csv --algos ring,dbtree > "$tmp/rd.csv"
sed -n 2p "$tmp/rd.csv" | grep -q '^1024,0,dbtree,' ||
    { echo "FAIL: 1 KiB should be dbtree: $(sed -n 2p "$tmp/rd.csv")"; fail=1; }
tail -1 "$tmp/rd.csv" | grep -q '^1073741824,[0-9]*,ring,' ||
    { echo "FAIL: 1 GiB should be ring: $(tail -1 "$tmp/rd.csv")"; fail=1; }

# --emit: plans verify, simulate from their own topo= line; tuning.json
# names every file; JSON equals --json; nothing temporary left.
$C tune --topo cluster:2x8 $S -q --emit "$tmp/plans" -o "$tmp/t.json" \
    > /dev/null || { echo "FAIL: tune --emit"; fail=1; }
[ -f "$tmp/plans/tuning.json" ] || { echo "FAIL: no tuning.json"; fail=1; }
cmp -s "$tmp/t.json" "$tmp/plans/tuning.json" ||
    { echo "FAIL: --json and tuning.json differ"; fail=1; }
nccs=0
for f in "$tmp"/plans/*.ccs; do
    nccs=$((nccs + 1))
    b=$(basename "$f")
    case "$b" in tune-allreduce-*-[pc][0-9]*.ccs) ;;
        *) echo "FAIL: odd plan name $b"; fail=1 ;; esac
    $C verify "$f" > /dev/null || { echo "FAIL: $b does not verify"; fail=1; }
    $C sim "$f" --sizes 1M > /dev/null || { echo "FAIL: sim $b"; fail=1; }
    grep -q "\"file\": \"$b\"" "$tmp/plans/tuning.json" ||
        { echo "FAIL: tuning.json does not name $b"; fail=1; }
done
[ "$nccs" -ge 2 ] || { echo "FAIL: want >= 2 plans, got $nccs"; fail=1; }
nconf=$(grep -c '"id": ' "$tmp/plans/tuning.json")
[ "$nconf" -eq "$nccs" ] || { echo "FAIL: $nconf configs, $nccs files"; fail=1; }
left=$(find "$tmp/plans" -type f ! -name '*.ccs' ! -name tuning.json)
[ -z "$left" ] || { echo "FAIL: left behind: $left"; fail=1; }
if command -v python3 > /dev/null; then
    python3 -c 'import json, sys; d = json.load(open(sys.argv[1]));
r = d["ranges"]; assert r[0]["min_bytes"] == 0 and r[-1]["max_bytes"] is None
for a, b in zip(r, r[1:]): assert a["max_bytes"] + 1 == b["min_bytes"]' \
        "$tmp/plans/tuning.json" || { echo "FAIL: tuning.json ranges"; fail=1; }
fi

# Deterministic: the same command gives the same bytes, plans included.
$C tune --topo cluster:2x8 $S -q --emit "$tmp/plans2" --json > "$tmp/t2.json"
cmp -s "$tmp/t.json" "$tmp/t2.json" || { echo "FAIL: JSON not deterministic"; fail=1; }
for f in "$tmp"/plans/*.ccs; do
    cmp -s "$f" "$tmp/plans2/$(basename "$f")" ||
        { echo "FAIL: $(basename "$f") not deterministic"; fail=1; }
done

# Straggler scenario: every time includes the delay.
$C tune --topo switch:8 $S -q --csv --straggler 3 --straggler-delay 1ms \
    > "$tmp/s.csv" || fail=1
awk -F, 'NR > 1 && $7 < 1000 { bad = 1 } END { exit bad }' "$tmp/s.csv" ||
    { echo "FAIL: straggler times below the delay"; fail=1; }

[ "$fail" -eq 0 ] && echo "tune_cli: ok"
exit "$fail"
