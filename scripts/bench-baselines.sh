#!/usr/bin/env bash
# Where each algorithm wins against the `nccl` baseline (the best of
# NCCL's algorithms and protocols at each size: nccl-ring, nccl-tree, nvls
# with LL / LL128 / Simple), by topology x size x straggler delay.  One
# `ccsynth compare --csv` per (topology, delay); every algorithm at its
# best protocol per size, like the baseline.  Prints a Markdown table:
# the baseline's choice and time, our fastest algorithm there and its
# speedup, and the headline algorithms' speedups (stragglar, multitree,
# milp where it runs).
#   usage: BUILD=build scripts/bench-baselines.sh [SIZES]
set -eu
BUILD=${BUILD:-build}
C=$BUILD/bin/ccsynth
SIZES=${1:-64K,1M,16M,256M,1G}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# topology | extra compare options | delay label
cases=(
  "dgx-h100||none"
  "dgx-h100|--straggler 0 --straggler-delay 100us|100us"
  "dgx-h100|--straggler 0 --straggler-delay 1ms|1ms"
  "dgx-a100||none"
  "dgx-a100|--straggler 0 --straggler-delay 1ms|1ms"
  "cluster:2x8||none"
  "cluster:2x8,nvls=on||none"
  "cluster:2x8,nics=server||none"
  "torus:4x4||none"
  "fattree:4x4||none"
  "topologies/adapcc-hetero.yaml|--algos ring,multitree,milp|none"
)

printf '| topology | size | straggler delay | nccl choice | nccl (us) | our best | ours (us) | ours vs nccl | stragglar | multitree | milp |\n'
printf '|---|---|---|---|---|---|---|---|---|---|---|\n'
for c in "${cases[@]}"; do
    IFS='|' read -r topo opts delay <<< "$c"
    # shellcheck disable=SC2086
    "$C" compare --topo "$topo" --sizes "$SIZES" -q --csv $opts \
        > "$tmp/out.csv"
    awk -F, -v topo="$topo" -v delay="$delay" '
    function human(b) {
        if (b >= 1073741824) return sprintf("%gG", b / 1073741824)
        if (b >= 1048576) return sprintf("%gM", b / 1048576)
        if (b >= 1024) return sprintf("%gK", b / 1024)
        return b
    }
    NR == 1 {
        for (i = 1; i <= NF; i++) if ($i ~ /_time_us$/ && $i != "nccl_time_us") {
            name = $i; sub(/_time_us$/, "", name); col[name] = i; names[++na] = name
        }
        next
    }
    {
        best = ""; bt = 0
        for (k = 1; k <= na; k++) {
            t = $(col[names[k]])
            if (t != "" && (best == "" || t + 0 < bt)) { best = names[k]; bt = t + 0 }
        }
        nt = $3 + 0
        sp = (bt > 0 && nt > 0) ? sprintf("%.2fx", nt / bt) : "-"
        s1 = ("stragglar" in col) ? sprintf("%.2fx", nt / $(col["stragglar"])) : "-"
        s2 = ("multitree" in col) ? sprintf("%.2fx", nt / $(col["multitree"])) : "-"
        s3 = ("milp" in col) ? sprintf("%.2fx", nt / $(col["milp"])) : "-"
        printf "| %s | %s | %s | %s | %.1f | %s | %.1f | %s | %s | %s | %s |\n",
            topo, human($1), delay, $5, nt, best, bt, sp, s1, s2, s3
    }' "$tmp/out.csv"
done
