#!/usr/bin/env bash
# `ccsynth export --msccl` and `ccsynth import --msccl`: a synthesized
# schedule goes out as MSCCL XML and comes back verified; the imported file
# works with verify/show/sim; usage errors, broken XML (exit 3), deadlocks
# and wrong results (exit 4), executor limits (exit 5); the public MSCCL
# files in ../shared/msccl import clean.
set -u
. "$(dirname "$0")/common.bash"

[ -x "$C" ] || { echo "FAIL: $C not built"; exit 1; }

# Usage.
expect 0 "usage: ccsynth export" -- $C export --help
expect 0 "usage: ccsynth import" -- $C import --help
expect 2 "say which format: --msccl" -- $C export x.ccs -o y.xml
expect 2 "-o ALGO.xml is required" -- $C export --msccl x.ccs
expect 2 "bad --proto" -- $C export --msccl --proto LL64 x.ccs -o y.xml
expect 2 "bad --inplace" -- $C export --msccl --inplace maybe x.ccs -o y.xml
expect 2 "say which format" -- $C import x.xml
expect 3 "cannot open" -- $C import --msccl "$tmp/none.xml"
# The shared option layer: a missing value is one line naming the option.
expect 2 "option --proto needs a value" -- $C export --msccl x.ccs --proto
expect 2 "option --max-steps needs a value" -- $C import --msccl --max-steps
expect 2 "bad --nchannels '99'" -- $C export --msccl --nchannels 99 x.ccs -o y
expect 2 "option --msccl takes no value" -- $C import --msccl=1 x.xml
expect 2 "unknown option '--json'" -- $C export --msccl --json x.ccs -o y

# Round trip of a ring and a StragglAR allreduce.
for algo in ring stragglar; do
    expect 0 "" -- $C synth -q --algo $algo --topo dgx-h100 -o "$tmp/$algo.ccs"
    expect 0 "export: $algo allreduce, 8 ranks" -- \
        $C export --msccl --proto LL128 --min-bytes 1K --max-bytes 64M \
        "$tmp/$algo.ccs" -o "$tmp/$algo.xml"
    grep -q 'proto="LL128"' "$tmp/$algo.xml" &&
        grep -q 'minBytes="1024" maxBytes="67108864"' "$tmp/$algo.xml" ||
        { echo "FAIL: $algo.xml lacks the asked attributes"; fail=1; }
    expect 0 "ok \(allreduce .* verified -> " -- \
        $C import --msccl "$tmp/$algo.xml" -o "$tmp/$algo.back.ccs"
    expect 0 "ok \(allreduce, msccl, 8 ranks" -- $C verify "$tmp/$algo.back.ccs"
    expect 0 '"min_bytes": 1024,' -- $C import --msccl --json "$tmp/$algo.xml"
    expect 0 '"max_bytes": 67108864,' -- $C import -q -j --msccl "$tmp/$algo.xml"
    expect 0 "msccl_name=ccsynth_${algo}_allreduce_8" -- \
        $C show "$tmp/$algo.back.ccs"
    # both under the ideal model: the imported plan carries the XML's
    # proto=Simple, the original none
    a=$($C sim "$tmp/$algo.ccs" --proto ideal --sizes 64M --csv |
        tail -1 | cut -d, -f4)
    b=$($C sim "$tmp/$algo.back.ccs" --proto ideal --topo dgx-h100 \
        --sizes 64M --csv | tail -1 | cut -d, -f4)
    if ! awk -v a="$a" -v b="$b" 'BEGIN { d = b - a; if (d < 0) d = -d;
                                         exit !(a > 0 && d <= 0.05 * a) }'; then
        echo "FAIL: $algo round trip simulates $b us, the original $a us"
        fail=1
    fi
done
# The in-place reading of the same program (input and output aliased) is
# right too: import it as in-place only.
grep -q 'inplace="1"' "$tmp/ring.xml" ||
    { echo "FAIL: ring.xml is not declared in-place"; fail=1; }
