#!/usr/bin/env bash
# `ccsynth synth` command line: exit codes, messages, atomic output.
set -u
. "$(dirname "$0")/common.bash"

expect 0 "usage: ccsynth synth" -- $C synth --help
expect 2 "--algo is required" -- $C synth --topo switch:4
expect 2 "unknown algorithm 'nope'" -- $C synth --algo nope --topo switch:4
expect 2 "unknown collective" -- $C synth --algo ring --coll allreduxe --topo switch:4
expect 2 "--topo is required" -- $C synth --algo ring
expect 2 "bad --pipeline" -- $C synth --algo ring --topo switch:4 --pipeline 0
expect 2 "unexpected argument" -- $C synth --algo ring --topo switch:4 extra
expect 3 "" -- $C synth --algo ring --topo torus:0x3
expect 3 "" -- $C synth --algo ring --topo "$tmp/missing.yaml"
expect 2 "unknown command" -- $C frobnicate
expect 2 "usage: ccsynth" -- $C

# A good synthesis writes a file; rhd does not do alltoall (exit 5), and a
# failed run leaves an existing output untouched and no temporary files.
expect 0 "verified" -- $C synth --algo ring --topo switch:4 -o "$tmp/ring.ccs"
[ -s "$tmp/ring.ccs" ] || { echo "FAIL: ring.ccs not written"; fail=1; }
cp "$tmp/ring.ccs" "$tmp/before.ccs"
expect 5 "does not implement alltoall" -- $C synth --algo rhd --coll alltoall --topo switch:4 -o "$tmp/ring.ccs"
cmp -s "$tmp/ring.ccs" "$tmp/before.ccs" || { echo "FAIL: failed synth changed the output"; fail=1; }
leftover=$(ls "$tmp" | grep -v -E '^(ring|before)\.ccs$' || true)
[ -z "$leftover" ] || { echo "FAIL: stray files: $leftover"; fail=1; }
# Same inputs give byte-identical files.
expect 0 "" -- $C synth --algo ring --topo switch:4 -q -o "$tmp/again.ccs"
cmp -s "$tmp/ring.ccs" "$tmp/again.ccs" || { echo "FAIL: not deterministic"; fail=1; }
# Writing into a missing directory fails cleanly.
expect 1 "" -- $C synth --algo ring --topo switch:4 -o "$tmp/no/such/dir/x.ccs"

# --dot draws MultiTree's trees, and is refused where there is nothing to draw.
expect 0 "" -- $C synth --algo multitree --topo torus:4x4 -q -o "$tmp/mt.ccs" --dot "$tmp/mt.dot"
grep -q '^digraph' "$tmp/mt.dot" || { echo "FAIL: --dot wrote no digraph"; fail=1; }
expect 2 "show --dot" -- $C synth --algo ring --topo switch:4 --dot "$tmp/r.dot"

exit $fail
