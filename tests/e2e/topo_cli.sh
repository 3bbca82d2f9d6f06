#!/usr/bin/env bash
# `ccsynth topo`: exit codes, messages, the summary, and DOT that Graphviz
# accepts.
set -u
. "$(dirname "$0")/common.bash"

expect 0 "usage: ccsynth topo" -- $C topo --help
expect 2 "--topo is required" -- $C topo
expect 2 "unexpected argument" -- $C topo --topo dgx-h100 extra
expect 2 "bad --alpha" -- $C topo --topo dgx-h100 --alpha fast
expect 2 "bad --bw" -- $C topo --topo dgx-h100 --bw 10GB
expect 2 "" -- $C topo --frobnicate
expect 3 "unknown topology 'nope'" -- $C topo --topo nope
expect 3 "dimension 0" -- $C topo --topo torus:0x3
expect 3 "unknown option 'foo'" -- $C topo --topo switch:8,foo=1
expect 3 "cannot open" -- $C topo --topo "$tmp/missing.yaml"
expect 3 "dup_key.yaml:6:3: duplicate key 'alpha'" -- \
    $C topo --topo tests/data/topo/dup_key.yaml
expect 3 "unknown_node.yaml:7:18: unknown node 'gpu9'" -- \
    $C topo --topo tests/data/topo/unknown_node.yaml
expect 3 "syntax.yaml:3:[0-9]+: YAML syntax error" -- \
    $C topo --topo tests/data/topo/syntax.yaml

# Summaries carry the numbers that define each topology.
expect 0 "9: 8 gpu, 0 nic, 1 switch" -- $C topo --topo dgx-h100
expect 0 "diameter +8 hops" -- $C topo --topo torus:8x8
expect 0 "diameter +14 hops" -- $C topo --topo mesh:8x8
expect 0 "uniform switch yes" -- $C topo --topo switch:16
expect 0 "alpha +1 us \.\. 1 us" -- $C topo --topo switch:8 --alpha 1us
expect 0 "servers +6" -- $C topo --topo topologies/adapcc-hetero.yaml
# Large ones sample the all-pairs figures and say so; --exact does not.
expect 0 "sampled: routes from [0-9]+ of 16384 GPUs" -- \
    $C topo --topo switch:16384
expect 0 "diameter +2 hops \(all nodes" -- $C topo --topo switch:4096 --exact

# A YAML file and its built-in print the same fingerprint.
fp() { "$C" topo --topo "$1" | awk '/fingerprint/ {print $2}'; }
for pair in dgx1:dgx1 torus-8x8:torus:8x8 cluster-2x8:cluster:2x8,nics=server \
            fattree-4x4:fattree:4x4; do
    file=${pair%%:*} spec=${pair#*:}
    a=$(fp "topologies/$file.yaml") b=$(fp "$spec")
    if [ -z "$a" ] || [ "$a" != "$b" ]; then
        echo "FAIL: $file.yaml fingerprint '$a' != $spec '$b'"
        fail=1
    fi
done

# DOT, to a file and to stdout, for every shipped topology: Graphviz must
# accept it.
for f in topologies/*.yaml; do
    expect 0 "" -- $C topo --topo "$f" --dot -o "$tmp/t.dot"
    if ! dot -Tsvg "$tmp/t.dot" -o "$tmp/t.svg" 2>"$tmp/dot.err"; then
        echo "FAIL: dot rejected the DOT of $f: $(cat "$tmp/dot.err")"
        fail=1
    fi
done
for s in cluster:2x4,nics=gpu fattree:2x4x2 ring:2; do
    if ! "$C" topo --topo "$s" --dot | dot -Tsvg -o "$tmp/s.svg"; then
        echo "FAIL: dot rejected the DOT of $s"
        fail=1
    fi
done
# --dot - prints the graph only, no summary.
out=$("$C" topo --topo dgx1 --dot)
case "$out" in
    "digraph "*) ;;
    *) echo "FAIL: --dot - does not start with digraph"; fail=1 ;;
esac
expect 1 "cannot write" -- $C topo --topo dgx1 --dot -o "$tmp/no/such/dir/x.dot"

# `ccsynth list` shows the built-in forms.
expect 0 "torus:AxB" -- $C list

exit $fail