sed 's/outofplace="1"/outofplace="0"/' "$tmp/ring.xml" > "$tmp/ring-ip.xml"
expect 0 "ok \(allreduce" -- $C import --msccl "$tmp/ring-ip.xml"
# ring forwards: fused steps
grep -q 'type="rrcs"\|type="rrs"' "$tmp/ring.xml" ||
    { echo "FAIL: ring.xml has no fused receive-reduce-send"; fail=1; }
# stdout
expect 0 "<algo name=\"ccsynth_ring_allreduce_8\"" -- \
    $C export --msccl -q "$tmp/ring.ccs" -o -

# Limits: a refusal names the limit and the way out.
expect 0 "" -- $C synth -q --algo ring --topo switch:32 -o "$tmp/r32.ccs"
expect 5 "more than the 2 steps per thread block.*way out" -- \
    $C export --msccl --max-steps 2 "$tmp/r32.ccs" -o "$tmp/r32.xml"

# Broken XML.
printf '<algo proto="Simple"' > "$tmp/trunc.xml"
expect 3 "trunc.xml:1: malformed XML" -- $C import --msccl "$tmp/trunc.xml"
sed 's/ outofplace="[01]"//' "$tmp/ring.xml" > "$tmp/noattr.xml"
expect 3 "noattr.xml:1: <algo> lacks the attribute 'outofplace'" -- \
    $C import --msccl "$tmp/noattr.xml"
# a receive turned into a plain receive: wrong result, exit 4
sed '0,/type="rrcs"/s//type="rcs"/' "$tmp/ring.xml" > "$tmp/wrong.xml"
expect 4 "the algorithm is wrong" -- $C import --msccl "$tmp/wrong.xml"
# one send dropped: the peer waits forever
awk 'done == 0 && /type="s"/ { sub(/type="s"/, "type=\"nop\""); done = 1 }
     { print }' "$tmp/ring.xml" > "$tmp/hang.xml"
expect 4 "deadlock" -- $C import --msccl "$tmp/hang.xml"
expect 5 "more than 1 steps in one thread block" -- \
    $C import --msccl --max-steps 1 "$tmp/ring.xml"

# tune --emit DIR --msccl: DIR/msccl/ holds one XML per size range; each
# imports back and verifies, and their windows tile every size (the first
# from 0, each next one starting one byte after the previous one ends, the
# last unbounded), at the ranges tuning.json gives.
expect 2 "--msccl needs --emit DIR" -- $C tune --topo switch:8 --msccl
TA="--topo cluster:2x4 --sizes 1K:1G:4 --algos ring,dbtree,allpairs -q"
mkdir -p "$tmp/tuned/msccl"
: > "$tmp/tuned/msccl/07-old-allreduce-8.xml"    # an earlier run's file
expect 0 "" -- $C tune $TA --emit "$tmp/tuned" --msccl
[ ! -e "$tmp/tuned/msccl/07-old-allreduce-8.xml" ] ||
    { echo "FAIL: tune --msccl left an earlier run's XML"; fail=1; }
nx=0
: > "$tmp/windows"
for f in "$tmp"/tuned/msccl/*.xml; do
    nx=$((nx + 1))
    $C import --msccl --json "$f" > "$tmp/imp.json" ||
        { echo "FAIL: $f does not import"; fail=1; continue; }
    lo=$(sed -n 's/.*"min_bytes": \([0-9]*\).*/\1/p' "$tmp/imp.json")
    hi=$(sed -n 's/.*"max_bytes": \([0-9]*\).*/\1/p' "$tmp/imp.json")
    echo "$lo $hi" >> "$tmp/windows"
done
nr=$(grep -c '"min_bytes"' "$tmp/tuned/tuning.json")
[ "$nx" -ge 2 ] && [ "$nx" -eq "$nr" ] ||
    { echo "FAIL: $nx XMLs for $nr ranges (want >= 2, equal)"; fail=1; }
