"""The ccs binding on the threads transport (4 ranks as threads of this
process): every collective, every dtype libccs has, numpy and torch, in
place and out of place; plan sets picked by size; StragglAR with a
straggler per call; and the bad inputs, each a ccs.Error with its status
name and message, none hanging."""
import json
import shutil
import threading

import numpy as np
import pytest

import ccs

torch = pytest.importorskip("torch")

R = 4


def on_threads(comms, fn):
    """fn(rank, comm) on one thread per rank; re-raise the first error."""
    errs = [None] * len(comms)

    def body(r):
        try:
            fn(r, comms[r])
        except BaseException as e:      # noqa: B902 - reported below
            errs[r] = e
    th = [threading.Thread(target=body, args=(r,)) for r in range(len(comms))]
    for t in th:
        t.start()
    for t in th:
        t.join(60)
        assert not t.is_alive(), "a rank hangs"
    for e in errs:
        if e is not None:
            raise e


@pytest.fixture(scope="module")
def comms():
    cs = ccs.Comm.threads(R)
    yield cs
    for c in cs:
        c.close()


def inputs(r, n, dtype, lib):
    # small integers: every sum is exact in every dtype, also uint8
    v = np.array([(r + 1 + i % 5) for i in range(n)], dtype=np.float64)
    if lib == "np":
        return v.astype(dtype)
    return torch.tensor(v, dtype=getattr(torch, dtype))


def expect_sum(n):
    return np.array([sum(r + 1 + i % 5 for r in range(R)) for i in range(n)],
                    dtype=np.float64)


def as_f64(x):
    if isinstance(x, np.ndarray):
        return x.astype(np.float64)
    return x.to(torch.float64).numpy()


def test_plan_and_planset_info(plans):
    p = ccs.Plan.load(plans["ring"])
    assert (p.coll, p.nranks, p.algo, p.straggler) == ("allreduce", 4,
                                                        "ring", -1)
    assert "ring allreduce, 4 ranks" in repr(p)
    s = ccs.Plan.load(plans["stragglar"])
    assert s.straggler == 3 and s.nphases == 2
    ps = ccs.PlanSet.load(plans["tuned"])
    assert ps.coll == "allreduce" and ps.nranks == 4
    assert len(ps.plans) >= 2 and ps.ranges[0][0] == 0
    assert ps.ranges[-1][1] is None
    assert ps.pick(1024).algo == "allpairs"
    assert ps.pick(64 * 1024).algo == "multitree"
    assert ps.pick(0) is ps.plans[ps.ranges[0][2]]
    assert ps.pick(10 ** 15) is ps.plans[ps.ranges[-1][2]]
    one = ccs.PlanSet.load(plans["ring"])
    assert len(one.plans) == 1 and one.ranges == [(0, None, 0)]


@pytest.mark.parametrize("lib,dtype", [
    ("np", "float32"), ("np", "float64"), ("np", "float16"),
    ("np", "int32"), ("np", "int64"), ("np", "uint8"),
    ("torch", "float32"), ("torch", "float64"), ("torch", "float16"),
    ("torch", "bfloat16"), ("torch", "int32"), ("torch", "int64"),
    ("torch", "uint8")])
def test_allreduce_every_dtype(plans, comms, lib, dtype):
    p = ccs.Plan.load(plans["ring"])
    n = 37
    ins = [inputs(r, n, dtype, lib) for r in range(R)]
    outs = [None] * R
    inplace = [inputs(r, n, dtype, lib) for r in range(R)]

    def f(r, c):
        outs[r] = ccs.allreduce(p, c, ins[r], out=ins[r] * 0)  # out of place
        ret = ccs.allreduce(p, c, inplace[r])                  # in place
        assert ret is inplace[r]
    on_threads(comms, f)
    for r in range(R):
        np.testing.assert_array_equal(as_f64(outs[r]), expect_sum(n))
        np.testing.assert_array_equal(as_f64(inplace[r]), expect_sum(n))
        np.testing.assert_array_equal(as_f64(ins[r]),
                                      as_f64(inputs(r, n, dtype, lib)))


@pytest.mark.parametrize("op,want", [
    ("sum", lambda v: v.sum(0)), ("max", lambda v: v.max(0)),
    ("min", lambda v: v.min(0)), ("prod", lambda v: v.prod(0)),
    ("avg", lambda v: v.sum(0) / R)])
def test_allreduce_ops(plans, comms, op, want):
    p = ccs.Plan.load(plans["ring"])
    xs = [np.arange(11, dtype=np.float64) % 3 + r + 1 for r in range(R)]
    ref = want(np.stack(xs))
    on_threads(comms, lambda r, c: ccs.allreduce(p, c, xs[r], op=op))
    for r in range(R):
        np.testing.assert_allclose(xs[r], ref, rtol=1e-12)


