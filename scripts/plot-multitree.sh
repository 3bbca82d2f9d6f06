#!/usr/bin/env bash
# The MultiTree comparison plots of the README: allreduce algbw against
# buffer size, MultiTree against ring and double binary tree, in our
# simulator (per-rank mode), and the tables behind them.
#  - torus:8x8 with the paper's parameters (16 GB/s links, 150 ns latency:
#    the built-in's defaults, repeated here): docs/multitree-torus8x8.svg
#  - fattree:4x4 (full bisection, 50 GB/s per GPU, 2 us per switch, D-mod-k
#    routes): docs/multitree-fattree.svg
#   usage: BUILD=build scripts/plot-multitree.sh [TORUS.svg [FATTREE.svg]]
set -eu
BUILD=${BUILD:-build}
cd "$(dirname "$0")/.."
C=${CCSYNTH:-$BUILD/bin/ccsynth}
TORUS=${1:-docs/multitree-torus8x8.svg}
FAT=${2:-docs/multitree-fattree.svg}
"$C" compare --proto ideal --topo torus:8x8 --alpha 150ns --bw 16GB/s \
    --algos ring,dbtree,multitree --sizes 32K:64M --plot "$TORUS"
"$C" compare --proto ideal --topo fattree:4x4 \
    --algos ring,dbtree,multitree --sizes 32K:1G --plot "$FAT"
