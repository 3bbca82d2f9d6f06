#!/usr/bin/env bash
# The Python package end to end: `pip install` of python/ into a venv that
# sees Debian's python3-torch/numpy/pytest/mpi4py (the pyenv python3 first
# on PATH does not), then pytest tests/python against the installed
# package: the binding on the threads transport, and 4 MPI processes
# training with DDP through the ccs hook vs PyTorch's allreduce.
set -euo pipefail
BUILD=${BUILD:-build}
cd "$(dirname "$0")/../.."
PY=/usr/bin/python3
venv=$BUILD/pyvenv
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

if ! $PY -c 'import torch, numpy, pytest' 2>/dev/null; then
    echo "python.sh: $PY lacks torch/numpy/pytest (make deps installs" \
         "python3-torch python3-numpy python3-pytest)" >&2
    exit 1
fi
[ -x "$venv/bin/python" ] || $PY -m venv --system-site-packages "$venv"
# Build from a copy: an in-tree build leaves build/ and egg-info in python/.
cp -r python "$tmp/python"
rm -f "$tmp/python/ccs/libccs.so"
"$venv/bin/pip" install -q --no-build-isolation --no-deps --force-reinstall \
    "$tmp/python" >/dev/null
# A sanitizer build's libccs.so (make ASAN=1 test) needs the sanitizer
# runtimes loaded before it, CPython not being instrumented; leaks stay the
# C tests' business (CPython and torch keep memory at exit by design).
if [ -n "${CCS_SAN_FLAGS-}" ]; then
    export LD_PRELOAD="$(cc -print-file-name=libasan.so) $(cc -print-file-name=libubsan.so)"
    export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0:fast_unwind_on_malloc=1"
fi
CCS_LIBRARY="$PWD/$BUILD/lib/libccs.so" CCS_TEST_INSTALLED=1 BUILD="$BUILD" \
    "$venv/bin/python" -m pytest -q -p no:cacheprovider tests/python
