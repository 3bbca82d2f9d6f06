#!/usr/bin/env bash
# gpu-check.sh - everything GPU in one command, on a machine with one GPU:
#
#   1. build everything (libraries, CLI, unit tests, GPU programs);
#   2. the unit tests' GPU file (test_gpu_nodevice: smoke run on a device);
#   3. the cuda transport's correctness tests, virtual ranks on device 0
#      (tests/gpu/test_cuda_xport.c: kernels byte-for-byte against the CPU,
#      every fixture and algorithm plan x collective x dtype x op, counts
#      1, 7, 1000 and 1000003, wrong elements counted; each plan again with
#      issue windows 2, 4, 8, byte for byte against window 1);
#   4. the nccl transport with one rank (ncclCommInitAll on one device);
#   5. the reduction kernel's bandwidth next to cudaMemcpy D2D (target:
#      reduce >= 85% of copy, bytes read + written);
#   6. Python: `import ccs, ccs.torch` (also without a GPU, where
#      Comm.from_torch must fail with "no CUDA device"); with a GPU and a
#      CUDA build of PyTorch, Comm.from_torch on one rank
#      (tests/gpu/torch_gpu.py), and with 2+ GPUs a 2-process DDP run
#      under torchrun, NCCL process group, the ccs hook with ring and
#      StragglAR plans (also with a late rank) vs PyTorch's allreduce,
#      every step's loss and parameters compared (tests/python/ddp_train.py
#      --cuda).  Debian's python3-torch is CPU-only: point PYTHON at an
#      interpreter with a CUDA PyTorch, or these parts report "not run".
#   7. MSCCL (docs/msccl.md): a ring allreduce for the machine's GPUs is
#      exported as MSCCL XML and nccl-tests' all_reduce_perf runs against
#      msccl-executor-nccl with it (NCCL_MSCCL_ENABLE=1) and without it
#      (=0), results checked (-c 1); needs MSCCL_EXECUTOR_LIB (the directory
#      of msccl-executor-nccl's libnccl.so), NCCL_TESTS_DIR (nccl-tests'
#      build/) and 2+ GPUs, and says which is missing otherwise.
#
# Prints "gpu-check: N passed, N failed" last and exits non-zero on any
# failure.  Without a GPU it still builds (step 1), then stops with a clear
# message and exit status 2.
#
#   bash scripts/gpu-check.sh            (from the repository root)
#   BUILD=dir JOBS=n GPU_QUICK=1 bash scripts/gpu-check.sh
#     BUILD      build directory (default: build)
#     JOBS       make -j (default: number of CPUs)
#     GPU_QUICK  1: skip the 1000003-element sweep of the transport tests
#     DEPS       1: run scripts/install-deps.sh first (needs apt access)
#     PYTHON     interpreter for step 6 (default /usr/bin/python3)
set -u
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 2)}
passed=0
failed=0

say() { printf 'gpu-check: %s\n' "$*"; }

finish() {
    echo "gpu-check: $passed passed, $failed failed"
    if [ "$failed" -ne 0 ]; then exit 1; fi
    exit 0
}

