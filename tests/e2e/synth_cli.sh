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

# --dot points to the commands that draw: trees (MultiTree's trees) and
# show --dot (any schedule).
expect 2 "ccsynth trees" -- $C synth --algo multitree --topo torus:4x4 -q -o "$tmp/mt.ccs" --dot "$tmp/mt.dot"
expect 2 "show --dot" -- $C synth --algo ring --topo switch:4 --dot

# One option layer: a missing value is one line naming the option; times
# need a unit; --straggler is refused where the algorithm ignores it.
expect 2 "^ccsynth synth: option --topo needs a value$" -- $C synth --algo ring --topo
expect 2 "option --root needs a value" -- $C synth --algo ring --root --topo switch:4
expect 2 "unknown option '--nope'" -- $C synth --algo ring --topo switch:4 --nope
expect 2 "600 what\? write 600s" -- $C synth --algo milp --topo switch:4 --time-limit 600
expect 0 "note: --straggler 1: ring ignores it" -- $C synth --algo ring --topo switch:4 --straggler 1
expect 2 "--mip-gap is an option of --algo milp" -- $C synth --algo ring --topo switch:4 --mip-gap 0.1
expect 2 "--algo takes one algorithm" -- $C synth --algo ring,rhd --topo switch:4
expect 2 "--pipeline takes one factor" -- $C synth --algo ring --topo switch:4 --pipeline 1,2
expect 0 "verified" -- $C synth --algo stragglar --topo switch:4 --straggler 1
expect 2 "--phase0 is an option of --algo stragglar" -- $C synth --algo ring --topo switch:4 --phase0 rhd
expect 2 "--root: allreduce has no root" -- $C synth --algo ring --topo switch:4 --root 1
n=$($C synth --algo ring --topo switch:4 -q | wc -c)
[ "$n" = 0 ] || { echo "FAIL: synth -q printed $n bytes"; fail=1; }

exit $fail
