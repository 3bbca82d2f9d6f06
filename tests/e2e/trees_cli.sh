#!/usr/bin/env bash
# trees_cli.sh - `ccsynth trees` end to end: MultiTree's spanning trees as
# Graphviz DOT that `dot -Tsvg` accepts, on a direct network (torus:4x4)
# and a switched one (fattree:4x4, whose cross-leaf edges name the spine
# of their D-mod-k route); stdout and -o agree; usage and input errors
# give exit codes 2 and 3; `ccsynth show --dot` on multitree .ccs files
# draws the same trees.  Skips (exit 0, with a note) while the
# subcommand is not registered in synth/cli/main.c.
set -euo pipefail
BUILD=${BUILD:-build}
CCS=$BUILD/bin/ccsynth
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

fail() { echo "trees_cli: FAIL: $*" >&2; exit 1; }
[ -x "$CCS" ] || fail "$CCS not built"
"$CCS" trees --help > /dev/null 2>&1 || fail "ccsynth trees --help failed"
command -v dot > /dev/null || fail "graphviz 'dot' is needed"

for spec in torus:4x4 fattree:4x4; do
    f=$tmp/${spec//:/_}
    "$CCS" trees --topo "$spec" -o "$f.dot" > "$f.out" ||
        fail "$spec: exit $?"
    grep -q "T=" "$f.out" || fail "$spec: no summary line: $(cat "$f.out")"
    dot -Tsvg "$f.dot" > "$f.svg" 2> "$f.err" ||
        fail "$spec: dot -Tsvg rejected the DOT: $(head -c 300 "$f.err")"
    grep -q "<svg" "$f.svg" || fail "$spec: no SVG produced"
    # one cluster per rank, n - 1 edges per tree
    clusters=$(grep -c "subgraph cluster_t" "$f.dot")
    [ "$clusters" = 16 ] || fail "$spec: $clusters clusters, want 16"
    edges=$(grep -c -- "->" "$f.dot")
    [ "$edges" = $((16 * 15)) ] || fail "$spec: $edges edges, want 240"
    # stdout gives the same bytes
    "$CCS" trees --topo "$spec" > "$f.stdout.dot" ||
        fail "$spec: stdout form exited $?"
    cmp -s "$f.dot" "$f.stdout.dot" || fail "$spec: -o and stdout differ"
done
# switched edges name their switches; cross-leaf ones a spine
grep -q 'label="[0-9]*/s[0-9].sw,spine[0-9]' "$tmp/fattree_4x4.dot" ||
    fail "fattree:4x4: no edge through a spine"
grep -q 'T=15 ' "$tmp/fattree_4x4.out" ||
    fail "fattree:4x4: T is not the bound 15: $(cat "$tmp/fattree_4x4.out")"
if grep -q '/' <(grep -- "->" "$tmp/torus_4x4.dot"); then
    fail "torus:4x4: a direct network edge passes through a switch"
fi

# `ccsynth show --dot` on a multitree .ccs draws the same trees, read back
# from the file's transfers (no switch names: a .ccs has no routes), for
# every collective; with --rank it draws that rank's transfers instead.
edges() { grep -- ' -> ' "$1" | sed -E 's/^ *//; s#/[^"]*"#"#' | sort; }
for spec in torus:4x4 fattree:4x4; do
    f=$tmp/${spec//:/_}
    for coll in allgather reducescatter allreduce; do
        "$CCS" synth --algo multitree --coll "$coll" --topo "$spec" -q \
            -o "$f.$coll.ccs" || fail "$spec $coll: synth exit $?"
        "$CCS" show --dot "$f.$coll.ccs" > "$f.$coll.dot" ||
            fail "$spec $coll: show --dot exit $?"
        grep -q "subgraph cluster_t15" "$f.$coll.dot" ||
            fail "$spec $coll: show --dot drew no trees: $(head -c 300 "$f.$coll.dot")"
        cmp -s <(edges "$f.dot") <(edges "$f.$coll.dot") ||
            fail "$spec $coll: show --dot trees differ from ccsynth trees"
        dot -Tsvg "$f.$coll.dot" > "$f.$coll.svg" 2> "$f.err" ||
            fail "$spec $coll: dot rejected show --dot: $(head -c 300 "$f.err")"
    done
    "$CCS" show --dot --rank 3 "$f.allreduce.ccs" > "$f.r3.dot" ||
        fail "$spec: show --dot --rank 3 exit $?"
    grep -q '^digraph ccs' "$f.r3.dot" ||
        fail "$spec: show --dot --rank 3 is not the per-transfer drawing"
done

rc=0
"$CCS" trees > /dev/null 2>&1 || rc=$?
[ "$rc" = 2 ] || fail "missing --topo: exit $rc, want 2"
rc=0
"$CCS" trees --topo torus:4x4 --order sideways > /dev/null 2>&1 || rc=$?
[ "$rc" = 2 ] || fail "bad --order: exit $rc, want 2"
rc=0
"$CCS" trees --topo nosuch:3 > /dev/null 2>&1 || rc=$?
[ "$rc" = 3 ] || fail "bad topology: exit $rc, want 3"
rc=0
"$CCS" trees --topo torus:4x4 -o "$tmp/no/such/dir/t.dot" > /dev/null \
    2>&1 || rc=$?
[ "$rc" != 0 ] || fail "unwritable output accepted"
echo "trees_cli: ok"
