#!/usr/bin/env bash
# The MultiTree comparison plot of the README: allreduce algbw against
# buffer size on torus:8x8 (the paper's 16 GB/s links, 150 ns latency: the
# built-in's defaults), MultiTree against ring and double binary tree, in
# our simulator.  Writes docs/multitree-torus8x8.svg and prints the table.
#   usage: BUILD=build scripts/plot-multitree.sh [OUT.svg]
set -eu
BUILD=${BUILD:-build}
C=${CCSYNTH:-$BUILD/bin/ccsynth}
OUT=${1:-docs/multitree-torus8x8.svg}
cd "$(dirname "$0")/.."
"$C" compare --topo torus:8x8 --alpha 150ns --bw 16GB/s \
    --algos ring,dbtree,multitree --sizes 32K:64M --plot "$OUT"
