#!/usr/bin/env bash
# bench-milp.sh - MILP synthesis speed and quality (issue 7).
# Prints, per instance, the median wall time of `ccsynth synth --algo milp`
# over RUNS runs, the solver's outcome/gap line and its incumbents
# (heuristic -> LNS -> branch and bound), and the simulated AllReduce time
# of 256 MiB against ring and dbtree.  Targets (issue 7): 8 GPUs < 5 s;
# 16 GPUs at M = 4 < 30 s, solved or within 10% of the LP bound.
# Usage: BUILD=build scripts/bench-milp.sh [RUNS]
set -eu
BUILD=${BUILD:-build}
RUNS=${1:-3}
B="$BUILD/bin/ccsynth"
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

bench() {   # name topo M
    local name=$1 topo=$2 m=$3 times=()
    for i in $(seq "$RUNS"); do
        s=$(date +%s.%N)
        "$B" synth --algo milp --coll allreduce --topo "$topo" --milp-m "$m" \
            --size 256M --time-limit 30s -o "$tmp/$name.ccs" \
            >"$tmp/$name.out" 2>&1
        e=$(date +%s.%N)
        times+=("$(echo "$e - $s" | bc -l)")
    done
    med=$(printf '%s\n' "${times[@]}" | median)
    printf '%-22s %-9s M=%-2s median %5.2f s | %s\n%36s| %s\n' "$name" \
        "$(grep -o '[0-9]* ranks' "$tmp/$name.out" | head -1)" "$m" "$med" \
        "$(grep -o '^milp: [a-z-]*.*objective.*nodes' "$tmp/$name.out" |
           sed 's/^milp: //')" "" \
        "$(grep -o 'incumbents: .*' "$tmp/$name.out")"
}

echo "# synthesis time (median of $RUNS runs), solver objective/bound/gap"
bench switch-8 switch:8 8
bench cluster-2x4 cluster:2x4 4
bench dgx1 topologies/dgx1.yaml 8
bench cluster-4x4 cluster:4x4 4
bench switch-16 switch:16 4
bench torus-4x4 torus:4x4 4
bench adapcc-hetero topologies/adapcc-hetero.yaml 4
bench adapcc-hetero-m6 topologies/adapcc-hetero.yaml 6

echo "# simulated allreduce, 256 MiB"
"$B" compare --topo topologies/adapcc-hetero.yaml --coll allreduce \
    --algos ring,dbtree --sizes 256M | tail -1
for m in adapcc-hetero adapcc-hetero-m6; do
    "$B" sim "$tmp/$m.ccs" --topo topologies/adapcc-hetero.yaml \
        --sizes 256M | tail -1 | sed "s/^/milp ($m) /"
done
"$B" compare --topo switch:8 --coll allreduce --algos ring,dbtree \
    --sizes 256M | tail -1
"$B" sim "$tmp/switch-8.ccs" --topo switch:8 --sizes 256M | tail -1 |
    sed 's/^/milp /'
"$B" compare --topo switch:16 --coll allreduce --algos ring --sizes 256M |
    tail -1
"$B" sim "$tmp/switch-16.ccs" --topo switch:16 --sizes 256M | tail -1 |
    sed 's/^/milp (M=4) /'
