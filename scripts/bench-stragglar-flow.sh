#!/usr/bin/env bash
# The topology-aware stragglar under hazard-ordered issue (the simulator's
# dataflow mode, docs/simulator.md "Dataflow"; the CPU executors run it with
# an issue window, the CUDA and NCCL executors do not, so on these GPU
# clusters every figure here is a what-if) against the straggler-unaware
# algorithms, the rows of docs/stragglar-topo.md's table.
#
# Per topology, straggler and size, the time after the straggler's
# arrival (us; delay past phase 0):
#   unaware rank / flow   the fastest straggler-unaware algorithm (ring,
#                         dbtree, multitree, rhd, allpairs, nccl-ring,
#                         nccl-tree; nvls where the switch reduces) in the
#                         rank mode and in the dataflow mode; the fair
#                         baseline is the better of the two (NCCL's
#                         channels progress independently too)
#   sar rank / flow       stragglar as compare builds it (blocks for
#                         512 MiB), each mode
#   --size rank / flow    stragglar built for the size (synth --size)
#   best K                the --pipeline K (of KS) fastest in the dataflow
#                         mode, and its time
#   LB                    the lower bound (docs/stragglar-topo.md)
#   x best, x LB          the best stragglar figure in the dataflow mode
#                         over the fair baseline and over the bound
#                         (targets: <= 0.65 and <= 1.2)
#
#   usage: BUILD=build scripts/bench-stragglar-flow.sh [PROTO]
#   PROTO: ideal (default, the pure alpha-beta model of the table) or auto
#   (each algorithm at its best of LL, LL128 and Simple); WINDOW=W sets
#   the dataflow window (default: the simulator's), KS the K list.
# About 40 s on an idle 2-core machine (adapcc-hetero's 24 ranks dominate).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
C=$BUILD/bin/ccsynth
PROTO=${1:-ideal}
KS=${KS:-8 12 16 24 32 48 64}
WIN=()
if [ -n "${WINDOW:-}" ]; then WIN=(--window "$WINDOW"); fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

UNAWARE=ring,dbtree,multitree,rhd,allpairs,nccl-ring,nccl-tree

# after ALGO-or-"bound" from compare's "after rank ... arrives" table, at
# size SIZE (bytes): reads the table on stdin
after_col() { # after_col NAME SIZE
    awk -v want="$1" -v size="$2" '
        /^# after rank/ { on = 1; next }
        on && /^#  *size/ { for (i = 3; i <= NF; i++) col[$i] = i; next }
        on && $2 == size { if (want in col) print $(col[want]); exit }'
}

# best_unaware FILE SIZE -> "time algo"
best_unaware() {
    local f=$1 size=$2 best="" who=""
    for a in ${UNAWARE//,/ } nvls; do
        local v
        v=$(after_col "$a" "$size" < "$f")
        [ -n "$v" ] || continue
        if [ -z "$best" ] || awk -v a="$v" -v b="$best" 'BEGIN { exit !(a < b) }'; then
            best=$v; who=$a
        fi
    done
    echo "$best $who"
}

# after_sim FILE SIZE MODE: stragglar schedule FILE's time after arrival
# (with PROTO auto, at its best of LL, LL128 and Simple, as compare does)
after_sim() {
    local mode=(--mode "$3") protos=$PROTO
    if [ "$3" = dataflow ]; then mode+=("${WIN[@]}"); fi
    if [ "$PROTO" = auto ]; then protos="ll ll128 simple"; fi
    for p in $protos; do
        "$C" sim "$1" --sizes "$2" --straggler-delay "$DELAY" --proto "$p" \
            "${mode[@]}" -q | sed -n 's/.*arrives: \([0-9.]*\) us.*/\1/p'
    done | sort -g | head -1
}

printf '# stragglar after the straggler arrives, rank mode against dataflow '
printf '(CPU executors only: CUDA and NCCL run steps in order), proto %s\n' "$PROTO"
printf '%-30s %5s | %-22s %-22s | %9s %9s | %9s %9s | %-12s | %9s | %6s %6s %s\n' \
    "topology, straggler" size "unaware rank" "unaware flow" "sar rank" \
    "sar flow" "--size r" "--size f" "best K flow" LB "x best" "x LB" met
while read -r topo strag DELAY; do
    algos=$UNAWARE,stragglar
    case $topo in dgx-h100*|*nvls=on*) algos=$algos,nvls ;; esac
    for mode in rank dataflow; do
        m=(--mode "$mode")
        if [ "$mode" = dataflow ]; then m+=("${WIN[@]}"); fi
        "$C" compare --topo "$topo" --sizes 256M,1G --straggler "$strag" \
            --straggler-delay "$DELAY" --algos "$algos" --proto "$PROTO" \
            "${m[@]}" -q > "$tmp/$mode.txt"
    done
    for size in 268435456 1073741824; do
        read -r ur uwr < <(best_unaware "$tmp/rank.txt" "$size")
        read -r uf uwf < <(best_unaware "$tmp/dataflow.txt" "$size")
        sr=$(after_col stragglar "$size" < "$tmp/rank.txt")
        sf=$(after_col stragglar "$size" < "$tmp/dataflow.txt")
        lb=$(after_col bound "$size" < "$tmp/rank.txt")
        "$C" synth --algo stragglar --topo "$topo" --straggler "$strag" \
            --size "$size" -o "$tmp/s.ccs" -q
        zr=$(after_sim "$tmp/s.ccs" "$size" rank)
        zf=$(after_sim "$tmp/s.ccs" "$size" dataflow)
        bk="size"; bv=$zf
        for k in $KS; do
            "$C" synth --algo stragglar --topo "$topo" --straggler "$strag" \
                --pipeline "$k" -o "$tmp/k.ccs" -q
            v=$(after_sim "$tmp/k.ccs" "$size" dataflow)
            if awk -v a="$v" -v b="$bv" 'BEGIN { exit !(a < b) }'; then
                bk=$k; bv=$v
            fi
        done
        best=$(awk -v a="$sf" -v b="$bv" 'BEGIN { print (a < b ? a : b) }')
        fair=$(awk -v a="$ur" -v b="$uf" 'BEGIN { print (a < b ? a : b) }')
        awk -v t="$topo, $strag" -v s="$size" -v ur="$ur" -v uwr="$uwr" \
            -v uf="$uf" -v uwf="$uwf" -v sr="$sr" -v sf="$sf" -v zr="$zr" \
            -v zf="$zf" -v bk="$bk" -v bv="$bv" -v lb="$lb" -v best="$best" \
            -v fair="$fair" 'BEGIN {
            xb = best / fair; xl = best / lb
            printf "%-30s %5s | %9.2f %-12s %9.2f %-12s | %9.2f %9.2f | %9.2f %9.2f | %4s %7.2f | %9.2f | %6.3f %6.3f %s\n",
                t, s == 268435456 ? "256M" : "1G", ur, uwr, uf, uwf, sr, sf,
                zr, zf, bk, bv, lb, xb, xl,
                (xb <= 0.65 && xl <= 1.2) ? "yes" : (xl <= 1.2 ? "x LB only" : "no") }'
    done
done <<'EOF'
cluster:2x8 5 50ms
cluster:4x8 5 50ms
topologies/adapcc-hetero.yaml 18 1s
topologies/adapcc-hetero.yaml 5 1s
cluster:4x8,nics=server 5 50ms
cluster:2x8,nics=server 5 50ms
dgx-h100 7 50ms
EOF
