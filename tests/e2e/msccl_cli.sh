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
