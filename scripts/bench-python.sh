#!/usr/bin/env bash
# The Python path's cost (a benchmark, not a test):
#   1. per-call overhead of ccs.allreduce over the C call, two ways:
#      a. in lockstep, as a job sees it: 2 MPI processes, a ring
#         allreduce plan, 4 float32 elements (16 B: the transfer is
#         negligible), per-call times of N calls, median and mean, for
#         C (ccs-perf -t mpi: the library called from C; mean only),
#         ctypes (ccs_run through ctypes with prepared arguments), and
#         ccs.allreduce on numpy / torch / torch with a PlanSet;
#      b. the Python side alone, without the noise of a peer: the
#         wrapper's own work with the library call replaced by a Python
#         stub, plus the ctypes call itself (a 9-argument libccs call that
#         returns at once: ccs_planset_run(NULL, NULL, ...));
#   2. the training test's wall time: tests/python/ddp_train.py under
#      mpirun -np 4 (30 steps, each variant), and the whole Python suite
#      (tests/e2e/python.sh).
# Uses Debian's /usr/bin/python3 (PYTHON to override).  N (default 20000)
# calls per variant.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
PYTHON=${PYTHON:-/usr/bin/python3}
N=${N:-20000}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl=self,vader OMPI_MCA_mpi_yield_when_idle=1
export CCS_LIBRARY=$PWD/$BUILD/lib/libccs.so PYTHONPATH=$PWD/python
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$BUILD/bin/ccsynth" synth --algo ring --topo switch:2 -o "$tmp/ring2.ccs" >/dev/null
"$BUILD/bin/ccsynth" tune --topo switch:2 --sizes 1K:64K --proto ideal -q --emit "$tmp/tuned2" >/dev/null

echo "# 1a. per-call cost in lockstep, 2 MPI processes, ring allreduce of 4 float32, $N calls"
c_us=$(mpirun --oversubscribe -np 2 "$BUILD/bin/ccs-perf" -t mpi -p "$tmp/ring2.ccs" \
        -b 16 -e 16 -n "$N" -w 200 -d float32 -o sum -c 0 |
       grep -vE '^#' | awk 'NF >= 9 {print $6; exit}')
printf '%-22s %10s %10s\n' variant "median us" "mean us"
printf '%-22s %10s %10s\n' "C (ccs-perf)" - "$c_us"

cat > "$tmp/overhead.py" <<'PY'
import ctypes, statistics, sys, time
import numpy as np, torch
import ccs
from ccs import _lib as L

n_calls, ring, tuned = int(sys.argv[1]), sys.argv[2], sys.argv[3]
comm = ccs.Comm.from_mpi()
plan, ps = ccs.Plan.load(ring), ccs.PlanSet.load(tuned)
lib = L.lib()
a = np.ones(4, np.float32)
t = torch.ones(4)
raw = lambda: lib.ccs_run(plan._h, comm._h, a.ctypes.data, a.ctypes.data,
                          4, 0, 0, None)
lib.ccs_run.argtypes = [ctypes.c_void_p] * 4 + [ctypes.c_size_t,
                        ctypes.c_int, ctypes.c_int, ctypes.c_void_p]
variants = [("ctypes ccs_run", raw),
            ("ccs.allreduce numpy", lambda: ccs.allreduce(plan, comm, a)),
            ("ccs.allreduce torch", lambda: ccs.allreduce(plan, comm, t)),
            ("  ... with a PlanSet", lambda: ccs.allreduce(ps, comm, t))]
res = {}
for name, fn in variants:
    for _ in range(200):
        fn()
    ts = []
    for _ in range(n_calls):
        t0 = time.perf_counter_ns()
        fn()
        ts.append(time.perf_counter_ns() - t0)
    res[name] = (statistics.median(ts) / 1e3, statistics.fmean(ts) / 1e3)
if comm.rank == 0:
    for name, (med, mean) in res.items():
        print(f"{name:<22} {med:10.2f} {mean:10.2f}")
    base = res["ctypes ccs_run"][0]
    for name in list(res)[1:]:
        print(f"# {name.strip()}: +{res[name][0] - base:.2f} us median "
              "over ctypes ccs_run")
comm.close()
PY
mpirun --oversubscribe -np 2 "$PYTHON" "$tmp/overhead.py" "$N" \
    "$tmp/ring2.ccs" "$tmp/tuned2"

cat > "$tmp/wrapper.py" <<'PY'
import ctypes, statistics, sys, time
import numpy as np, torch
import ccs
from ccs import _lib as L

n_calls, ring, tuned = int(sys.argv[1]), sys.argv[2], sys.argv[3]
comms = ccs.Comm.threads(2)
plan, ps = ccs.Plan.load(ring), ccs.PlanSet.load(tuned)
real = L.lib()


def med_us(fn):
    for _ in range(200):
        fn()
    ts = []
    for _ in range(n_calls):
        t0 = time.perf_counter_ns()
        fn()
        ts.append(time.perf_counter_ns() - t0)
    return statistics.median(ts) / 1e3


ffi = med_us(lambda: real.ccs_planset_run(None, None, None, None, 4, 0, 0,
                                          None, None))


class Stub:                     # the library, minus the call
    def __getattr__(self, name):
        return getattr(real, name)
    ccs_run_ex = staticmethod(lambda *a: 0)
    ccs_planset_run = staticmethod(lambda *a: 0)


L._lib = Stub()
a, t = np.ones(4, np.float32), torch.ones(4)
rows = [("numpy, Plan", lambda: ccs.allreduce(plan, comms[0], a)),
        ("torch, Plan", lambda: ccs.allreduce(plan, comms[0], t)),
        ("torch, PlanSet", lambda: ccs.allreduce(ps, comms[0], t))]
print(f"ctypes call of a 9-argument libccs function: {ffi:.2f} us (median)")
for name, fn in rows:
    w = med_us(fn)
    print(f"wrapper work, {name:<15} {w:6.2f} us -> overhead over the C call "
          f"{w + ffi:6.2f} us")
L._lib = real
PY
echo
echo "# 1b. the Python side alone (single process, medians of $N calls)"
"$PYTHON" "$tmp/wrapper.py" "$N" "$tmp/ring2.ccs" "$tmp/tuned2"

echo
echo "# 2. training test: mpirun -np 4 tests/python/ddp_train.py, 30 steps"
"$BUILD/bin/ccsynth" synth --algo ring --topo switch:4 -o "$tmp/ring4.ccs" >/dev/null
"$BUILD/bin/ccsynth" synth --algo stragglar --topo switch:4 --straggler 3 \
    -o "$tmp/s4.ccs" >/dev/null 2>&1
"$BUILD/bin/ccsynth" tune --topo ring:4 --sizes 1K:64K --proto ideal -q --emit "$tmp/tuned4" >/dev/null
start=$(date +%s.%N)
mpirun --oversubscribe -np 4 "$PYTHON" tests/python/ddp_train.py 29581 30 \
    ring="$tmp/ring4.ccs" stragglar="$tmp/s4.ccs" tuned="$tmp/tuned4" \
    --late late="$tmp/s4.ccs"
end=$(date +%s.%N)
echo "# mpirun wall time, 5 trainings + start-up: $(echo "$end - $start" | bc) s"
start=$(date +%s.%N)
BUILD=$BUILD bash tests/e2e/python.sh | tail -n 1
end=$(date +%s.%N)
echo "# tests/e2e/python.sh (pip install + all Python tests): $(echo "$end - $start" | bc) s"