sort -n "$tmp/windows" | awk '
    NR == 1 && $1 != 0 { print "FAIL: first window starts at " $1; bad = 1 }
    NR > 1 && prev == 0 { print "FAIL: a window after the unbounded one"; bad = 1 }
    NR > 1 && $1 != prev + 1 { print "FAIL: gap or overlap at " $1; bad = 1 }
    { prev = $2 }
    END { if (prev != 0) { print "FAIL: last window ends at " prev; bad = 1 }
          exit bad }' || fail=1
# each XML runs the protocol its plan won with
for f in "$tmp"/tuned/msccl/*.xml; do
    grep -q 'proto="\(LL\|LL128\|Simple\)"' "$f" ||
        { echo "FAIL: $f has no MSCCL protocol"; fail=1; }
done
grep -q 'proto="LL"' "$tmp"/tuned/msccl/00-*.xml ||
    { echo "FAIL: the smallest sizes' XML is not LL (tuned: ll)"; fail=1; }
# the same windows as tuning.json (max_bytes null there = 0 here)
sed -n 's/.*"min_bytes": \([0-9]*\), "max_bytes": \([0-9a-z]*\),.*/\1 \2/p' \
    "$tmp/tuned/tuning.json" | sed 's/null$/0/' > "$tmp/jwin"
cmp -s <(sort -n "$tmp/windows") "$tmp/jwin" ||
    { echo "FAIL: XML windows differ from tuning.json:"; cat "$tmp/windows" "$tmp/jwin"; fail=1; }
# a file that is not the tuner's would be loaded beside its files: refused,
# nothing changed
echo '<algo/>' > "$tmp/tuned/msccl/mine.xml"
before=$(ls "$tmp/tuned/msccl" | wc -l)
expect 2 "mine.xml is not one of the tuner's files" -- \
    $C tune $TA --emit "$tmp/tuned" --msccl
[ "$(ls "$tmp/tuned/msccl" | wc -l)" -eq "$before" ] ||
    { echo "FAIL: a refused tune --msccl changed msccl/"; fail=1; }

# Thread blocks per GPU: all must be resident at once (one per SM), and
# the executor has 1024 ids.  StragglAR at 64 ranks needs one per peer.
expect 2 "bad --max-tbs '2000'" -- $C export --msccl --max-tbs 2000 x.ccs -o y
expect 0 "" -- $C synth -q --algo stragglar --topo switch:64 -o "$tmp/s64.ccs"
expect 0 "up to 63 thread blocks per gpu" -- \
    $C export --msccl "$tmp/s64.ccs" -o "$tmp/s64.xml"
expect 5 "more than the 32 that can be resident at once.*way out: --max-tbs" \
    -- $C export --msccl --max-tbs 32 "$tmp/s64.ccs" -o "$tmp/s64b.xml"
[ ! -e "$tmp/s64b.xml" ] || { echo "FAIL: a refused export wrote"; fail=1; }
expect 5 "more than the 32 that can be resident" -- \
    $C import --msccl --max-tbs 32 "$tmp/s64.xml"
# NVLS reduces in the switch: no XML can say that, NCCL runs it itself.
expect 0 "" -- $C synth -q --algo nvls --topo dgx-h100 -o "$tmp/nvls.ccs"
expect 5 "has no in-switch reduction.*fall back to NCCL" -- \
    $C export --msccl "$tmp/nvls.ccs" -o "$tmp/nvls.xml"

# The public files (beside the project, as in CI).
pub=${CCS_MSCCL_DIR:-../shared/msccl}
if [ ! -d "$pub" ]; then
    echo "FAIL: the public MSCCL files are not at $pub (set CCS_MSCCL_DIR)"
    fail=1
else
    n=0
    for f in "$pub"/*.xml; do
        expect 0 "ok \(" -- $C import --msccl "$f" -o "$tmp/pub.ccs"
        n=$((n + 1))
    done
    [ "$n" -ge 7 ] || { echo "FAIL: only $n public files in $pub"; fail=1; }
    expect 0 "" -- $C import -q --msccl "$pub/azure-ndv4-r48ll128.xml" \
        -o "$tmp/r48.ccs"
    expect 0 "67108864" -- $C sim "$tmp/r48.ccs" --topo dgx-a100 --sizes 64M
fi

exit $fail