def test_other_collectives(plans, comms):
    n = 6
    rs, ag = ccs.Plan.load(plans["rs"]), ccs.Plan.load(plans["ag"])
    red, bc = ccs.Plan.load(plans["reduce"]), ccs.Plan.load(plans["bcast"])
    a2a = ccs.Plan.load(plans["a2a"])
    res = {}

    def f(r, c):
        full = np.arange(R * n, dtype=np.float32) + r
        res[("rs", r)] = ccs.reducescatter(rs, c, full)
        res[("ag", r)] = ccs.allgather(ag, c, np.full(n, r, np.float32))
        x = np.full(n, r + 1.0, np.float32)
        ccs.reduce(red, c, x)
        res[("red", r)] = x
        y = np.full(n, 10.0 * r, np.float32)
        ccs.broadcast(bc, c, y)
        res[("bc", r)] = y
        z = np.repeat(np.arange(R, dtype=np.int64) + 100 * r, n)
        res[("a2a", r)] = ccs.alltoall(a2a, c, z)
        res[("a2a_in", r)] = z
    on_threads(comms, f)
    total = sum(np.arange(R * n, dtype=np.float64) + r for r in range(R))
    for r in range(R):
        np.testing.assert_array_equal(res[("rs", r)],
                                      total[r * n:(r + 1) * n])
        np.testing.assert_array_equal(res[("ag", r)],
                                      np.repeat(np.arange(R), n))
        np.testing.assert_array_equal(res[("bc", r)], np.full(n, 20.0))
        np.testing.assert_array_equal(res[("a2a", r)],
                                      np.repeat(np.arange(R) * 100 + r, n))
    np.testing.assert_array_equal(res[("red", 1)], np.full(n, 10.0))


def test_planset_picks_per_call(plans, comms):
    ps = ccs.PlanSet.load(plans["tuned"])
    for n in (3, 1000, 5000, 100000):     # 12 B .. 400 KB of float32
        xs = [torch.full((n,), float(r + 1)) for r in range(R)]
        on_threads(comms, lambda r, c: ccs.allreduce(ps, c, xs[r]))
        for r in range(R):
            assert torch.equal(xs[r], torch.full((n,), 10.0))


def test_stragglar_straggler_per_call(plans, comms):
    p = ccs.Plan.load(plans["stragglar"])
    for s in range(R):
        xs = [np.arange(50, dtype=np.float32) + r for r in range(R)]
        on_threads(comms, lambda r, c: ccs.allreduce(p, c, xs[r],
                                                     straggler=s))
        for r in range(R):
            np.testing.assert_array_equal(xs[r], 4 * np.arange(50) + 6)


def test_straggler_auto_through_the_ddp_hook(plans, comms):
    import ccs.torch as ct
    p, ring = ccs.Plan.load(plans["stragglar"]), ccs.Plan.load(plans["ring"])
    st = [ct.HookState(comms[r], p, straggler="auto", plain=ring,
                       average=False) for r in range(R)]

    class Bucket:
        def __init__(self, t):
            self.t = t

        def buffer(self):
            return self.t
    for _ in range(20):
        xs = [torch.arange(50, dtype=torch.float32) + r for r in range(R)]
        on_threads(comms, lambda r, c: ct.allreduce_hook(st[r],
                                                         Bucket(xs[r])))
        for r in range(R):
            assert torch.equal(xs[r], 4 * torch.arange(50) + 6)
    raises("CCS_ERR_INVALID", "want None, a rank, a callable or 'auto'",
           ct.HookState, comms[0], p, straggler="late")
    raises("CCS_ERR_MISMATCH", "needs a plan with a straggler role",
           ccs.allreduce, ring, comms[0], np.zeros(8, np.float32),
           straggler="auto")


def raises(status, text, fn, *a, **kw):
    with pytest.raises(ccs.Error) as ei:
        fn(*a, **kw)
    assert ei.value.name == status, str(ei.value)
    assert text in ei.value.message, ei.value.message
    return ei.value