# Add up the harness's "<prog>: N passed, N failed" line of one program.
run_prog() {
    local name=$1; shift
    local out rc line p f
    say "running $name: $*"
    out=$("$@" 2>&1)
    rc=$?
    printf '%s\n' "$out" | sed 's/^/    /'
    line=$(printf '%s\n' "$out" | grep -E '[0-9]+ passed, [0-9]+ failed' | tail -n 1)
    p=$(printf '%s' "$line" | sed -nE 's/.* ([0-9]+) passed.*/\1/p')
    f=$(printf '%s' "$line" | sed -nE 's/.* ([0-9]+) failed.*/\1/p')
    if [ -z "$p" ]; then p=0; f=1; fi
    if [ $rc -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi
    passed=$((passed + p))
    failed=$((failed + f))
    say "$name: $p passed, $f failed (exit $rc)"
}

if [ "${DEPS:-0}" = 1 ]; then
    bash scripts/install-deps.sh || { say "install-deps failed"; failed=$((failed + 1)); finish; }
fi

NVCC=${CUDA_HOME:-/usr/local/cuda}/bin/nvcc
if [ ! -x "$NVCC" ]; then
    say "no CUDA toolkit ($NVCC not found): cannot build the GPU parts"
    failed=$((failed + 1))
    finish
fi

# ---- 1. build ----
say "building in $BUILD with -j$JOBS"
if make BUILD="$BUILD" -j"$JOBS" all unit-tests gpu-progs; then
    passed=$((passed + 1))
    say "build ok"
else
    failed=$((failed + 1))
    say "build FAILED"
    finish
fi

# ---- 6a. the Python package imports; without a GPU, a clear refusal ----
PYTHON=${PYTHON:-/usr/bin/python3}
pyrun() {
    CCS_LIBRARY="$PWD/$BUILD/lib/libccs.so" PYTHONPATH="$PWD/python" \
        "$PYTHON" "$@"
}
if pyrun -c 'import ccs, ccs.torch; print("ccs", ccs.__version__, "libccs", ccs.library_version())'; then
    passed=$((passed + 1))
    say "python: import ccs, ccs.torch ok"
else
    failed=$((failed + 1))
    say "python: import FAILED ($PYTHON)"
fi
gpu2=$(mktemp -d)
"$BUILD"/bin/ccsynth synth --algo ring --topo switch:2 -o "$gpu2/ring2.ccs" >/dev/null
"$BUILD"/bin/ccsynth synth --algo stragglar --topo switch:2 --straggler 1 \
    -o "$gpu2/strag2.ccs" >/dev/null 2>&1
pyout=$(pyrun tests/gpu/torch_gpu.py "$gpu2/ring2.ccs" 2>&1)
pyrc=$?
printf '%s\n' "$pyout" | sed 's/^/    /'

# ---- is there a GPU? ----
probe=$("$BUILD"/gpu/test_cuda_xport --probe 2>&1)
if [ $? -ne 0 ]; then
    say "no usable GPU on this machine: $probe"
    if [ $pyrc -eq 3 ]; then
        passed=$((passed + 1))
        say "python: Comm.from_torch refuses cleanly without a GPU"
    else
        failed=$((failed + 1))
        say "python: Comm.from_torch without a GPU: exit $pyrc, expected 3"
    fi
    say "the build passed; the GPU checks need a machine with a CUDA device"
    rm -rf "$gpu2"
    echo "gpu-check: $passed passed, $failed failed (GPU checks not run)"
    exit 2
fi
say "$probe"
command -v nvidia-smi >/dev/null 2>&1 && \
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | sed 's/^/    /'

# ---- 2-5 ----
export CCS_TIMEOUT_S=${CCS_TIMEOUT_S:-120}
run_prog test_gpu_nodevice "$BUILD"/tests/test_gpu_nodevice
if [ "${GPU_QUICK:-0}" = 1 ]; then
    run_prog test_cuda_xport "$BUILD"/gpu/test_cuda_xport --quick
else
    run_prog test_cuda_xport "$BUILD"/gpu/test_cuda_xport
fi
run_prog test_nccl_smoke "$BUILD"/gpu/test_nccl_smoke
run_prog bench_reduce "$BUILD"/gpu/bench_reduce 256

# ---- 6b. Python on the NCCL transport ----
ngpu=$(pyrun -c 'import torch; print(torch.cuda.device_count() if torch.cuda.is_available() else 0)' 2>/dev/null || echo 0)
if [ "$ngpu" -eq 0 ]; then
    say "python GPU checks NOT RUN: $PYTHON's PyTorch sees no CUDA device" \
        "(Debian's python3-torch is CPU-only; set PYTHON to an interpreter" \
        "with a CUDA build of PyTorch)"
else
    if [ $pyrc -eq 0 ]; then
        passed=$((passed + 1))
        say "python: Comm.from_torch on one GPU ok"
    else
        failed=$((failed + 1))
        say "python: tests/gpu/torch_gpu.py FAILED (exit $pyrc)"
    fi
    if [ "$ngpu" -ge 2 ]; then
        say "python: 2-process DDP with the ccs hook on NCCL (torchrun)"
        if pyrun -m torch.distributed.run --standalone --nproc_per_node 2 \
            tests/python/ddp_train.py --cuda 0 20 ring="$gpu2/ring2.ccs" \
            stragglar="$gpu2/strag2.ccs" --late late="$gpu2/strag2.ccs" \
            2>&1 | sed 's/^/    /'; [ "${PIPESTATUS[0]}" -eq 0 ]; then
            passed=$((passed + 1))
            say "python: DDP with the hook matches PyTorch's allreduce"
        else
            failed=$((failed + 1))
            say "python: DDP with the hook FAILED"
        fi
    else
        say "python: 2-process DDP NOT RUN: one GPU (NCCL needs a GPU per" \
            "rank; plans need 2+ ranks)"
    fi
fi
rm -rf "$gpu2"

# ---- 7. MSCCL ----
msccl_check() {
    local ngpu lib=${MSCCL_EXECUTOR_LIB:-} tests=${NCCL_TESTS_DIR:-}
    local dir="$BUILD/msccl-algos" out rc
    ngpu=$(nvidia-smi -L 2>/dev/null | wc -l)
    if [ -z "$lib" ] || [ ! -e "$lib/libnccl.so" ]; then
        say "msccl: skipped: msccl-executor-nccl not found (set MSCCL_EXECUTOR_LIB to the directory of its libnccl.so)"
        return
    fi
    if [ -z "$tests" ] || [ ! -x "$tests/all_reduce_perf" ]; then
        say "msccl: skipped: nccl-tests not found (set NCCL_TESTS_DIR to its build/ with all_reduce_perf)"
        return
    fi
    if [ "$ngpu" -lt 2 ]; then
        say "msccl: skipped: $ngpu GPU(s); an MSCCL algorithm needs 2 or more"
        return
    fi
    mkdir -p "$dir" && rm -f "$dir"/*.xml
    if ! "$BUILD"/bin/ccsynth synth -q --algo ring --topo "switch:$ngpu" \
            -o "$dir/ring.ccs" ||
       ! "$BUILD"/bin/ccsynth export --msccl --min-bytes 1K \
            "$dir/ring.ccs" -o "$dir/ring.xml"; then
        say "msccl: export FAILED"; failed=$((failed + 1)); return
    fi
    rm -f "$dir/ring.ccs"
    for en in 1 0; do
        say "msccl: all_reduce_perf -g $ngpu, NCCL_MSCCL_ENABLE=$en, MSCCL_ALGO_DIR=$dir"
        out=$(LD_LIBRARY_PATH="$lib:${LD_LIBRARY_PATH:-}" NCCL_MSCCL_ENABLE=$en \
              MSCCL_ALGO_DIR="$dir" NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,ENV \
              timeout 300 "$tests/all_reduce_perf" -b 1K -e 256M -f 4 \
              -g "$ngpu" -c 1 2>&1)
        rc=$?
        printf '%s\n' "$out" | grep -iE 'msccl|#  *[0-9]|^ *[0-9]+ ' | sed 's/^/    /'
        # nccl-tests counts wrong results in "#wrong" columns; any > 0 fails
        if [ $rc -ne 0 ] || printf '%s\n' "$out" |
               awk '/^ *[0-9]+ /{ if (($(NF-4) != 0 && $(NF-4) != "N/A") || ($NF != 0 && $NF != "N/A")) bad=1 } END { exit !bad }'; then
            say "msccl: all_reduce_perf FAILED (exit $rc or wrong results)"
            failed=$((failed + 1))
        else
            passed=$((passed + 1))
        fi
    done
    say "msccl: compare the busbw columns of the two runs: inside the XML's window they differ when MSCCL ran it"
}
msccl_check

finish
