#!/usr/bin/env bash
# `ccsynth synth --algo stragglar` and `ccsynth matching` from the outside.
set -u
. "$(dirname "$0")/common.bash"

# Synthesis: report line, verification, any straggler, errors.
expect 0 "phase 1: 9 rounds \(LB 9\)" -- $C synth --algo stragglar --topo switch:8
expect 0 "phase 0: 0 steps, phase 1: 1 rounds \(LB 1\)" -- $C synth --algo stragglar --topo switch:2
expect 0 "verified \(one-port\)" -- $C synth --algo stragglar --topo switch:7 --straggler 2 -o "$tmp/s7.ccs"
[ -s "$tmp/s7.ccs" ] || { echo "FAIL: s7.ccs not written"; fail=1; }
expect 0 "straggler 2" -- $C verify "$tmp/s7.ccs"
expect 5 "does not implement reducescatter" -- $C synth --algo stragglar --coll reducescatter --topo switch:4
expect 5 "phase-0 algorithm 'rhd' not supported" -- $C synth --algo stragglar --phase0 rhd --topo switch:4
expect 2 "straggler 9 out of range" -- $C synth --algo stragglar --topo switch:4 --straggler 9

# Matching: a triangle with a pendant; output format and totals.
printf '# triangle plus pendant\n0 1 5\n1 2 6\n\n0 2 4\n2 3 3\n' > "$tmp/g.txt"
out=$($C matching < "$tmp/g.txt")
want=$'0 1\n1 0\n2 3\n3 2\nweight 8'
[ "$out" = "$want" ] || { echo "FAIL: matching output: $out"; fail=1; }
printf '0 1 1\n1 2 10\n2 3 1\n' > "$tmp/p.txt"
expect 0 "weight 10" -- sh -c "$C matching < $tmp/p.txt"
expect 0 "weight 2" -- sh -c "$C matching --max-cardinality < $tmp/p.txt"
printf '0 1 -2\n' > "$tmp/n.txt"
expect 0 "^0 -1" -- sh -c "$C matching < $tmp/n.txt"
printf '0 1 1\n1 2\n' > "$tmp/bad.txt"
expect 3 "stdin:2: expected 'u v w'" -- sh -c "$C matching < $tmp/bad.txt"
printf '0 0 1\n' > "$tmp/loop.txt"
expect 3 "stdin:1: self-loop" -- sh -c "$C matching < $tmp/loop.txt"
expect 0 "usage: ccsynth matching" -- $C matching --help
expect 2 "unexpected argument" -- $C matching extra

exit $fail
