#!/usr/bin/env bash
# Install the Debian packages ccsynth needs, only when they are missing.
# Idempotent: a second run with everything present does nothing and exits 0.
# The CUDA toolkit and NCCL are expected under /usr/local/cuda (not from apt).
set -euo pipefail

# python3: the e2e tests check JSON and the format spec's hex dump with it;
# bc: the MILP benchmark's arithmetic; libxml2-dev: reading MSCCL XML;
# clang and libclang-rt-14-dev (its libFuzzer and sanitizer runtimes, not
# pulled in without recommends): `make fuzz`;
# python3-torch ... python3-setuptools:
# the ccs Python package and its tests (tests/e2e/python.sh), for Debian's
# /usr/bin/python3 (a python3 earlier on PATH, e.g. pyenv's, does not see
# them): PyTorch (CPU), numpy, pytest, mpi4py, and venv + pip + setuptools
# to `pip install ./python` without reaching PyPI.
pkgs=(build-essential pkg-config libglpk-dev glpk-utils libigraph-dev libyaml-dev
      libxml2-dev
      libopenmpi-dev openmpi-bin graphviz gnuplot-nox python3 bc
      clang libclang-rt-14-dev
      python3-torch python3-numpy python3-pytest python3-mpi4py python3-venv
      python3-pip python3-setuptools)

missing=()
for p in "${pkgs[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing+=("$p")
    fi
done

if [ ${#missing[@]} -eq 0 ]; then
    exit 0
fi

echo "install-deps: installing ${missing[*]}" >&2
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    SUDO="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: done" >&2
