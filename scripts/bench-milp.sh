#!/usr/bin/env bash
# bench-milp.sh - MILP synthesis speed and quality.
# Prints, per instance, the median wall time of `ccsynth synth --algo milp`
# over RUNS runs, the solver's outcome/gap line and its incumbents
# (heuristic -> LNS -> branch and bound), and the simulated AllReduce time
# of 256 MiB against ring (and multitree on direct networks).  Targets:
# 8 GPUs < 5 s; 16 GPUs at M = 4 < 30 s, solved or within 10%
# of the bound (the larger of GLPK's LP bound and the proven fill bound,
# docs/milp.md; GLPK's alone is printed too); within 5% of ring on a
# uniform switch at the defaults;
# >= 1.2x faster than ring and dbtree on the heterogeneous cluster.
# Usage: BUILD=build scripts/bench-milp.sh [RUNS]
set -eu
BUILD=${BUILD:-build}
RUNS=${1:-3}
B="$BUILD/bin/ccsynth"
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
simus() {  # schedule topo -> simulated us at 256 MiB
    "$B" sim "$1" --topo "$2" --sizes 256M --proto ideal | tail -1 |
        awk '{print $4}'
}
refus() {  # topo algo -> simulated us at 256 MiB (ideal alpha-beta model)
    "$B" compare --proto ideal --topo "$1" --coll allreduce --algos "$2" \
        --sizes 256M --csv |
        awk -F, -v a="$2" 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
                           { print $c[a "_time_us"] }'
}

bench() {   # name topo M ("-": the default) reference-algos
    local name=$1 topo=$2 m=$3 refs=$4 times=() mopt=() line
    [ "$m" = - ] || mopt=(--milp-m "$m")
    for i in $(seq "$RUNS"); do
        s=$(date +%s.%N)
        "$B" synth --algo milp --coll allreduce --topo "$topo" "${mopt[@]}" \
            --size 256M --time-limit 30s -o "$tmp/$name.ccs" \
            >"$tmp/$name.out" 2>&1
        e=$(date +%s.%N)
        times+=("$(echo "$e - $s" | bc -l)")
    done
    med=$(printf '%s\n' "${times[@]}" | median)
    line="simulated milp $(simus "$tmp/$name.ccs" "$topo") us"
    for a in ${refs//,/ }; do
        line="$line, $a $(refus "$topo" "$a") us"
    done
    printf '%-18s %s median %5.2f s | %s\n%20s| %s\n%20s| %s\n' "$name" \
        "$(grep -o 'M=[0-9]*' "$tmp/$name.out" | head -1)" "$med" \
        "$(grep -o '^milp: [a-z-]*.*objective.*nodes\|model not built: [0-9]* arcs' \
               "$tmp/$name.out" | sed 's/^milp: //')" "" \
        "$(grep -o 'incumbents: .*' "$tmp/$name.out")" "" "$line"
}

echo "# milp allreduce 256 MiB: synthesis time (median of $RUNS runs),"
echo "# solver objective/bound/gap, incumbents, simulated time vs others"
bench switch-4 switch:4 - ring
bench switch-8 switch:8 - ring
bench switch-12 switch:12 - ring
bench switch-16 switch:16 - ring
bench switch-16-m4 switch:16 4 ring
bench switch-24 switch:24 - ring
bench switch-32 switch:32 - ring
bench cluster-2x4 cluster:2x4 4 ring
bench dgx1 topologies/dgx1.yaml - ring,multitree
bench cluster-4x4 cluster:4x4 4 ring
bench torus-4x4 torus:4x4 4 ring,multitree
bench adapcc-hetero topologies/adapcc-hetero.yaml 4 ring,dbtree
bench adapcc-hetero-m6 topologies/adapcc-hetero.yaml 6 ring,dbtree