def test_bad_calls(plans, comms):
    p = ccs.Plan.load(plans["ring"])
    c = comms[0]
    x = np.zeros(8, np.float32)
    raises("CCS_ERR_INVALID", "not contiguous", ccs.allreduce, p, c,
           np.zeros(16, np.float32)[::2])
    raises("CCS_ERR_INVALID", "not contiguous", ccs.allreduce, p, c,
           torch.zeros(4, 4).t())
    raises("CCS_ERR_INVALID", "dtype int16 is not one libccs has",
           ccs.allreduce, p, c, np.zeros(4, np.int16))
    raises("CCS_ERR_INVALID", "dtype complex64", ccs.allreduce, p, c,
           torch.zeros(4, dtype=torch.complex64))
    raises("CCS_ERR_INVALID", "dtype bool", ccs.allreduce, p, c,
           torch.zeros(4, dtype=torch.bool))
    raises("CCS_ERR_INVALID", "unknown op 'mean'", ccs.allreduce, p, c, x,
           op="mean")
    raises("CCS_ERR_INVALID", "no communicator", ccs.allreduce, p, None, x)
    raises("CCS_ERR_INVALID", "neither a numpy array", ccs.allreduce, p, c,
           [1.0, 2.0])
    raises("CCS_ERR_INVALID", "output float64", ccs.allreduce, p, c, x,
           out=np.zeros(8))
    raises("CCS_ERR_INVALID", "output has 7 elements", ccs.allreduce, p, c,
           x, out=np.zeros(7, np.float32))
    ro = np.zeros(8, np.float32)
    ro.flags.writeable = False
    raises("CCS_ERR_INVALID", "read-only", ccs.allreduce, p, c, ro)
    raises("CCS_ERR_INVALID", "plans must be", ccs.allreduce, "ring.ccs", c,
           x)
    # plan for another rank count than the communicator: refused by the
    # library before any data moves (so a lone rank cannot hang)
    e = raises("CCS_ERR_MISMATCH", "is for 2 ranks, the communicator has 4",
               ccs.allreduce, ccs.Plan.load(plans["ring2"]), c, x)
    assert e.status == -11 and str(e).startswith("CCS_ERR_MISMATCH: ")
    raises("CCS_ERR_MISMATCH", "is for 2 ranks", ccs.allreduce,
           ccs.PlanSet.load(plans["ring2"]), c, x)
    raises("CCS_ERR_MISMATCH", "no straggler role", ccs.allreduce, p, c, x,
           straggler=1)
    raises("CCS_ERR_INVALID", "straggler 9 out of range", ccs.allreduce,
           ccs.Plan.load(plans["stragglar"]), c, x, straggler=9)
    raises("CCS_ERR_MISMATCH", "plan is for reducescatter, called as "
           "allreduce", ccs.allreduce, ccs.Plan.load(plans["rs"]), c, x)
    raises("CCS_ERR_MISMATCH", "tuned for topology", ccs.allreduce,
           ccs.PlanSet.load(plans["tuned"]), c, x, topo_fingerprint=1)
    raises("CCS_ERR_INVALID", "not a multiple of 4", ccs.reducescatter,
           ccs.Plan.load(plans["rs"]), c, np.zeros(7, np.float32))
    closed = ccs.Comm.threads(1)[0]
    closed.close()
    raises("CCS_ERR_INVALID", "communicator is closed", ccs.allreduce, p,
           closed, x)
    # CUDA-less buffers on a CPU transport are fine; the reverse is
    # checked in the GPU run (scripts/gpu-check.sh).


def test_bad_plan_sets(plans, tmp_path):
    raises("CCS_ERR_IO", "no tuning.json", ccs.PlanSet.load, str(tmp_path))
    raises("CCS_ERR_IO", "No such file", ccs.Plan.load,
           str(tmp_path / "nothere.ccs"))
    bad = tmp_path / "bad.ccs"
    bad.write_bytes(b"CCSYNTH\0" + b"\0" * 200)
    raises("CCS_ERR_VERSION", "", ccs.Plan.load, str(bad))
    # a set whose plans disagree on the rank count
    d = tmp_path / "mixed"
    shutil.copytree(plans["tuned"], d)
    idx = json.loads((d / "tuning.json").read_text())
    shutil.copy(plans["ring2"], d / "two.ccs")
    idx["ranges"][-1]["file"] = "two.ccs"
    (d / "tuning.json").write_text(json.dumps(idx))
    raises("CCS_ERR_MISMATCH", "allreduce on 2 ranks, but", ccs.PlanSet.load,
           str(d))
    idx["ranges"] = []
    (d / "tuning.json").write_text(json.dumps(idx))
    raises("CCS_ERR_FORMAT", "no plans", ccs.PlanSet.load, str(d))
    shutil.copy(plans["ag"], d / "ag.ccs")
    raises("CCS_ERR_MISMATCH", "plan set is for allgather, called as "
           "allreduce", ccs.allreduce, ccs.PlanSet.load(str(d / "ag.ccs")),
           ccs.Comm.threads(4)[0], np.zeros(4, np.float32))


def test_torch_hooks_refuse_bad_state(plans, comms):
    import ccs.torch as ct
    raises("CCS_ERR_INVALID", "comm must be a ccs.Comm", ct.HookState, None,
           ccs.Plan.load(plans["ring"]))
    raises("CCS_ERR_MISMATCH", "plans are for 2 ranks", ct.HookState,
           comms[0], ccs.Plan.load(plans["ring2"]))
    raises("CCS_ERR_MISMATCH", "DDP needs allreduce", ct.HookState,
           comms[0], ccs.Plan.load(plans["ag"]))


def test_from_torch_needs_process_group_and_gpu(tmp_path):
    import torch.distributed as dist
    if dist.is_initialized():
        pytest.skip("a process group exists already")
    raises("CCS_ERR_INVALID", "call init_process_group first",
           ccs.Comm.from_torch)
    store = dist.FileStore(str(tmp_path / "store"), 1)
    dist.init_process_group("gloo", store=store, rank=0, world_size=1)
    try:
        if torch.cuda.is_available():
            pytest.skip("a GPU is present: scripts/gpu-check.sh covers it")
        raises("CCS_ERR_NO_DEVICE", "no CUDA device", ccs.Comm.from_torch)
    finally:
        dist.destroy_process_group()
